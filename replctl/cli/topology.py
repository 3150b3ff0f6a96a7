"""`replctl topology add|remove|filter|group|failover|show|history|validate`."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from replctl.cli.boundary import Effect, run
from replctl.cli.completion import group_names, location_names, location_or_group_names, member_names
from replctl.cli.context import AppContext
from replctl.cli.output import emit_json, stdout
from replctl.cli.render import (
    render_history,
    render_topology_outcome,
    render_topology_view,
)
from replctl.core.model import HistoryMode
from replctl.errors import InvalidInput

if TYPE_CHECKING:
    from replctl.services.topology import TopologyHistory, TopologyOutcome, TopologyView
    from replctl.services.topology_state import TopologyValidation

app = typer.Typer(help="Replication connections, filters, groups and their history.", no_args_is_help=True)

DryRun = Annotated[bool, typer.Option("--dry-run", help="Show what would change; change nothing.")]


class ShowFormat(StrEnum):
    """Formats of `topology show`."""

    TABLE = "table"
    TREE = "tree"
    DOT = "dot"
    MERMAID = "mermaid"
    JSON = "json"


@app.command("add")
def add(
    ctx: typer.Context,
    source: str,
    target: str,
    both: Annotated[bool, typer.Option("--both", help="Also add TARGET→SOURCE.")] = False,
    filter_expr: Annotated[str | None, typer.Option("--filter", help="Spark SQL boolean expression.")] = None,
    history: Annotated[
        HistoryMode, typer.Option("--history", help="complete, current or none (ADD3).")
    ] = HistoryMode.COMPLETE,
    dry_run: DryRun = False,
) -> None:
    """Add a replication connection SOURCE→TARGET (checked against the whole history, F1/F2)."""

    def action(app: AppContext) -> TopologyOutcome:
        from replctl.services import topology

        return topology.add_connection(
            app.catalog(),
            source,
            target,
            both=both,
            filter_expr=filter_expr,
            history=history,
            reason=app.reason,
            dry_run=dry_run or app.planning,
        )

    run(ctx, action, render_topology_outcome, effect=Effect.OPERATION)


@app.command("remove")
def remove(
    ctx: typer.Context,
    source: str,
    target: str,
    both: Annotated[bool, typer.Option("--both", help="Also remove TARGET→SOURCE.")] = False,
    dry_run: DryRun = False,
) -> None:
    """Remove a connection (it stays in the history the rules check, H2)."""

    def action(app: AppContext) -> TopologyOutcome:
        from replctl.services import topology

        return topology.remove_connection(
            app.catalog(), source, target, both=both, reason=app.reason, dry_run=dry_run or app.planning
        )

    run(ctx, action, render_topology_outcome, effect=Effect.OPERATION)


@app.command("filter")
def filter_(
    ctx: typer.Context,
    source: Annotated[str, typer.Argument(autocompletion=location_or_group_names)],
    target: Annotated[str, typer.Argument(autocompletion=location_or_group_names)],
    set_expr: Annotated[str | None, typer.Option("--set", help="Spark SQL boolean expression.")] = None,
    clear: Annotated[bool, typer.Option("--clear", help="Remove the filter (it still counts, H3).")] = False,
    dry_run: DryRun = False,
) -> None:
    """Set or clear the filter of SOURCE→TARGET; either side may name a declared group (RFC2)."""

    def action(app: AppContext) -> TopologyOutcome:
        from replctl.services import topology

        if (set_expr is None) == (not clear):
            raise InvalidInput(
                "give exactly one of --set EXPR or --clear",
                code="bad-option",
                hint=f"replctl topology filter {source} {target} --set \"key = 'x'\"",
            )
        return topology.set_filter(
            app.catalog(),
            source,
            target,
            None if clear else set_expr,
            reason=app.reason,
            dry_run=dry_run or app.planning,
        )

    run(ctx, action, render_topology_outcome, effect=Effect.OPERATION)


@app.command("group")
def group(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(autocompletion=group_names)],
    members: Annotated[
        list[str] | None, typer.Argument(help="Member locations.", autocompletion=location_names)
    ] = None,
    remove: Annotated[bool, typer.Option("--remove", help="Remove the group declaration.")] = False,
    dry_run: DryRun = False,
) -> None:
    """Declare an application group (RFC1) whose members share redundant filtered connections."""

    def action(app: AppContext) -> TopologyOutcome:
        from replctl.services import topology

        if remove:
            if members:
                raise InvalidInput(
                    "--remove takes no members",
                    code="bad-option",
                    hint=f"replctl topology group {name} --remove",
                )
            return topology.remove_group(
                app.catalog(), name, reason=app.reason, dry_run=dry_run or app.planning
            )
        if not members:
            raise InvalidInput(
                "a group needs at least one member",
                code="bad-option",
                hint=f"replctl topology group {name} A B",
            )
        return topology.declare_group(
            app.catalog(), name, list(members), reason=app.reason, dry_run=dry_run or app.planning
        )

    run(ctx, action, render_topology_outcome, effect=Effect.OPERATION)


@app.command("failover")
def failover(
    ctx: typer.Context,
    location: Annotated[str, typer.Argument(autocompletion=location_names)],
    old: Annotated[
        str, typer.Option("--from", help="The group member to leave.", autocompletion=member_names)
    ],
    new: Annotated[
        str, typer.Option("--to", help="The group member to use instead.", autocompletion=member_names)
    ],
    dry_run: DryRun = False,
) -> None:
    """Move LOCATION's connections from one group member to another in one step (FO1)."""

    def action(app: AppContext) -> TopologyOutcome:
        from replctl.services import topology

        return topology.failover(
            app.catalog(), location, old, new, reason=app.reason, dry_run=dry_run or app.planning
        )

    run(ctx, action, render_topology_outcome, effect=Effect.OPERATION)


@app.command("show")
def show(
    ctx: typer.Context,
    fmt: Annotated[
        ShowFormat, typer.Option("--format", help="table, tree, dot, mermaid or json.")
    ] = ShowFormat.TABLE,
) -> None:
    """Draw the topology: current connections, history edges, filters, groups, retired locations."""

    def action(app: AppContext) -> TopologyView:
        from replctl.services import topology

        return topology.show(app.catalog())

    def render(_app: AppContext, view: TopologyView) -> None:
        if fmt is ShowFormat.JSON:  # --format json without --json: the same document
            emit_json(view.to_json())
        else:
            render_topology_view(stdout(), view, fmt.value)

    run(ctx, action, render)


@app.command("history")
def history(
    ctx: typer.Context,
    location: Annotated[str | None, typer.Option("--location", help="Only changes touching it.")] = None,
    wide: Annotated[bool, typer.Option("--wide", help="Reasons in the table, not below it.")] = False,
) -> None:
    """Every recorded topology change, oldest first (H1)."""

    def action(app: AppContext) -> TopologyHistory:
        from replctl.services import topology

        return topology.history(app.catalog(), location)

    def render(_app: AppContext, out: TopologyHistory) -> None:
        render_history(stdout(), out.changes, wide=wide)

    run(ctx, action, render)


@app.command("validate")
def validate(ctx: typer.Context) -> None:
    """Check every rule on the whole history; exit 3 when one is violated."""

    def action(app: AppContext) -> TopologyValidation:
        from replctl.services import topology_state

        return topology_state.validate(app.catalog())

    def render(_app: AppContext, out: TopologyValidation) -> None:
        console = stdout()
        for v in out.found:
            label = "warning" if v.warning else "violation"
            console.print(f"{label} [{v.code}]: {v.message}", markup=False)
            if v.hint:
                console.print(f"hint: {v.hint}", markup=False)
        if not out.errors:
            console.print(
                "topology valid" + (f" ({len(out.found)} warning(s))" if out.found else ""),
                markup=False,
            )

    run(ctx, action, render)


def register(root: typer.Typer) -> None:
    """Attach `topology` to the root app."""
    root.add_typer(app, name="topology")
