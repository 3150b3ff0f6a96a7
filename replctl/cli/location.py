"""`replctl location add|list|show|retire`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from replctl.cli.boundary import Effect, run
from replctl.cli.completion import location_names
from replctl.cli.context import AppContext
from replctl.cli.output import stdout
from replctl.cli.render import render_topology_outcome, vector_text
from replctl.core.model import Role

if TYPE_CHECKING:
    from replctl.services.locations import AllLocations, LocationDetail
    from replctl.services.retirement import RetirementOutcome
    from replctl.services.topology import TopologyOutcome

app = typer.Typer(help="Locations: add, list, show, retire.", no_args_is_help=True)

DryRun = Annotated[bool, typer.Option("--dry-run", help="Show what would change; change nothing.")]


@app.command("add")
def add(
    ctx: typer.Context,
    name: str,
    role: Annotated[
        Role, typer.Option("--role", help="read-write, hub or read-only (M1).")
    ] = Role.READ_WRITE,
    dry_run: DryRun = False,
) -> None:
    """Add a location with its own empty log (M1: a name is never reused)."""

    def action(app: AppContext) -> TopologyOutcome:
        from replctl.services import topology

        return topology.add_location(
            app.catalog(), name, role, reason=app.reason, dry_run=dry_run or app.planning
        )

    def render(app: AppContext, out: TopologyOutcome) -> None:
        if not out.changes and not app.json:
            # The planner records nothing only when NAME exists with this role (M1): say so (issue 18).
            stdout().print(f"location {name} exists ({role.value}); nothing to change", markup=False)
            return
        render_topology_outcome(app, out)

    run(ctx, action, render, effect=Effect.OPERATION)


@app.command("list")
def list_(ctx: typer.Context) -> None:
    """List every location, retired ones included."""

    def action(app: AppContext) -> AllLocations:
        from replctl.services.locations import all_locations

        return all_locations(app.catalog())

    def render(app: AppContext, out: AllLocations) -> None:
        table = Table("name", "role", "state", "seq", "cvv", "dvv", "deleted_upto")
        for loc in out.locations:
            table.add_row(
                loc.name,
                loc.role.value,
                loc.state.value,
                str(loc.seq),
                vector_text(loc.cvv),
                vector_text(loc.dvv),
                str(loc.deleted_upto),
            )
        stdout().print(table)

    run(ctx, action, render)


@app.command("show")
def show(ctx: typer.Context, name: Annotated[str, typer.Argument(autocompletion=location_names)]) -> None:
    """Show one location: metadata, connections in and out, segments."""

    def action(app: AppContext) -> LocationDetail:
        from replctl.services.locations import location_detail

        return location_detail(app.catalog(), name, lambda: app.engine().store)

    def render(app: AppContext, out: LocationDetail) -> None:
        loc, conns, segments = out.location, out.connections, out.segments
        doc = out.to_json()  # the state and damage as the census sees them, as --json says them
        console = stdout()
        console.print(
            # The state as the census sees it (DR0): a damaged location is not shown `active`.
            f"{loc.name} ({loc.role.value}, {doc['state']}) seq={loc.seq} cvv={vector_text(loc.cvv)} "
            f"dvv={vector_text(loc.dvv)} deleted_upto={loc.deleted_upto} "
            f"logical_deleted_upto={loc.logical_deleted_upto}",
            markup=False,
        )
        for c in conns:
            console.print(
                f"  {c.source}→{c.target} {c.state.value} progress={c.progress}"
                + (f" filter: {c.filter}" if c.filter else ""),
                markup=False,
            )
        console.print(
            f"  {len(segments)} segment(s), {sum(s.count for s in segments)} stored event(s)", markup=False
        )
        for d in doc.get("damage", []):
            console.print(f"  damaged: {d['path']} from seq {d['seq_lo']}: {d['reason']}", markup=False)
        if doc.get("damage"):
            console.print(f"hint: replctl recover location {loc.name}", markup=False)

    run(ctx, action, render)


@app.command("retire")
def retire(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(autocompletion=location_names)],
    prune_clock: Annotated[
        bool, typer.Option("--prune-clock", help="Also remove its id from every clock (RET2/RET3).")
    ] = False,
    dry_run: DryRun = False,
) -> None:
    """Retire a location (RET1): it leaves the history projection; its id is never reused.

    With --prune-clock its id is then removed from every vt, CVV and DVV (RET2), once every remaining
    location has all of its events (RET3); re-run it on a retired location to prune later.
    """

    def action(app: AppContext) -> RetirementOutcome:
        from replctl.services import retirement

        return retirement.retire(
            app.catalog(),
            app.engine(),
            name,
            prune_clock=prune_clock,
            reason=app.reason,
            dry_run=dry_run or app.planning,
        )

    def render(app: AppContext, out: RetirementOutcome) -> None:
        pruning = out.pruning
        if pruning is None or out.retirement.changes:
            render_topology_outcome(app, out.retirement)
        else:
            stdout().print(f"{name} is already retired", markup=False)
        if pruning is None:
            return
        console = stdout()
        if not pruning["logs"] and not pruning["recorded"]:
            console.print(f"{name}'s clock is pruned already: nothing to do", markup=False)
            return
        dry = pruning["dry_run"]
        for log in pruning["logs"]:
            console.print(
                f"{'would prune' if dry else 'pruned'} {name} from the vts of {log['location']}: "
                f"{len(log['rewritten'])} segment(s) {'to rewrite' if dry else 'rewritten'}, "
                f"{log['untouched']} untouched",
                markup=False,
            )
            for path in log["rewritten"] if dry else ():
                console.print(f"  rewrite {path}", markup=False)
        if pruning["recorded"]:
            console.print(
                f"{'would record' if dry else 'recorded'} {name} as pruned: new vts leave it out; every CVV "
                f"and DVV keeps its {name} entry (RET2, RET4)",
                markup=False,
            )

    def question(_preview: Any) -> str | None:
        if not prune_clock or dry_run:
            return None
        return f"retire {name} and remove its id from every clock for good?"

    run(ctx, action, render, effect=Effect.OPERATION, question=question)


__all__ = ["app"]


def register(root: typer.Typer) -> None:
    """Attach `location` to the root app."""
    root.add_typer(app, name="location")
