"""The HTML page of `replctl report --html`: one self-contained file, computed here from the report document.

The page must open anywhere an operator can attach a file (a ticket, an e-mail, an air-gapped laptop), so it
carries everything inline: CSS, the topology drawn as SVG, and one small script. Nothing is fetched: no CDN, no
web font, no external image. The graph is laid out here with plain trigonometry (locations on a circle, in the
order the catalog lists them) because networkx's layouts need numpy/scipy, and because a layout that depends only
on the names keeps two reports of the same topology comparable side by side.

Every string an operator typed (location names, filters, reasons, hosts, error messages) goes through `_text`
(html-escaped, control characters written as escapes), so a report can never run script or break its markup.
Pure functions of the document: no clock, no I/O (the service adds `generated_at` and writes the file).
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Node boxes: a rounded rectangle around the name and the role (SVG user units, about pixels at 100%).
_NODE_H = 46.0
_NODE_MIN_W = 76.0
_CHAR_W = 7.6  # average advance of the 13px sans-serif name; only sizes the box, so an estimate is enough
_SUB_CHAR_W = 6.0  # the same for the 10.5px role line
_NAME_MAX = 22  # longer names are cut with an ellipsis in the drawing (tables and tooltips show them whole)
_FILTER_MAX = 28
_LABEL_CHAR_W = 6.4  # the 11px bold label
# A→B and B→A run side by side, this far from the centre line, instead of on top of each other.
_PAIR_OFFSET = 7.0
_MARGIN = 70.0

_STATE_COLOURS = {
    "active": "#2563eb",
    "pending": "#d97706",
    "blocked": "#dc2626",
    "failed": "#be123c",
    "removed": "#9ca3af",
}
_FILTER_COLOUR = "#7c3aed"

_CSS = """
:root { --ink: #1f2937; --muted: #6b7280; --line: #e5e7eb; --bg: #f8fafc; --card: #ffffff;
        --accent: #2563eb; --filter: #7c3aed; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
header { background: #0f172a; color: #f8fafc; padding: 18px 32px; }
header h1 { margin: 0 0 4px; font-size: 22px; font-weight: 600; }
header .meta { color: #cbd5e1; font-size: 13px; }
main { max-width: 1320px; margin: 0 auto; padding: 20px 32px 40px; }
section { background: var(--card); border: 1px solid var(--line); border-radius: 10px;
          padding: 16px 20px 20px; margin: 0 0 20px; }
h2 { font-size: 17px; margin: 0 0 4px; }
p.note { color: var(--muted); margin: 0 0 12px; font-size: 13px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 0 0 20px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 10px 16px;
        min-width: 140px; }
.card .n { font-size: 24px; font-weight: 600; }
.card .l { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.card.warn .n { color: #b45309; } .card.bad .n { color: #b91c1c; }
.topology { display: flex; gap: 20px; align-items: flex-start; flex-wrap: wrap; }
.topology svg.graph { flex: 0 1 auto; max-width: 100%; height: auto; border: 1px solid var(--line);
                      border-radius: 8px; background: #fcfcfd; }
.legend { flex: 0 0 250px; font-size: 13px; }
.legend h3 { font-size: 13px; margin: 0 0 6px; text-transform: uppercase; letter-spacing: .04em;
             color: var(--muted); }
.legend ul { list-style: none; margin: 0 0 14px; padding: 0; }
.legend li { display: flex; align-items: center; gap: 8px; margin: 4px 0; }
.legend svg { flex: 0 0 auto; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: #f1f5f9; font-weight: 600; color: #334155; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.removed td { color: var(--muted); }
code { font: 12px/1.3 ui-monospace, "DejaVu Sans Mono", monospace; background: #f3f4f6; padding: 1px 4px;
       border-radius: 4px; }
code.filter { background: #f3e8ff; color: #5b21b6; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 12px; font-weight: 600;
         background: #e5e7eb; color: #374151; }
.badge.active, .badge.succeeded { background: #dbeafe; color: #1e40af; }
.badge.succeeded { background: #dcfce7; color: #166534; }
.badge.pending, .badge.incomplete, .badge.running { background: #fef3c7; color: #92400e; }
.badge.blocked, .badge.failed { background: #fee2e2; color: #991b1b; }
.badge.refused { background: #ffedd5; color: #9a3412; }
.badge.removed, .badge.retired { background: #f3f4f6; color: #6b7280; }
.badge.recovering { background: #ffedd5; color: #9a3412; }
.bar { display: inline-block; height: 8px; border-radius: 4px; background: #f59e0b; vertical-align: middle;
       margin-left: 8px; }
table.heatmap { width: auto; }
table.heatmap thead th { text-align: center; }
#pending table { width: auto; min-width: 60%; }
.scroll { overflow-x: auto; }
table.heatmap td.cell { text-align: center; min-width: 92px; padding: 6px 10px; }
table.heatmap td.cell .max { font-size: 16px; font-weight: 600; }
table.heatmap td.cell .sub { display: block; font-size: 11px; color: #374151; }
table.heatmap th.row { text-align: right; vertical-align: middle; }
.scale { display: flex; align-items: center; gap: 6px; font-size: 12px; color: var(--muted); margin-top: 10px; }
.scale span.sw { width: 28px; height: 14px; border-radius: 3px; border: 1px solid #d1d5db; }
.empty { color: var(--muted); font-style: italic; }
h3.sub { font-size: 14px; margin: 14px 0 6px; }
.err { color: #991b1b; font-size: 12px; }
footer { color: var(--muted); font-size: 12px; text-align: center; padding: 0 0 24px; }
svg.graph text { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
svg .node rect { fill: #ffffff; stroke: #1e3a8a; stroke-width: 1.6; }
svg .node text.name { font-size: 13px; font-weight: 600; fill: #0f172a; }
svg .node text.role { font-size: 10.5px; fill: #64748b; }
svg .node.recovering rect { stroke: #ea580c; stroke-width: 2.4; }
svg .node.retired rect { fill: #e5e7eb; stroke: #9ca3af; stroke-dasharray: 4 3; }
svg .node.retired text.name, svg .node.retired text.role { fill: #9ca3af; }
svg .edge-label { font-size: 11px; paint-order: stroke; stroke: #ffffff; stroke-width: 4px;
                  stroke-linejoin: round; }
svg .filter-label { fill: #6d28d9; font-weight: 600; }
svg .ever-filtered-label { fill: #8b5cf6; font-style: italic; }
"""

# Installed first thing in <body>: any script error afterwards marks the page, so a browser test (or an operator
# looking at the attribute) can tell a page that rendered cleanly from one that did not.
_ERROR_HOOK = (
    '<script>window.onerror = function () { document.body.setAttribute("data-report", "error"); };</script>'
)
# The last element of <body>: reached only if the page parsed to the end; keeps "error" if the hook fired.
_READY = (
    '<script>if (document.body.getAttribute("data-report") !== "error") { '
    'document.body.setAttribute("data-report", "ok"); }</script>'
)


def _text(value: object) -> str:
    """`value` as safe HTML text or attribute content: escaped, one line, always encodable as UTF-8.

    Control characters (line breaks, terminal escapes) and lone surrogates (bytes that were not UTF-8) are written
    as Python escapes, as the CLI's error boundary does, so what the page shows is what the terminal shows.
    """
    raw = str(value)
    shown = "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in raw)
    return html.escape(shown, quote=True)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _num(value: float) -> str:
    """A coordinate with at most one decimal: stable output, small files."""
    return f"{value:.1f}".rstrip("0").rstrip(".")


# ---------------------------------------------------------------------------------------------- topology drawing


@dataclass(frozen=True)
class _Node:
    name: str
    x: float
    y: float
    w: float
    h: float


def layout(names: Sequence[str], spacing: float = 150.0) -> dict[str, tuple[float, float]]:
    """Centres of the locations on a circle around (0, 0), first at the top (two: left and right), clockwise.

    The radius grows with the count so neighbouring centres stay `spacing` apart (the caller passes the widest
    box plus a gap); it never drops below 210, so a small topology still has room for its connections' labels.
    """
    n = len(names)
    if n == 0:
        return {}
    if n == 1:
        return {names[0]: (0.0, 0.0)}
    radius = max(210.0, spacing / (2 * math.sin(math.pi / n)))
    start = math.pi if n == 2 else -math.pi / 2
    return {
        name: (radius * math.cos(start + 2 * math.pi * i / n), radius * math.sin(start + 2 * math.pi * i / n))
        for i, name in enumerate(names)
    }


def _box_exit(node: _Node, dx: float, dy: float) -> float:
    """How far from the centre of `node` a ray with unit direction (dx, dy) leaves its box."""
    limits = []
    if abs(dx) > 1e-9:
        limits.append(node.w / 2 / abs(dx))
    if abs(dy) > 1e-9:
        limits.append(node.h / 2 / abs(dy))
    return min(limits) if limits else 0.0


def _marker(state: str, colour: str) -> str:
    # userSpaceOnUse: the same arrowhead on thin and thick lines.
    return (
        f'<marker id="arrow-{state}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="11" markerHeight="11" '
        f'markerUnits="userSpaceOnUse" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>'
    )


def topology_svg(locations: Sequence[Mapping[str, Any]], connections: Sequence[Mapping[str, Any]]) -> str:
    """The topology as inline SVG: locations as boxes on a circle, connections as arrows.

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
    widths = {name: _node_width(name, by_name.get(name)) for name in names}
    centres = layout(names, spacing=max([150.0, *(w + 60 for w in widths.values())]))
    nodes = {name: _Node(name, *centres[name], widths[name], _NODE_H) for name in names}
    keys = {(str(c["source"]), str(c["target"])) for c in connections}
    # History edges first, so current connections are drawn over them.
    ordered = sorted(connections, key=lambda c: (c["state"] != "removed", str(c["source"]), str(c["target"])))
    drawn = [_edge(conn, nodes, keys) for conn in ordered]
    labels = [label for _, label in drawn if label is not None]

    boxes = [(n.x - n.w / 2, n.y - n.h / 2, n.x + n.w / 2, n.y + n.h / 2) for n in nodes.values()]
    boxes += [label.box for label in labels]
    if boxes:
        min_x = min(b[0] for b in boxes) - _MARGIN
        min_y = min(b[1] for b in boxes) - _MARGIN
        max_x = max(b[2] for b in boxes) + _MARGIN
        max_y = max(b[3] for b in boxes) + _MARGIN
    else:
        min_x, max_x, min_y, max_y = -200.0, 200.0, -60.0, 60.0
    width, height = max_x - min_x, max_y - min_y

    parts = [
        f'<svg class="graph" role="img" '
        f'aria-label="replication topology" viewBox="{_num(min_x)} {_num(min_y)} {_num(width)} {_num(height)}" '
        f'width="{_num(width)}" height="{_num(height)}">',
        "<defs>" + "".join(_marker(s, c) for s, c in _STATE_COLOURS.items()) + "</defs>",
    ]
    if not nodes:
        parts.append('<text x="0" y="0" text-anchor="middle" fill="#6b7280">no locations yet</text>')
    parts += [markup for markup, _ in drawn]
    parts += [_node(nodes[name], by_name.get(name)) for name in names]
    # Labels last: on top of lines and boxes, each with a white halo (CSS paint-order) to stay readable.
    parts += ['<g class="labels">', *(label.markup for label in labels), "</g>"]
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True)
class _Label:
    markup: str
    box: tuple[float, float, float, float]  # estimated extent, so the view box never cuts a label off


def _edge(
    conn: Mapping[str, Any], nodes: Mapping[str, _Node], keys: set[tuple[str, str]]
) -> tuple[str, _Label | None]:
    """The arrow of one connection, and its label (filter, or "was filtered") if it has one."""
    source, target = str(conn["source"]), str(conn["target"])
    state = str(conn["state"])
    a, b = nodes[source], nodes[target]
    length = math.hypot(b.x - a.x, b.y - a.y) or 1.0
    dx, dy = (b.x - a.x) / length, (b.y - a.y) / length
    # The normal on the right of the direction of travel: A→B and B→A end up on opposite sides.
    nx, ny = -dy, dx
    offset = _PAIR_OFFSET if (target, source) in keys else 0.0
    start = _box_exit(a, dx, dy) + 2
    end = length - _box_exit(b, dx, dy) - 3
    x1, y1 = a.x + dx * start + nx * offset, a.y + dy * start + ny * offset
    x2, y2 = a.x + dx * end + nx * offset, a.y + dy * end + ny * offset
    colour = _STATE_COLOURS.get(state, "#374151")
    marker = state if state in _STATE_COLOURS else "active"
    filt = conn.get("filter")
    classes = ["edge", state]
    if filt:
        classes.append("filtered")
    elif conn.get("ever_filtered"):
        classes.append("ever-filtered")
    dash = ' stroke-dasharray="7 5"' if state == "removed" else ""
    coords = f'x1="{_num(x1)}" y1="{_num(y1)}" x2="{_num(x2)}" y2="{_num(y2)}"'
    title = f"{source} → {target}: {state}"
    if filt:
        title += f"; filter: {filt}"
    if conn.get("reason"):
        title += f"; {conn['reason']}"
    ends = f'data-source="{_text(source)}" data-target="{_text(target)}"'
    out = [f'<g class="{" ".join(classes)}" {ends} data-state="{_text(state)}"><title>{_text(title)}</title>']
    if filt:
        # A wide translucent band under the line: visible at a glance whatever the state colour is.
        out.append(
            f'<line class="filter-band" {coords} stroke="{_FILTER_COLOUR}" stroke-opacity="0.28" '
            f'stroke-width="9" stroke-linecap="round"{dash}/>'
        )
    out.append(
        f'<line class="edge-line" {coords} stroke="{colour}" stroke-width="{2.2 if state != "removed" else 1.6}"'
        f'{dash} marker-end="url(#arrow-{marker})"/>'
    )
    out.append("</g>")
    if filt:
        kind, text = "filter-label", "filter: " + _cut(str(filt), _FILTER_MAX)
    elif conn.get("ever_filtered"):
        kind, text = "ever-filtered-label", "was filtered"
    else:
        return "".join(out), None
    # Beside the middle of the line, on its own side, so the two directions of a pair do not collide; the text
    # grows away from the line.
    mx, my = (x1 + x2) / 2 + nx * 16, (y1 + y2) / 2 + ny * 16
    anchor = "middle" if abs(nx) < 0.35 else ("start" if nx > 0 else "end")
    span = _LABEL_CHAR_W * len(text)
    left = {"middle": mx - span / 2, "start": mx, "end": mx - span}[anchor]
    markup = (
        f'<text class="edge-label {kind}" {ends} x="{_num(mx)}" y="{_num(my + 4)}" '
        f'text-anchor="{anchor}">{_text(text)}</text>'
    )
    return "".join(out), _Label(markup, (left, my - 8, left + span, my + 8))


def _node_label(loc: Mapping[str, Any] | None) -> tuple[str, str]:
    """(state, the small line under the name): the role, and the state unless it is active."""
    state = str(loc["state"]) if loc else "unknown"
    role = str(loc["role"]) if loc else "?"
    return state, role if state == "active" else f"{role} · {state}"


def _node_width(name: str, loc: Mapping[str, Any] | None) -> float:
    sub = _node_label(loc)[1]
    return max(_NODE_MIN_W, _CHAR_W * len(_cut(name, _NAME_MAX)) + 26, _SUB_CHAR_W * len(sub) + 20)


def _node(node: _Node, loc: Mapping[str, Any] | None) -> str:
    state, sub = _node_label(loc)
    classes = ["node", state]
    x, y = node.x - node.w / 2, node.y - node.h / 2
    return (
        f'<g class="{" ".join(classes)}" data-location="{_text(node.name)}" data-state="{_text(state)}">'
        f"<title>{_text(node.name)} ({_text(sub)})</title>"
        f'<rect x="{_num(x)}" y="{_num(y)}" width="{_num(node.w)}" height="{_num(node.h)}" rx="10"/>'
        f'<text class="name" x="{_num(node.x)}" y="{_num(node.y - 2)}" text-anchor="middle">'
        f"{_text(_cut(node.name, _NAME_MAX))}</text>"
        f'<text class="role" x="{_num(node.x)}" y="{_num(node.y + 13)}" text-anchor="middle">{_text(sub)}</text>'
        "</g>"
    )


def _legend() -> str:
    def line(colour: str, *, dash: bool = False, band: bool = False, state: str = "active") -> str:
        dashed = ' stroke-dasharray="7 5"' if dash else ""
        under = (
            f'<line x1="4" y1="8" x2="40" y2="8" stroke="{_FILTER_COLOUR}" stroke-opacity="0.28" '
            'stroke-width="9" stroke-linecap="round"/>'
            if band
            else ""
        )
        return (
            f'<svg width="48" height="16" viewBox="0 0 48 16" aria-hidden="true">{under}'
            f'<line x1="4" y1="8" x2="40" y2="8" stroke="{colour}" stroke-width="2"{dashed}/>'
            f'<path d="M38,3 L46,8 L38,13 z" fill="{colour}"/></svg>'
        )

    def box(fill: str, stroke: str, *, dash: bool = False, width: float = 1.6) -> str:
        dashed = ' stroke-dasharray="4 3"' if dash else ""
        return (
            f'<svg width="48" height="22" viewBox="0 0 48 22" aria-hidden="true"><rect x="3" y="3" width="42" '
            f'height="16" rx="5" fill="{fill}" stroke="{stroke}" stroke-width="{width}"{dashed}/></svg>'
        )

    connections = [
        (line(_STATE_COLOURS["active"]), "active connection (arrow: direction events flow)"),
        (line(_STATE_COLOURS["pending"]), "pending: waits for its start rule (ADD1)"),
        (line(_STATE_COLOURS["blocked"]), "blocked until recovery (DR5)"),
        (line(_STATE_COLOURS["failed"]), "failed: its filter failed; set a new one"),
        (line(_STATE_COLOURS["removed"], dash=True), "history edge: removed or superseded (H2)"),
        (
            line(_STATE_COLOURS["active"], band=True),
            "filtered: violet band and its filter as label",
        ),
        (
            "",
            '<span style="color:#8b5cf6;font-style:italic">was filtered</span>: filter cleared, still counts (H3)',
        ),
    ]
    nodes = [
        (box("#ffffff", "#1e3a8a"), "location (name, role)"),
        (box("#ffffff", "#ea580c", width=2.4), "recovering"),
        (box("#e5e7eb", "#9ca3af", dash=True), "retired (RET1)"),
    ]

    spacer = '<span style="width:48px"></span>'

    def items(rows: Iterable[tuple[str, str]]) -> str:
        return "".join(f"<li>{icon or spacer}<span>{text}</span></li>" for icon, text in rows)

    return (
        '<div class="legend"><h3>Connections</h3><ul>'
        + items(connections)
        + "</ul><h3>Locations</h3><ul>"
        + items(nodes)
        + "</ul></div>"
    )


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


def heatmap_html(matrix: Mapping[str, Any]) -> str:
    """The version-vector matrix (status `matrix`) as a table: rows locations, columns origins.

    Each cell shows the max seen of that origin and, when some is deleted there, the deleted prefix (the log's
    own copy of the origin's events starts after it); the colour says how far the row is behind the column's max.
    """
    origins = [str(o) for o in matrix.get("origins", [])]
    rows: Mapping[str, Mapping[str, Mapping[str, int]]] = matrix.get("rows", {})
    if not origins:
        return '<p class="empty">No events yet: every version vector is empty.</p>'
    column_max = {o: max((int(row[o]["max"]) for row in rows.values()), default=0) for o in origins}
    head = "".join(f'<th class="num" scope="col">{_text(o)}</th>' for o in origins)
    body = []
    for name, row in rows.items():
        cells = []
        for o in origins:
            seen, deleted = int(row[o]["max"]), int(row[o]["deleted"])
            behind = column_max[o] - seen
            notes = []
            if deleted:
                notes.append(f"deleted ≤ {deleted}")
            if behind:
                notes.append(f"{behind} behind")
            sub = "".join(f'<span class="sub">{_text(n)}</span>' for n in notes)
            tip = f"{name} has seen {o}'s events up to {seen}"
            tip += f"; deleted up to {deleted}" if deleted else "; none deleted"
            tip += f"; {behind} behind the most advanced location" if behind else ""
            cells.append(
                f'<td class="cell" data-row="{_text(name)}" data-origin="{_text(o)}" data-max="{seen}" '
                f'data-deleted="{deleted}" data-behind="{behind}" title="{_text(tip)}" '
                f'style="background:{heat_colour(behind, column_max[o])}">'
                f'<span class="max">{seen}</span>{sub}</td>'
            )
        body.append(f'<tr><th class="row" scope="row">{_text(name)}</th>{"".join(cells)}</tr>')
    scale = "".join(
        f'<span class="sw" style="background:{heat_colour(b, 4)}"></span>' for b in (0, 1, 2, 3, 4)
    )
    return (
        '<div class="scroll"><table class="heatmap"><thead><tr><th>location \\ origin</th>'
        + head
        + "</tr></thead><tbody>"
        + "".join(body)
        + "</tbody></table></div>"
        + f'<div class="scale">up to date {scale} far behind (share of the column\'s max)</div>'
    )


# -------------------------------------------------------------------------------------------------------- tables


def _badge(value: object) -> str:
    return f'<span class="badge {_text(value)}">{_text(value)}</span>'


def _filter_cell(conn: Mapping[str, Any]) -> str:
    if conn.get("filter"):
        return f'<code class="filter">{_text(conn["filter"])}</code>'
    if conn.get("ever_filtered"):
        return '<span class="empty">cleared (was filtered)</span>'
    return ""


def connections_html(connections: Sequence[Mapping[str, Any]]) -> str:
    """Lag per connection: state, progress, lag (events stored at the source past the progress) and why it waits.

    Current connections first; removed ones (history) follow, greyed.
    """
    if not connections:
        return '<p class="empty">No connections.</p>'
    ordered = sorted(connections, key=lambda c: c["state"] == "removed")
    most = max((int(c.get("lag") or 0) for c in connections), default=0)
    rows = []
    for c in ordered:
        lag = int(c.get("lag") or 0)
        bar = (
            f'<span class="bar" style="width:{max(4, round(80 * lag / most))}px"></span>'
            if lag and most
            else ""
        )
        state = str(c["state"])
        rows.append(
            f'<tr class="{_text(state)}" data-source="{_text(c["source"])}" data-target="{_text(c["target"])}">'
            f"<td>{_text(c['source'])} → {_text(c['target'])}</td><td>{_badge(state)}</td>"
            f"<td>{_filter_cell(c)}</td><td>{_text(c.get('history') or '')}</td>"
            f'<td class="num">{_text(c["progress"])}</td>'
            f'<td class="num lag" data-lag="{lag}">{lag}{bar}</td>'
            f"<td>{_text(c.get('reason') or '')}</td></tr>"
        )
    return (
        '<table class="connections"><thead><tr><th>connection</th><th>state</th><th>filter</th>'
        '<th>history</th><th class="num">progress</th><th class="num">lag</th><th>why it waits</th></tr></thead>'
        "<tbody>" + "".join(rows) + "</tbody></table>"
    )


def pending_html(doc: Mapping[str, Any]) -> str:
    """Pending deletions and what holds them, blocked recoveries, pending connections, and ROLE2 warnings."""
    parts: list[str] = []
    deletions = doc.get("pending_deletions") or []
    if deletions:
        rows = "".join(
            f'<tr data-location="{_text(p["location"])}"><td>{_text(p["location"])}</td>'
            f'<td class="num">{_text(p["requested_upto"])}</td>'
            f'<td class="held-by">{_text(", ".join(b["target"] for b in p["blocked_by"]))}</td></tr>'
            for p in deletions
        )
        parts.append(
            '<h3 class="sub">Pending deletions (DEL4)</h3><table class="pending-deletions"><thead><tr>'
            '<th>location</th><th class="num">requested up to</th><th>held back by (targets still lacking)</th>'
            "</tr></thead><tbody>" + rows + "</tbody></table>"
        )
    connections = doc.get("connections") or []
    for state, title, hint in (
        ("failed", "Failed filters", "replctl topology filter SOURCE TARGET --set EXPR"),
        ("blocked", "Blocked recoveries (DR5)", "replctl recover location TARGET (or --accept-loss)"),
        ("pending", "Pending connections (ADD1)", "retried by every replctl replicate"),
    ):
        waiting = [c for c in connections if c["state"] == state]
        if not waiting:
            continue
        rows = "".join(
            f'<tr data-source="{_text(c["source"])}" data-target="{_text(c["target"])}">'
            f"<td>{_text(c['source'])} → {_text(c['target'])}</td><td>{_text(c.get('reason') or '')}</td></tr>"
            for c in waiting
        )
        parts.append(
            f'<h3 class="sub">{title}</h3><p class="note">next: <code>{_text(hint)}</code></p>'
            f'<table class="{state}-connections"><thead><tr><th>connection</th><th>why it waits</th></tr>'
            "</thead><tbody>" + rows + "</tbody></table>"
        )
    exposed = [
        loc
        for loc in doc.get("locations") or []
        if (loc.get("recoverable") or {}).get("state") in {"no", "unknown"}
    ]
    if exposed:
        from replctl.core.backups import shortfall_text

        rows = "".join(
            f'<tr data-location="{_text(loc["name"])}"><td>{_text(loc["name"])}</td>'
            f"<td>{_text(loc['recoverable']['state'])}</td>"
            f"<td>{_text(shortfall_text(loc['recoverable']['shortfall']))}</td>"
            f"<td><code>replctl backup create {_text(loc['name'])}</code></td></tr>"
            for loc in exposed
        )
        parts.append(
            '<h3 class="sub">Not recoverable now (BK3)</h3><table class="unrecoverable"><thead><tr>'
            "<th>location</th><th>recoverable</th><th>a total loss now would lose</th><th>fix</th>"
            "</tr></thead><tbody>" + rows + "</tbody></table>"
        )
    warnings = doc.get("warnings") or []
    if warnings:
        items = "".join(
            f"<li><strong>[{_text(w.get('code'))}]</strong> {_text(w.get('message'))}</li>" for w in warnings
        )
        parts.append(f'<h3 class="sub">Warnings</h3><ul class="warnings">{items}</ul>')
    return "".join(parts) or '<p class="empty">Nothing pending.</p>'


def operations_html(operations: Sequence[Mapping[str, Any]]) -> str:
    """The most recent operations of the journal, newest first."""
    if not operations:
        return '<p class="empty">The journal is empty.</p>'
    rows = []
    for op in operations:
        error = op.get("error") or ""
        who = "@".join(str(p) for p in (op.get("actor"), op.get("host")) if p)
        rows.append(
            f'<tr data-operation="{_text(op["id"])}"><td title="{_text(op["id"])}"><code>'
            f"{_text(str(op['id'])[:8])}</code></td><td>{_text(op['command'])}</td>"
            f"<td>{_badge(op['outcome'])}</td><td>{_text(str(op.get('started_at') or '')[:19])}</td>"
            f"<td>{_text(who)}</td><td>{_text(op.get('reason') or '')}"
            + (f'<div class="err">{_text(error)}</div>' if error else "")
            + "</td></tr>"
        )
    return (
        '<table class="operations"><thead><tr><th>id</th><th>command</th><th>outcome</th><th>started (UTC)</th>'
        "<th>by</th><th>reason</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )


# ---------------------------------------------------------------------------------------------------------- page


def _cards(doc: Mapping[str, Any]) -> str:
    locations = doc.get("locations") or []
    connections = doc.get("connections") or []
    current = [c for c in connections if c["state"] != "removed"]
    retired = sum(1 for loc in locations if loc["state"] == "retired")
    waiting = sum(1 for c in current if c["state"] in ("pending", "blocked", "failed"))
    lag = sum(int(c.get("lag") or 0) for c in current)
    deletions = len(doc.get("pending_deletions") or [])
    cards = [
        ("", len(locations) - retired, f"locations ({retired} retired)" if retired else "locations"),
        ("", len(current), "connections"),
        ("warn" if waiting else "", waiting, "waiting connections"),
        ("warn" if lag else "", lag, "events behind (lag)"),
        ("warn" if deletions else "", deletions, "pending deletions"),
        ("bad" if doc.get("warnings") else "", len(doc.get("warnings") or []), "warnings"),
    ]
    return (
        '<div class="cards">'
        + "".join(
            f'<div class="card {cls}"><div class="n">{n}</div><div class="l">{_text(label)}</div></div>'
            for cls, n, label in cards
        )
        + "</div>"
    )


def render_page(doc: Mapping[str, Any]) -> str:
    """The whole report page for a report document: the `status --json` document plus `operations`,
    `generated_at`, `catalog` and `version`.
    """
    meta = " · ".join(
        _text(part)
        for part in (
            f"generated {doc.get('generated_at', '')}",
            f"catalog {doc.get('catalog', '')}",
            f"replctl {doc.get('version', '')}",
        )
    )
    sections = [
        (
            "topology",
            "Topology",
            "Every location and every connection ever made; arrows point the way events flow.",
            '<div class="topology">'
            + topology_svg(doc.get("locations") or [], doc.get("connections") or [])
            + _legend()
            + "</div>",
        ),
        (
            "matrix",
            "Version vectors",
            "Rows: locations (retired ones left out); columns: origins. Each cell: the highest event of the origin "
            "that the location has seen, and the prefix deleted there. Colour: how far the row is behind the "
            "column's most advanced location.",
            heatmap_html(doc.get("matrix") or {}),
        ),
        (
            "connections",
            "Connections and lag",
            "Progress: the source's last seq the target examined. Lag: events stored at the source past it.",
            connections_html(doc.get("connections") or []),
        ),
        ("pending", "Pending work", "What waits, and what holds it.", pending_html(doc)),
        (
            "operations",
            "Recent operations",
            "The latest entries of the journal, newest first (replctl ops show ID for the steps).",
            operations_html(doc.get("operations") or []),
        ),
    ]
    body = "".join(
        f'<section id="{sid}"><h2>{_text(title)}</h2><p class="note">{_text(note)}</p>{content}</section>'
        for sid, title, note, content in sections
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>replctl report</title>"
        f"<style>{_CSS}</style></head>"
        f'<body data-report="loading">{_ERROR_HOOK}'
        f'<header><h1>replctl report</h1><div class="meta">{meta}</div></header>'
        f"<main>{_cards(doc)}{body}</main>"
        "<footer>One self-contained file: nothing is loaded from the network.</footer>"
        f"{_READY}</body></html>\n"
    )
