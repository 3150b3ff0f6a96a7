"""`replctl replicate`: passes over the connections, and the pending deletions they unblock (DEL4)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from replctl.cli.boundary import Effect, run
from replctl.cli.context import AppContext
from replctl.cli.options import DryRun
from replctl.cli.output import stdout
from replctl.cli.render import Notes, fitted_table, recovery_wait, render_unrecoverable, state_text
from replctl.errors import InvalidInput

if TYPE_CHECKING:
    from replctl.services.replication import ReplicationOutcome


def replicate(
    ctx: typer.Context,
    endpoints: Annotated[
        list[str] | None, typer.Argument(metavar="SRC DST", help="One connection; default: all.")
    ] = None,
    dry_run: DryRun = False,
    wide: Annotated[bool, typer.Option("--wide", help="Long texts in the table, not below it.")] = False,
) -> None:
    """One pass over SRC→DST, or every connection until nothing changes."""

    def action(app: AppContext) -> ReplicationOutcome:
        from replctl.services import replication
        from replctl.services.backups import DeletionGuard

        # BK4 applies to the pending deletions the run retries as to the `delete` that asked for them.
        guard = DeletionGuard(tuple(app.manifests() or ()), app.settings.require_recoverable)
        if endpoints and len(endpoints) != 2:
            raise InvalidInput(
                "give both SRC and DST, or neither",
                code="bad-option",
                hint="replctl replicate A B   or   replctl replicate",
            )
        if endpoints:
            return replication.replicate_one(
                app.catalog(),
                app.engine(),
                endpoints[0],
                endpoints[1],
                reason=app.reason,
                dry_run=dry_run or app.planning,
                guard=guard,
            )
        return replication.replicate_all(
            app.catalog(), app.engine(), reason=app.reason, dry_run=dry_run or app.planning, guard=guard
        )

    def render(app: AppContext, out: ReplicationOutcome) -> None:
        # Issue 18: with nothing to do, one line, not a table of "nothing-new" rows (a full replicate leaves
        # them out of its passes already; `replicate SRC DST` reports its one pass).
        passes = [(n, p) for n, p in out.passes if p.action != "nothing-new"]
        if not passes:
            idle = ", ".join(f"{p.source}→{p.target}" for _, p in out.passes)
            stdout().print(
                f"nothing to replicate: {idle} has nothing new" if idle else "nothing to replicate",
                markup=False,
            )
        notes = Notes(wide)
        # Issue 18: a connection seen again in a later round of a full replicate is told apart by a round
        # column, shown only when there was more than one round.
        rounds = len({n for n, _ in passes}) > 1
        # Issue 18: names and states never cut at 80 columns; the "why" of each pass is a note below.
        table = fitted_table(
            ("round", "connection", "state", "action") if rounds else ("connection", "state", "action"),
            ("read", "written", "skip c/f", "blocked", "progress", "why"),
        )
        for n, p in passes:
            arrow = f"{p.source}→{p.target}"
            table.add_row(
                *((str(n),) if rounds else ()),
                arrow,
                state_text(p.state),
                p.action,
                _count(p.examined),
                _count(p.written),
                f"{_count(p.skipped_causal)}/{_count(p.skipped_filter)}",
                "" if p.blocked_at is None else str(p.blocked_at),
                _count(p.progress),
                notes.cell(p.reason, "", f"{arrow}: {p.reason}"),
            )
        if passes:
            stdout().print(table)
            stdout().print(
                "read: events examined; skip c/f: skipped as held already (CF1) / by the filter; "
                "blocked: the seq the pass stopped at (RFC2)"
                + ("; ?: known only by running the pass" if _unknown(out) else ""),
                markup=False,
                soft_wrap=True,
            )
            notes.print(stdout())
        for d in out.deletions:
            render_unrecoverable(
                stdout(), d.get("makes_unrecoverable") or (), dry_run=out.dry_run or d["pending"]
            )
            if d.get("reason", "").startswith("waits [BK4]"):
                why = d["reason"].removeprefix("waits ")
                wait = ": would still wait" if out.dry_run else " still waits"
                stdout().print(
                    f"pending deletion at {d['location']}{wait} {why}", markup=False, soft_wrap=True
                )
            elif out.dry_run:
                stdout().print(_planned_retry(d), markup=False)
            elif d["pending"]:
                # A damaged log's deletion waits for its recovery, not for a target (DR0): none is named.
                held = ", ".join(b["target"] for b in d["blocked_by"])
                waits = recovery_wait(d["location"], "damaged" if d.get("damaged") else None)
                stdout().print(
                    f"pending deletion at {d['location']} still waits"
                    + (f": {waits}" if waits is not None else f" for {held}")
                    + f"; physically deleted up to {d['deleted_upto']} of {d['requested_upto']}",
                    markup=False,
                    soft_wrap=True,
                )
            else:
                stdout().print(
                    f"pending deletion at {d['location']} completed: physically deleted up to "
                    f"{d['deleted_upto']}",
                    markup=False,
                )

    run(ctx, action, render, effect=Effect.OPERATION)


def _count(value: int | None) -> str:
    """A pass's count as the table shows it: "?" when a dry run cannot know it without running (finding 5)."""
    return "?" if value is None else str(value)


def _unknown(out: ReplicationOutcome) -> bool:
    """Whether a pass of the run has a count only running it tells."""
    return any(p.examined is None or p.progress is None for _, p in out.passes)


def _planned_retry(d: dict[str, Any]) -> str:
    """A dry run's line for a pending deletion the run retries after its passes (DEL4)."""
    text = f"pending deletion at {d['location']}: "
    if d.get("damaged"):
        return text + f"would still wait: {recovery_wait(d['location'], 'damaged')}"
    if not d["decided"]:
        return text + (
            f"decided once the run has written to {', '.join(d['depends_on'])}; it would physically "
            f"delete at least up to {d['deleted_upto']} of {d['requested_upto']}"
        )
    satisfied = "".join(f"; {s['target']} is satisfied by {s['pass']}" for s in d["satisfied_by"])
    if d["pending"]:
        held = ", ".join(b["target"] for b in d["blocked_by"])
        return text + (
            f"would still wait for {held}; would physically delete up to {d['deleted_upto']} of "
            f"{d['requested_upto']}{satisfied}"
        )
    return text + f"would complete: physically deleted up to {d['deleted_upto']}{satisfied}"


def register(root: typer.Typer) -> None:
    """Attach `replicate` to the root app."""
    root.command("replicate")(replicate)
