"""`replctl delete`: a log prefix, logically at once and physically as far as targets allow."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from replctl.cli.boundary import Effect, run
from replctl.cli.completion import location_names
from replctl.cli.confirm import deletion_question
from replctl.cli.context import AppContext
from replctl.cli.options import DryRun
from replctl.cli.output import stdout
from replctl.cli.render import render_unrecoverable, vector_text

if TYPE_CHECKING:
    from replctl.services.deletion import DeletionOutcome


def delete(
    ctx: typer.Context,
    location: Annotated[str, typer.Argument(autocompletion=location_names)],
    upto: Annotated[
        int | None, typer.Option("--upto", metavar="SEQ", help="Delete the prefix seq ≤ SEQ.")
    ] = None,
    older_than: Annotated[
        str | None,
        typer.Option("--older-than", metavar="AGE", help="Cut at the last event older than AGE (30d, 12h)."),
    ] = None,
    logical: Annotated[bool, typer.Option("--logical", help="Hide from local reading only.")] = False,
    require_recoverable: Annotated[
        bool,
        typer.Option(
            "--require-recoverable",
            help="Refuse (exit 3) a deletion that would leave a location unrecoverable (BK4); its part "
            "that waits keeps this at every retry.",
        ),
    ] = False,
    dry_run: DryRun = False,
) -> None:
    """Delete a log prefix: logically at once, physically as far as every target allows (DEL1–DEL4)."""

    def action(app: AppContext) -> DeletionOutcome:
        from replctl.services import deletion
        from replctl.services.backups import DeletionGuard

        require = require_recoverable or app.settings.require_recoverable
        return deletion.delete(
            app.catalog(),
            app.engine(),
            location,
            upto=upto,
            older_than=older_than,
            now=app.now,
            logical=logical,
            reason=app.reason,
            dry_run=dry_run or app.planning,
            guard=DeletionGuard(tuple(app.manifests() or ()), require),
        )

    def render(app: AppContext, out: DeletionOutcome) -> None:
        console = stdout()
        # A request that waits has not made anything unrecoverable yet: its waiting part would (BK4).
        render_unrecoverable(console, out.makes_unrecoverable or (), dry_run=out.dry_run or out.pending)
        if out.none_older:
            # Not "would hide seq ≤ 0": no cut was found, and the dry run and the run change nothing alike.
            console.print(
                f"{location}: no stored event is older than {older_than}; nothing "
                f"{'would be' if out.dry_run else 'is'} deleted",
                markup=False,
            )
            return
        if out.dry_run:
            would = out.would_delete
            console.print(f"would hide seq ≤ {out.logical_deleted_upto} from local reading", markup=False)
            if would:
                console.print(f"would delete seq {would['from']}..{would['upto']} physically", markup=False)
        else:
            console.print(
                f"{location}: logically deleted up to {out.logical_deleted_upto}, physically up to "
                f"{out.deleted_upto}; DVV {vector_text(out.dvv)}",
                markup=False,
            )
        for b in out.blocked_by:
            console.print(f"waits [DEL3]: {b.target} still needs seq {b.first_blocked_seq}", markup=False)
        if out.pending and out.logical:
            # DEL4: not this request's (it is done), but the earlier physical one still waits.
            console.print(
                f"an earlier physical deletion up to {out.pending_upto} still waits (DEL4); it is retried "
                f"after every replicate run (hint: replctl replicate, then replctl delete {location} --upto "
                f"{out.pending_upto})",
                markup=False,
            )
        elif out.pending:
            if out.pending_upto is not None and out.pending_upto > out.requested_upto:
                console.print(
                    f"an earlier request up to {out.pending_upto} still waits and is kept (DEL4)",
                    markup=False,
                )
            console.print(
                f"the rest waits; it is retried after every replicate run (hint: replctl replicate, "
                f"then replctl delete {location} --upto {out.pending_upto})",
                markup=False,
            )

    run(ctx, action, render, effect=Effect.OPERATION, question=deletion_question(location, dry_run))


def register(root: typer.Typer) -> None:
    """Attach `delete` to the root app."""
    root.command("delete")(delete)
