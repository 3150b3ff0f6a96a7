"""`replctl recover location`: disaster recovery (DR0–DR5), from neighbours or a backup (BK2)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

import typer

from replctl.cli.boundary import Effect, run
from replctl.cli.completion import location_names
from replctl.cli.context import AppContext
from replctl.cli.options import DryRun
from replctl.cli.output import stdout
from replctl.cli.render import vector_text
from replctl.errors import InvalidInput

if TYPE_CHECKING:
    from replctl.core.recovery import RecoveryOutcome

recover_app = typer.Typer(help="Disaster recovery (DR0–DR5).", no_args_is_help=True)


@recover_app.command("location")
def recover_location(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(autocompletion=location_names)],
    lost_from: Annotated[
        int | None,
        typer.Option(
            "--lost-from", metavar="SEQ", help="Declare the loss from SEQ on (else found by checking)."
        ),
    ] = None,
    accept_loss: Annotated[
        bool,
        typer.Option(
            "--accept-loss",
            help="Merge refused neighbours' DVVs and unblock them (DR5); also consent to discard stored "
            "events no other location holds (DR0) and to lose what a backup holds (BK3).",
        ),
    ] = False,
    from_backup: Annotated[
        str | None,
        typer.Option("--from-backup", metavar="ID|latest", help="Restore the log from a backup first (BK2)."),
    ] = None,
    dry_run: DryRun = False,
) -> None:
    """Recover a location after losing a suffix of its log: metadata, then events in rounds."""

    def action(app: AppContext) -> RecoveryOutcome:
        from replctl.services import recovery

        if from_backup is not None:
            if lost_from is not None:
                raise InvalidInput("give --lost-from or --from-backup, not both", code="usage")
            from replctl.services import restore

            return restore.restore(
                app.catalog(),
                app.engine(),
                app.backups(),
                name,
                from_backup,
                accept_loss=accept_loss,
                reason=app.reason,
                dry_run=dry_run or app.planning,
            )
        return recovery.recover(
            app.catalog(),
            app.engine(),
            name,
            lost_from=lost_from,
            accept_loss=accept_loss,
            reason=app.reason,
            dry_run=dry_run or app.planning,
            manifests=app.manifests(),
        )

    def render(app: AppContext, out: RecoveryOutcome) -> None:
        console = stdout()
        if out.nothing_to_do:
            console.print(f"{name}: the store holds every catalogued event; nothing to recover", markup=False)
            return
        prefix = "would " if out.dry_run else ""
        if out.backup:
            console.print(f"{name}: {prefix}restore backup {out.backup} (BK2)", markup=False)
            if out.lost_from is not None:
                console.print(_restored_text(name, out.lost_from, dry_run=out.dry_run), markup=False)
        elif out.lost_from is not None:
            console.print(f"{name}: events from seq {out.lost_from} on are lost", markup=False)
        for origin, (lo, hi) in out.discarded.items():
            console.print(
                f"{name}: {prefix}discard {origin}'s own events with origin times {lo}..{hi}, stored only "
                "here (accepted, DR0)",
                markup=False,
            )
        for r in out.progress_resets:
            console.print(
                f"  {prefix}reset progress {r['source']}→{r['target']}: {r['from']} → {r['to']} (DR2)",
                markup=False,
            )
        for r in out.rounds:
            written = "" if r["written"] is None else f", {r['written']} event(s) written"
            console.print(
                f"  round {r['round']}: from {', '.join(r['sources'])}{written} (DR4)", markup=False
            )
        for r in out.refused:
            console.print(f"  refused [{r['rule']}] {r['source']}: {r['reason']}", markup=False)
        for source in out.accepted:
            console.print(f"  {_accepted_text(name, source, out.given_up.get(source, {}))}", markup=False)
        console.print(f"{name}: {clock_text(out.clock)}, CVV {vector_text(out.cvv)}", markup=False)
        for line in _lost_lines(name, out.lost_runs, dry_run=out.dry_run):
            console.print(line, markup=False)
        if out.refused and not out.dry_run:
            console.print(
                f"hint: re-run replctl recover location {name} once those neighbours qualify, "
                f"or accept the loss with --accept-loss",
                markup=False,
            )

    def question(_preview: Any) -> str | None:
        if not accept_loss or dry_run:
            return None
        return (
            f"recover {name} accepting the loss of what its neighbours deleted (DR5) and of events only it "
            "stores or its backup holds (DR0, BK3)?"
        )

    run(ctx, action, render, effect=Effect.OPERATION, question=question)


def register(root: typer.Typer) -> None:
    """Attach `recover` to the root app."""
    root.add_typer(recover_app, name="recover")


def clock_text(clock: Mapping[str, int | None]) -> str:
    """A's clock through the recovery (DR1), as `recover location` prints it: `clock 3 → 6`, `clock unchanged
    at 3`, or, in a dry run whose rounds write events, where it starts them: `clock 3 → 5 (the events
    recovered take the seqs after it)`, `clock 3 (...)` when T is the clock it had.

    The events recovered take seqs after T, the floor (DR1), as many as the passes examine: only the run knows
    where the clock ends, and when they examine nothing it stays at T, so the dry run promises no move.
    """
    before, after = clock["before"], clock["after"]
    if after is None:
        floor = clock.get("floor", before)
        start = f"clock {before}" if floor == before else f"clock {before} → {floor}"
        return f"{start} (the events recovered take the seqs after it)"
    return f"clock unchanged at {before}" if after == before else f"clock {before} → {after}"


def _restored_text(name: str, lost_from: int, *, dry_run: bool) -> str:
    """What a restore does to A's own log (BK2): it becomes the backup's events, seqs up to `lost_from` - 1;
    the events after the backup are not lost by that: they come back from the neighbours that hold them
    (DR4), and what none holds is named by the lines on what is lost for good (`_lost_lines`)."""
    last = lost_from - 1
    rebuilt, after = (
        ("empty", "the events it held") if last < 1 else (f"up to seq {last}", f"its events after seq {last}")
    )
    verb = "would be rebuilt" if dry_run else "is rebuilt"
    back = "would come" if dry_run else "come"
    return (
        f"{name}: its log {verb} from the backup {rebuilt}; {after} {back} back from the neighbours that "
        "hold them (BK2, DR4)"
    )


def _accepted_text(name: str, source: str, given_up: Mapping[str, list[int]]) -> str:
    """One neighbour accepted with --accept-loss (DR5), as the JSON's `given_up` has it: the origin times the
    merge of its DVV gave up, or, when A lacked nothing it deleted, that nothing was given up for it."""
    if not given_up:
        nothing = f"{name} lacked nothing {source} deleted"
        return f"accepted {source}'s refusal without giving anything up ({nothing}); {source}→{name} unblocked (DR5)"
    text = ", ".join(f"{o}: {lo}..{hi}" for o, (lo, hi) in given_up.items())
    return f"accepted the loss of what {source} deleted ({text}); {source}→{name} unblocked (DR5)"


def _lost_lines(name: str, lost: Mapping[str, list[list[int]] | None], *, dry_run: bool) -> list[str]:
    """A recovery's `lost_runs` for people: what no source, backup or blocked neighbour holds (the disaster
    or the consent took it), and what a dry run, or a run, cannot tell (None: a filtered source's pass, DR3)."""
    known = {o: r for o, r in lost.items() if r is not None}
    unknown = sorted(set(lost) - set(known))
    lines = []
    if known:
        text = ", ".join(
            f"{o}: " + " and ".join(f"{lo}..{hi}" for lo, hi in runs) for o, runs in known.items()
        )
        lines.append(f"{name}: events {text} {'would be' if dry_run else 'are'} lost for good")
    if unknown and dry_run:
        lines.append(f"{name}: what of {', '.join(unknown)} is lost is known only by running")
    elif unknown:
        # The run's None: its filtered pass left out events of these origins that the location may have held.
        lines.append(
            f"{name}: whether events of {', '.join(unknown)} it held are lost cannot be told: after the "
            "filtered source's pass (DR3), events of theirs its clock covered are not back"
        )
    return lines
