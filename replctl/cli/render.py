"""Outcomes → Rich tables/trees or the JSON documents runbooks read (cli.md)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from replctl.cli.boundary import printable
from replctl.cli.output import emit_json, stderr, stdout, timestamp_text
from replctl.core.model import Change, Connection

if TYPE_CHECKING:
    from replctl.cli.context import AppContext
    from replctl.services.status import StatusView
    from replctl.services.topology import TopologyOutcome, TopologyView


def cell(value: str | None) -> Text:
    """Operator-typed text (a reason, a filter, a name) for a table cell: control characters escaped, and no
    Rich markup, so that it can neither rewrite the terminal nor restyle the table (issue 19)."""
    return Text(printable(value or ""))


def describe_change(change: Change) -> str:
    """One line for a human, control characters escaped."""
    return printable(_describe(change))


def _describe(change: Change) -> str:
    k = change.kind.value
    if change.source and change.target:
        text = f"{k} {change.source}→{change.target}"
        if change.filter:
            text += f" filter: {change.filter}"
        if change.history and change.history.value != "complete":
            text += f" history: {change.history.value}"
        return text
    if change.group:
        return f"{k} {change.group}" + (f" [{', '.join(change.members)}]" if change.members else "")
    if change.failover_from:
        return f"{k} {change.location} from {change.failover_from} to {change.failover_to}"
    return f"{k} {change.location}" + (f" ({change.role.value})" if change.role else "")


def render_topology_outcome(app: AppContext, out: TopologyOutcome) -> None:
    """Text or JSON for location/topology changes."""
    if app.json:
        emit_json(out.to_json())
        return
    console = stdout()
    prefix = "would record" if out.dry_run else "recorded"
    if not out.changes:
        console.print("nothing to change", markup=False)
    for change in out.changes:
        console.print(f"{prefix}: {describe_change(change)}", markup=False)
    for conn in out.connections:
        verb = "would start" if out.dry_run else "starts"
        if conn["state"] == "active":
            console.print(f"{conn['source']}→{conn['target']}: {verb} now", markup=False)
        else:
            console.print(
                f"{conn['source']}→{conn['target']}: pending; {printable(conn['reason'] or '')}", markup=False
            )
        if conn.get("baseline"):
            console.print(
                f"  history {conn['history']}: {conn['target']} merges {vector_text(conn['baseline'])}",
                markup=False,
            )
        for origin, upto in sorted(conn.get("held_back", {}).items()):
            console.print(
                f"  {origin}:{conn['baseline'][origin]} counts once {conn['target']} holds {origin} up to "
                f"{upto}, what {conn['source']} stored under that accepted entry (ADD3)",
                markup=False,
            )
    for warning in out.warnings:
        stderr().print(f"warning [{warning.code}]: {warning.message}", markup=False)


def render_topology_view(console: Console, view: TopologyView, fmt: str) -> None:
    """Table, tree, Graphviz dot or Mermaid."""
    current = {(c.source, c.target): c for c in view.connections if c.state.value != "removed"}
    drawers = {"dot": _dot, "mermaid": _mermaid, "tree": _tree}
    drawers.get(fmt, _table)(console, view, current)


Current = dict[tuple[str, str], "Connection"]


def _dot(console: Console, view: TopologyView, current: Current) -> None:
    state = view.state
    lines = ["digraph replctl {"]
    for loc in view.locations:
        style = ", style=dashed, fontcolor=grey" if loc.retired else ""
        lines.append(f'  "{loc.name}" [label="{loc.name}\\n{loc.role.value}"{style}];')
    for s, t in sorted(state.edges | set(current)):
        conn = current.get((s, t))
        attrs = [] if conn is not None else ["style=dashed"]
        if conn is not None and conn.filter:
            attrs.append('label="' + conn.filter.replace('"', '\\"') + '"')
        if (s, t) in state.ever_filtered:
            attrs.append("color=orange")
        lines.append(f'  "{s}" -> "{t}"' + (f" [{', '.join(attrs)}]" if attrs else "") + ";")
    lines.append("}")
    console.print("\n".join(lines), markup=False, highlight=False)


def _mermaid(console: Console, view: TopologyView, current: Current) -> None:
    lines = ["graph LR"]
    for s, t in sorted(view.state.edges | set(current)):
        conn = current.get((s, t))
        if conn is None:
            lines.append(f"  {s} -.-> {t}")
        elif conn.filter:
            label = conn.filter.replace('"', "'")
            lines.append(f'  {s} -- "{label}" --> {t}')
        else:
            lines.append(f"  {s} --> {t}")
    lines += [f"  style {loc.name} stroke-dasharray: 5 5" for loc in view.locations if loc.retired]
    console.print("\n".join(lines), markup=False, highlight=False)


def _tree(console: Console, view: TopologyView, current: Current) -> None:
    tree = Tree("topology")
    for loc in view.locations:
        node = tree.add(f"{loc.name} ({loc.role.value}{', retired' if loc.retired else ''})")
        for (s, t), conn in sorted(current.items()):
            if s == loc.name:
                extra = f" filter: {conn.filter}" if conn.filter else ""
                node.add(Text(printable(f"→ {t} [{conn.state.value}]{extra}")))
    for name, members in sorted(view.state.groups.items()):
        tree.add(Text(printable(f"group {name}: {', '.join(sorted(members))}")))
    console.print(tree)


def _table(console: Console, view: TopologyView, current: Current) -> None:
    state = view.state
    table = Table("source", "target", "state", "filter", "ever filtered", "history")
    for s, t in sorted(state.edges | set(current)):
        conn = current.get((s, t))
        table.add_row(
            s,
            t,
            conn.state.value if conn else "removed",
            cell(conn.filter) if conn else "",
            "yes" if (s, t) in state.ever_filtered else "",
            conn.history.value if conn else "",
        )
    console.print(table)
    for name, members in sorted(state.groups.items()):
        console.print(printable(f"group {name}: {', '.join(sorted(members))}"), markup=False)


def render_history(console: Console, changes: Sequence[Change], *, wide: bool = False) -> None:
    """`topology history` as a table that fits 80 columns, each change's reason below it (H1)."""
    notes = Notes(wide)
    table = fitted_table(("id", "at", "who"), ("change", "reason"))
    for c in changes:
        table.add_row(
            str(c.id),
            timestamp_text(c.at),
            cell(c.actor or "-"),  # who made the change (H1); `-` for changes recorded before it was kept
            Text(describe_change(c)),
            notes.cell(c.reason, "", f"change {c.id}: {c.reason}"),
        )
    console.print(table)
    notes.print(console)


def fitted_table(keys: tuple[str, ...], others: tuple[str, ...]) -> Table:
    """A table meant to fit 80 columns (issue 18): the `keys` columns, the ones operators scan first (names,
    states), never wrap or shrink; the `others` give way. Columns are set apart by space, as kubectl's are,
    not by rules: the nine columns of rules are what made `status` wrap at 80."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, padding=(0, 1, 0, 0))
    for name in keys:
        table.add_column(name, no_wrap=True, overflow="ignore")
    for name in others:
        table.add_column(name)
    return table


class Notes:
    """Long texts moved below a table so that it fits 80 columns (issue 18): the cell says `[n]`, note n below
    says it all. With --wide every text stays in its cell."""

    def __init__(self, wide: bool) -> None:
        self.wide = wide
        self.lines: list[str] = []

    def cell(self, text: str | None, short: str = "", note: str | None = None) -> Text:
        """The cell for `text`: the text itself when wide, else `short` and a reference to its note (`note`,
        or `text`)."""
        if not text:
            return Text(short)
        if self.wide:
            return cell(text)
        self.lines.append(note or text)
        return Text(f"{short} [{len(self.lines)}]".strip())

    def print(self, console: Console) -> None:
        """The notes, one per line, never cut (a copy-pasted hint must stay whole)."""
        for number, line in enumerate(self.lines, 1):
            console.print(f"[{number}] {printable(line)}", markup=False, soft_wrap=True)
        self.lines.clear()


def render_status(console: Console, status: StatusView, *, wide: bool = False) -> None:
    """`status` in text mode: fits 80 columns, long texts below each table (all in the table with `wide`).

    It draws the values of the `--json` document, so that the text and the JSON never disagree.
    """
    doc = status.to_json()
    notes = Notes(wide)
    table = fitted_table(("location", "role", "state"), ("seq", "cvv", "dvv", "deleted", "recoverable"))
    for loc in doc["locations"]:
        rec = loc.get("recoverable")
        recoverable = recoverable_text(loc["name"], rec)
        table.add_row(
            loc["name"],
            loc["role"],
            state_text(loc["state"]),
            str(loc["seq"]),
            vector_text(loc["cvv"]),
            vector_text(loc["dvv"]),
            f"{loc['deleted_upto']}/{loc['logical_deleted_upto']}",
            notes.cell(recoverable, "no", f"{loc['name']}: {recoverable}")
            if rec and rec["state"] == "no"
            else recoverable,
        )
    console.print(table)
    notes.print(console)
    console.print()
    conns = fitted_table(("connection", "state"), ("progress", "lag", "filter", "why"))
    for c in doc["connections"]:
        arrow = f"{c['source']}→{c['target']}"
        conns.add_row(
            arrow,
            state_text(c["state"]),
            str(c["progress"]),
            str(c.get("lag", "")),
            notes.cell(c["filter"], "yes" if c["filter"] else "", f"{arrow} filter: {c['filter']}"),
            notes.cell(c["reason"], "", f"{arrow}: {c['reason']}"),
        )
    console.print(conns)
    notes.print(console)
    matrix = doc.get("matrix")
    if matrix and matrix["origins"]:
        console.print()
        # The title as a line of its own: a table title wraps to the table's width (issue 18).
        console.print("max seen per origin (deleted up to):", markup=False)
        grid = fitted_table(("location", *matrix["origins"]), ())
        for name, row in matrix["rows"].items():
            cells = []
            for o in matrix["origins"]:
                entry = row[o]
                cells.append(f"{entry['max']}" + (f" ({entry['deleted']})" if entry["deleted"] else ""))
            grid.add_row(name, *cells)
        console.print(grid)
    states = {loc["name"]: loc["state"] for loc in doc["locations"]}
    for p in doc.get("pending_deletions", []):
        # DEL4: the targets holding it back now; none once a topology change removed them, until its retry,
        # which leaves it pending while its own log is damaged or recovering (DR0).
        held = ", ".join(b["target"] for b in p["blocked_by"])
        recovery = recovery_wait(p["location"], states.get(p["location"]))
        if recovery is not None:
            why = f"waits: {recovery}" + (f"; held back by {held} too" if held else "")
        else:
            why = (
                f"held back by {held}"
                if held
                else "no target holds it back now; it runs at the next replicate"
            )
        console.print(
            f"pending deletion at {p['location']} up to {p['requested_upto']}, {why}",
            markup=False,
            soft_wrap=True,
        )
    for w in doc.get("warnings", []):
        console.print(f"warning [{w['code']}]: {w['message']}", markup=False, soft_wrap=True)


def recovery_wait(location: str, state: str | None) -> str | None:
    """Why a pending deletion at `location` waits whatever its targets hold, from its state as `status` shows
    it: its log is damaged or it is recovering, and DEL4's retry leaves it pending until the recovery ends
    (DR0). None in any other state."""
    cause = {"damaged": f"{location}'s log is damaged", "recovering": f"{location} is recovering"}.get(
        state or ""
    )
    return None if cause is None else f"{cause} (DR0); run: replctl recover location {location}"


# Colours of the states an operator must notice (issue 18): what stops replication or data in red, what waits
# in yellow, what is over in grey. Rich drops the colours under NO_COLOR and when stdout is not a terminal.
STATE_STYLES = {
    "blocked": "bold red",
    "damaged": "bold red",
    "failed": "red",
    "pending": "yellow",
    "recovering": "yellow",
    "retired": "bright_black",
    "removed": "bright_black",
}


def state_text(state: str) -> Text:
    """A location's or connection's state for a table cell, coloured when it needs attention."""
    return Text(state, style=STATE_STYLES.get(state, ""))


def recoverable_text(name: str, rec: dict[str, Any] | None) -> str:
    """BK3 in one cell: yes, unknown, or no with what would be lost per origin and the command that fixes it."""
    if rec is None:
        return ""
    if rec["state"] != "no":
        return str(rec["state"])
    from replctl.core.backups import shortfall_text

    return f"no (would lose {shortfall_text(rec['shortfall'])}; fix: replctl backup create {name})"


def render_unrecoverable(console: Console, made: Iterable[Mapping[str, Any]], *, dry_run: bool) -> None:
    """BK4's warning lines of `delete` and `backup prune`: each location the command makes (or would make,
    `dry_run`) unrecoverable, what it would lose, and the command that fixes it."""
    from replctl.core.backups import shortfall_text

    for hurt in made:
        console.print(
            f"warning [BK4]: {hurt['location']} {'would become' if dry_run else 'is now'} "
            f"unrecoverable (would lose {shortfall_text(hurt['shortfall'])}); fix: {hurt['fix']}",
            markup=False,
        )


def vector_text(vector: Mapping[str, int] | None) -> str:
    """A version vector as every text output writes it: `{A:2,B:1}`, keys sorted, `{}` the empty one (VT1)."""
    return "{" + ",".join(f"{k}:{n}" for k, n in sorted((vector or {}).items()) if n) + "}"


def fields_text(record: Mapping[str, Any] | None) -> str:
    """A record (a journal step's detail) as `key=value` pairs in the one text style; `-` when empty.

    Unlike `value_text`, a record of numbers stays a record (`seq=4 floor=4`), never reads as a vector.
    """
    return " ".join(f"{k}={value_text(v)}" for k, v in (record or {}).items()) or "-"


def value_text(value: Any) -> str:
    """Any value an outcome carries, in the one text style (issue 18): never a Python repr.

    Nothing is `-`; yes/no for flags; a mapping of names to numbers is a vector (`{A:2}`); other mappings are
    `key=value` pairs; lists are comma-separated. Control characters are escaped (`printable`).
    """
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping):
        if value and all(isinstance(n, int) and not isinstance(n, bool) for n in value.values()):
            return vector_text(value)
        return fields_text(value)
    if isinstance(value, list | tuple | set | frozenset):
        return ", ".join(value_text(v) for v in value) or "-"
    return printable(str(value))
