"""The HTML page of `replctl report --html`: the report document turned into what the templates draw.

The page must open anywhere an operator can attach a file (a ticket, an e-mail, an air-gapped laptop), so it
carries everything inline: CSS, the topology drawn as SVG, and one small script. Nothing is fetched: no CDN, no
web font, no external image. The markup lives in Jinja2 templates beside this module (`templates/`, shipped as
package data) with autoescape on, so every string an operator typed (location names, filters, reasons, hosts,
error messages) is escaped by the template engine and a report can never run script or break its markup; before
that, `printable` writes control characters as escapes, as the CLI's error boundary does. The topology's
coordinates come from `replctl.report.geometry`; this module decides what is drawn (classes, colours, labels).
Pure functions of the document: no clock, no I/O (the service adds `generated_at` and writes the file).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from replctl.report import geometry

if TYPE_CHECKING:
    from jinja2 import Environment, Template

STATE_COLOURS = {
    "active": "#2563eb",
    "pending": "#d97706",
    "blocked": "#dc2626",
    "failed": "#be123c",
    "removed": "#9ca3af",
}
FILTER_COLOUR = "#7c3aed"
_NAME_MAX = 22  # longer names are cut with an ellipsis in the drawing (tables and tooltips show them whole)
_FILTER_MAX = 28


def printable(value: object) -> str:
    """`value` as one line of text that always encodes as UTF-8 (the templates escape it for HTML).

    Control characters (line breaks, terminal escapes) and lone surrogates (bytes that were not UTF-8) are written
    as Python escapes, as the CLI's error boundary does, so what the page shows is what the terminal shows.
    """
    return "".join(
        ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in str(value)
    )


def _finalize(value: object) -> object:
    """Every `{{ value }}` of the templates passes here before autoescape: markup the templates made themselves
    (a macro's output) stays as it is, anything else becomes printable text."""
    from markupsafe import Markup

    return value if isinstance(value, Markup) else printable(value)


@cache
def _environment() -> Environment:
    # Imported here: only `report --html` pays for Jinja2, not every command that imports the report service.
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(
        loader=PackageLoader("replctl.report", "templates"),
        autoescape=True,  # every template, whatever its name: operator text is never markup
        finalize=_finalize,
        undefined=StrictUndefined,  # a misspelt field fails the render instead of drawing an empty cell
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["coord"] = geometry.coord
    return env


def _template(name: str) -> Template:
    return _environment().get_template(name)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------------------------------------- topology drawing


@dataclass(frozen=True)
class NodeView:
    """One location's box: its name (whole and as drawn), the line under it, its state and its geometry."""

    name: str
    shown: str
    sub: str
    state: str
    box: geometry.Box


@dataclass(frozen=True)
class LabelView:
    """A connection's label: `filter-label` or `ever-filtered-label`, its text and where it goes."""

    kind: str
    text: str
    place: geometry.LabelPlace


@dataclass(frozen=True)
class EdgeView:
    """One connection's arrow: classes, colour and arrowhead by state, its tooltip, line and label."""

    source: str
    target: str
    state: str
    classes: str
    title: str
    colour: str
    marker: str
    dashed: bool
    width: float
    band: bool
    line: geometry.Line
    label: LabelView | None


@dataclass(frozen=True)
class TopologyView:
    """Everything the SVG template draws: the view box, arrowheads, arrows (history first), boxes, labels."""

    view: tuple[float, float, float, float]
    markers: list[tuple[str, str]]
    edges: list[EdgeView]
    nodes: list[NodeView]
    filter_colour: str = FILTER_COLOUR

    @property
    def labels(self) -> list[LabelView]:
        """The labels, drawn last: on top of lines and boxes, each with a white halo (CSS paint-order)."""
        return [edge.label for edge in self.edges if edge.label is not None]


def _node_label(loc: Mapping[str, Any] | None) -> tuple[str, str]:
    """(state, the small line under the name): the role, and the state unless it is active."""
    state = str(loc["state"]) if loc else "unknown"
    role = str(loc["role"]) if loc else "?"
    return state, role if state == "active" else f"{role} · {state}"


def topology_view(
    locations: Sequence[Mapping[str, Any]], connections: Sequence[Mapping[str, Any]]
) -> TopologyView:
    """The topology as the template draws it: locations as boxes on a circle, connections as arrows.

    Removed connections (the history edges, rules.md H2, including those a fail-over superseded) are dashed
    grey; a filtered connection gets a violet band and its filter as a label; one whose filter was cleared keeps
    a "was filtered" label (H3); retired locations are grey with a dashed border; colours give the state.
    """
    names = [str(loc["name"]) for loc in locations]
    # A connection may name a location the list lacks only if the catalog is inconsistent; draw it anyway.
    for conn in connections:
        for end in (str(conn["source"]), str(conn["target"])):
            if end not in names:
                names.append(end)
    by_name = {str(loc["name"]): loc for loc in locations}
    labels = {name: _node_label(by_name.get(name)) for name in names}
    boxes = geometry.place_boxes(
        {name: geometry.node_width(len(_cut(name, _NAME_MAX)), len(labels[name][1])) for name in names}
    )
    nodes = [
        NodeView(name, _cut(name, _NAME_MAX), labels[name][1], labels[name][0], boxes[name]) for name in names
    ]
    keys = {(str(c["source"]), str(c["target"])) for c in connections}
    # History edges first, so current connections are drawn over them.
    ordered = sorted(connections, key=lambda c: (c["state"] != "removed", str(c["source"]), str(c["target"])))
    edges = [_edge(conn, boxes, keys) for conn in ordered]
    extents = [box.extent for box in boxes.values()]
    extents += [edge.label.place.extent for edge in edges if edge.label is not None]
    return TopologyView(geometry.view_box(extents), list(STATE_COLOURS.items()), edges, nodes)


def _edge(conn: Mapping[str, Any], boxes: Mapping[str, geometry.Box], keys: set[tuple[str, str]]) -> EdgeView:
    """The arrow of one connection, and its label (filter, or "was filtered") if it has one."""
    source, target = str(conn["source"]), str(conn["target"])
    state = str(conn["state"])
    line = geometry.arrow(boxes[source], boxes[target], paired=(target, source) in keys)
    filt = conn.get("filter")
    classes = ["edge", state]
    if filt:
        classes.append("filtered")
    elif conn.get("ever_filtered"):
        classes.append("ever-filtered")
    title = f"{source} → {target}: {state}"
    if filt:
        title += f"; filter: {filt}"
    if conn.get("reason"):
        title += f"; {conn['reason']}"
    label = None
    if filt:
        text = "filter: " + _cut(str(filt), _FILTER_MAX)
        label = LabelView("filter-label", text, geometry.label_place(line, len(text)))
    elif conn.get("ever_filtered"):
        label = LabelView(
            "ever-filtered-label", "was filtered", geometry.label_place(line, len("was filtered"))
        )
    return EdgeView(
        source=source,
        target=target,
        state=state,
        classes=" ".join(classes),
        title=title,
        colour=STATE_COLOURS.get(state, "#374151"),
        marker=state if state in STATE_COLOURS else "active",
        dashed=state == "removed",
        width=2.2 if state != "removed" else 1.6,
        band=bool(filt),
        line=line,
        label=label,
    )


def topology_svg(locations: Sequence[Mapping[str, Any]], connections: Sequence[Mapping[str, Any]]) -> str:
    """The topology as inline SVG (see `topology_view`)."""
    return str(_template("topology.svg.j2").module.topology(topology_view(locations, connections)))  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------------------------------ heat map


def heat_colour(behind: int, column_max: int) -> str:
    """Background of a heat-map cell: green when the row holds the column's max, to red as it falls behind.

    The share behind (`behind / column_max`) picks the hue from amber (a little) to red (everything).
    """
    if behind <= 0 or column_max <= 0:
        return "hsl(142, 60%, 88%)"
    share = min(1.0, behind / column_max)
    hue = 45 - 45 * share
    lightness = 84 - 18 * share
    return f"hsl({hue:.0f}, 90%, {lightness:.0f}%)"


@dataclass(frozen=True)
class CellView:
    """One heat-map cell: what the location has seen of the origin, what it deleted, how far it is behind."""

    row: str
    origin: str
    seen: int
    deleted: int
    behind: int
    notes: list[str]
    tip: str
    colour: str


def heatmap_view(matrix: Mapping[str, Any]) -> dict[str, Any]:
    """The version-vector matrix (status `matrix`): origins, and per location its cells.

    Each cell shows the max seen of that origin and, when some is deleted there, the deleted prefix (the log's
    own copy of the origin's events starts after it); the colour says how far the row is behind the column's max.
    """
    origins = [str(o) for o in matrix.get("origins", [])]
    rows: Mapping[str, Mapping[str, Mapping[str, int]]] = matrix.get("rows", {})
    column_max = {o: max((int(row[o]["max"]) for row in rows.values()), default=0) for o in origins}
    table = []
    for name, row in rows.items():
        cells = []
        for o in origins:
            seen, deleted = int(row[o]["max"]), int(row[o]["deleted"])
            behind = column_max[o] - seen
            notes = ([f"deleted ≤ {deleted}"] if deleted else []) + ([f"{behind} behind"] if behind else [])
            tip = f"{name} has seen {o}'s events up to {seen}"
            tip += f"; deleted up to {deleted}" if deleted else "; none deleted"
            tip += f"; {behind} behind the most advanced location" if behind else ""
            cells.append(
                CellView(name, o, seen, deleted, behind, notes, tip, heat_colour(behind, column_max[o]))
            )
        table.append((name, cells))
    return {"origins": origins, "rows": table, "scale": [heat_colour(b, 4) for b in (0, 1, 2, 3, 4)]}


# -------------------------------------------------------------------------------------------------------- tables


def connection_rows(connections: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Lag per connection: state, progress, lag (events stored at the source past the progress), why it waits,
    and the width of its lag bar. Current connections first; removed ones (history) follow, greyed."""
    ordered = sorted(connections, key=lambda c: c["state"] == "removed")
    most = max((int(c.get("lag") or 0) for c in connections), default=0)
    rows = []
    for c in ordered:
        lag = int(c.get("lag") or 0)
        rows.append(
            {
                "source": c["source"],
                "target": c["target"],
                "state": str(c["state"]),
                "filter": c.get("filter") or "",
                "ever_filtered": bool(c.get("ever_filtered")),
                "history": c.get("history") or "",
                "progress": c["progress"],
                "lag": lag,
                "bar": max(4, round(80 * lag / most)) if lag and most else None,
                "reason": c.get("reason") or "",
            }
        )
    return rows


# What waits behind a connection in each state, and the command that moves it on.
_WAITING = (
    ("failed", "Failed filters", "replctl topology filter SOURCE TARGET --set EXPR"),
    ("blocked", "Blocked recoveries (DR5)", "replctl recover location TARGET (or --accept-loss)"),
    ("pending", "Pending connections (ADD1)", "retried by every replctl replicate"),
)


def pending_view(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Pending deletions and what holds them, waiting connections by state, locations a total loss would hurt
    (BK3) and ROLE2 warnings."""
    from replctl.core.backups import shortfall_text

    connections = doc.get("connections") or []
    waiting = []
    for state, title, hint in _WAITING:
        rows = [
            {"source": c["source"], "target": c["target"], "reason": c.get("reason") or ""}
            for c in connections
            if c["state"] == state
        ]
        if rows:
            waiting.append({"state": state, "title": title, "hint": hint, "rows": rows})
    exposed = [
        {
            "name": loc["name"],
            "state": loc["recoverable"]["state"],
            "shortfall": shortfall_text(loc["recoverable"]["shortfall"]),
        }
        for loc in doc.get("locations") or []
        if (loc.get("recoverable") or {}).get("state") in {"no", "unknown"}
    ]
    return {
        "deletions": [
            {
                "location": p["location"],
                "requested_upto": p["requested_upto"],
                "held_by": ", ".join(b["target"] for b in p["blocked_by"]),
            }
            for p in doc.get("pending_deletions") or []
        ],
        "waiting": waiting,
        "exposed": exposed,
        "warnings": [{"code": w.get("code"), "message": w.get("message")} for w in doc.get("warnings") or []],
    }


def pending_html(doc: Mapping[str, Any]) -> str:
    """The "Pending work" section's content (see `pending_view`)."""
    return str(_template("sections.html.j2").module.pending(pending_view(doc)))  # type: ignore[attr-defined]


def operation_rows(operations: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The most recent operations of the journal, newest first, as the table lists them."""
    return [
        {
            "id": op["id"],
            "short": str(op["id"])[:8],
            "command": op["command"],
            "outcome": op["outcome"],
            "started": str(op.get("started_at") or "")[:19],
            "who": "@".join(str(p) for p in (op.get("actor"), op.get("host")) if p),
            "reason": op.get("reason") or "",
            "error": op.get("error") or "",
        }
        for op in operations
    ]


# ---------------------------------------------------------------------------------------------------------- page


def cards(doc: Mapping[str, Any]) -> list[tuple[str, int, str]]:
    """The counts above the sections: (css class, number, label)."""
    locations = doc.get("locations") or []
    connections = doc.get("connections") or []
    current = [c for c in connections if c["state"] != "removed"]
    retired = sum(1 for loc in locations if loc["state"] == "retired")
    waiting = sum(1 for c in current if c["state"] in ("pending", "blocked", "failed"))
    lag = sum(int(c.get("lag") or 0) for c in current)
    deletions = len(doc.get("pending_deletions") or [])
    return [
        ("", len(locations) - retired, f"locations ({retired} retired)" if retired else "locations"),
        ("", len(current), "connections"),
        ("warn" if waiting else "", waiting, "waiting connections"),
        ("warn" if lag else "", lag, "events behind (lag)"),
        ("warn" if deletions else "", deletions, "pending deletions"),
        ("bad" if doc.get("warnings") else "", len(doc.get("warnings") or []), "warnings"),
    ]


def render_page(doc: Mapping[str, Any]) -> str:
    """The whole report page for a report document: the `status --json` document plus `operations`,
    `generated_at`, `catalog` and `version`.
    """
    return _template("page.html.j2").render(
        meta=[
            f"generated {doc.get('generated_at', '')}",
            f"catalog {doc.get('catalog', '')}",
            f"replctl {doc.get('version', '')}",
        ],
        cards=cards(doc),
        topology=topology_view(doc.get("locations") or [], doc.get("connections") or []),
        state_colours=STATE_COLOURS,
        filter_colour=FILTER_COLOUR,
        heatmap=heatmap_view(doc.get("matrix") or {}),
        connections=connection_rows(doc.get("connections") or []),
        pending=pending_view(doc),
        operations=operation_rows(doc.get("operations") or []),
    )
