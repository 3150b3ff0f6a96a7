"""`replctl drill disaster`: destroy data as a disaster would, to rehearse recovery."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from replctl.cli.boundary import Effect, run
from replctl.cli.context import AppContext
from replctl.cli.options import DryRun
from replctl.cli.output import stdout

if TYPE_CHECKING:
    from replctl.core.recovery import DrillOutcome

drill_app = typer.Typer(help="Game-day drills: destroy data as a disaster would.", no_args_is_help=True)


@drill_app.command("disaster")
def drill_disaster(
    ctx: typer.Context,
    location: str,
    from_seq: Annotated[
        int, typer.Option("--from", metavar="SEQ", help="Destroy the stored events from SEQ on.")
    ],
    dry_run: DryRun = False,
) -> None:
    """Destroy the stored suffix of a log from SEQ on; the catalog is left as a real disaster would."""

    def action(app: AppContext) -> DrillOutcome:
        from replctl.services import recovery

        return recovery.drill(
            app.catalog(),
            app.engine(),
            location,
            from_seq,
            reason=app.reason,
            dry_run=dry_run or app.planning,
        )

    def render(app: AppContext, out: DrillOutcome) -> None:
        verb = "would destroy" if out.dry_run else "destroyed"
        if not out.destroyed_segments and out.truncated_segment is None:
            # The store holds nothing from SEQ on any more (an earlier drill, a real disaster): said as it is.
            stdout().print(
                f"{verb} nothing: {location}'s store holds no events from seq {from_seq} on", markup=False
            )
        else:
            stdout().print(
                f"{verb} {location}'s stored events from seq {from_seq} on "
                f"({len(out.destroyed_segments)} segment(s) gone"
                + (", one truncated)" if out.truncated_segment else ")"),
                markup=False,
            )
        stdout().print(f"next: replctl recover location {location}", markup=False)

    def question(_preview: Any) -> str | None:
        return None if dry_run else f"destroy {location}'s stored events from seq {from_seq} on?"

    run(ctx, action, render, effect=Effect.OPERATION, question=question)


def register(root: typer.Typer) -> None:
    """Attach `drill` to the root app."""
    root.add_typer(drill_app, name="drill")
