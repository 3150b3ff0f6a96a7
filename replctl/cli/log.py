"""`replctl log append|show|verify|compact`: the local event logs."""

from __future__ import annotations

import sys
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from replctl.cli.boundary import Effect, run
from replctl.cli.completion import location_names
from replctl.cli.context import AppContext
from replctl.cli.options import DryRun
from replctl.cli.output import emit_json_stream, page_through, stdout
from replctl.cli.render import cell, vector_text
from replctl.core.events import MAX_PAYLOAD_BYTES
from replctl.errors import InvalidInput, Refused, ReplctlError

if TYPE_CHECKING:
    from replctl.services.compaction import CompactionOutcome
    from replctl.services.logs import AppendOutcome, LogPage, VerifyOutcome

log_app = typer.Typer(help="Local event logs: append, show, verify.", no_args_is_help=True)


@log_app.command("append")
def append(
    ctx: typer.Context,
    location: Annotated[str, typer.Argument(autocompletion=location_names)],
    event: Annotated[
        list[str] | None, typer.Option("--event", metavar="JSON", help="An event as JSON; repeatable.")
    ] = None,
    file: Annotated[Path | None, typer.Option("--file", help="A .jsonl or .parquet file of events.")] = None,
    generate: Annotated[int | None, typer.Option("--generate", help="N synthetic events.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of --generate.")] = 0,
    max_payload_bytes: Annotated[
        int,
        typer.Option(
            "--max-payload-bytes",
            envvar="REPLCTL_MAX_PAYLOAD_BYTES",
            min=1,
            help="Refuse an event whose payload's JSON text is longer (UTF-8 bytes).",
        ),
    ] = MAX_PAYLOAD_BYTES,
    dry_run: DryRun = False,
) -> None:
    """Append events at a read-write location (EM1 assigns seq, origin, origin_time and vt)."""

    def action(app: AppContext) -> AppendOutcome:
        from replctl.services import logs
        from replctl.services.operations import record_applied_refusal

        try:
            source = logs.read_source(
                event or [],
                file,
                generate,
                seed,
                max_payload_bytes,
                event_files=app.event_files(),
                location=location,
            )
        except Refused as refusal:
            # Under `replctl apply`: a `.jsonl` input changed since the plan was made (exit 3, stale-plan) is
            # journalled as the append refused, like a Parquet input found changed inside the operation.
            with suppress(ReplctlError):  # opening the catalog may fail too; the refusal matters more
                record_applied_refusal(
                    app.catalog(),
                    command=logs.APPEND_COMMAND,
                    args={"location": location},
                    reason=app.reason,
                    refusal=refusal,
                )
            raise
        return logs.append(
            app.catalog(), app.engine(), location, source, reason=app.reason, dry_run=dry_run or app.planning
        )

    def render(app: AppContext, out: AppendOutcome) -> None:
        if out.resumed_from:
            # REP3: the same append was interrupted after its commit; nothing was appended again.
            stdout().print(
                f"already appended by operation {out.resumed_from} before it was interrupted: "
                f"seq {out.seq_from}..{out.seq_to}" + (" (dry run)" if out.dry_run else ""),
                markup=False,
            )
        elif out.dry_run:
            count = out.appended or "the file's"
            stdout().print(
                f"would append {count} event(s) to {location} from seq {out.seq_from}", markup=False
            )
        else:
            stdout().print(
                f"appended {out.appended} event(s) to {location}: seq {out.seq_from}..{out.seq_to}",
                markup=False,
            )

    run(ctx, action, render, effect=Effect.OPERATION)


# On a terminal `log show` starts with the newest events, as `git log` pages: a long log is never dumped whole.
NEWEST_ON_A_TERMINAL = 50


@log_app.command("show")
def show(
    ctx: typer.Context,
    location: Annotated[str, typer.Argument(autocompletion=location_names)],
    from_seq: Annotated[
        int | None, typer.Option("--from", min=0, metavar="SEQ", help="First seq to show.")
    ] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="At most N events.")] = None,
    every: Annotated[bool, typer.Option("--all", help="Every stored event (on a terminal too).")] = False,
    no_pager: Annotated[
        bool, typer.Option("--no-pager", help="On a terminal, print instead of paging through $PAGER.")
    ] = False,
) -> None:
    """The physically stored events of a log in seq order.

    On a terminal, without --from, --limit or --all, only the newest 50 events are shown, and a table longer
    than the screen pages through $PAGER (default less -FRX; PAGER=cat or --no-pager prints it). Piped, and
    under --json (which streams the events), every stored event is, as the runbooks read it.
    """

    def action(app: AppContext) -> LogPage:
        from replctl.services import logs

        if every and limit is not None:
            raise InvalidInput(
                "give --all or --limit N, not both",
                code="bad-option",
                hint=f"replctl log show {location} --all",
            )
        newest = None
        if not (app.json or every or limit is not None or from_seq is not None) and sys.stdout.isatty():
            newest = NEWEST_ON_A_TERMINAL
        return logs.show_page(
            app.catalog(), app.engine(), location, from_seq=from_seq or 0, limit=limit, newest=newest
        )

    def render(app: AppContext, page: LogPage) -> None:
        if app.json:
            emit_json_stream(page.head(), "events", page.events)
            return
        table = Table(
            "seq",
            "origin",
            "origin_time",
            "vt",
            "type",
            "key",
            "tags",
            "payload",
            title=f"{location}: seq {page.seq}, deleted up to {page.deleted_upto} "
            f"(logically {page.logical_deleted_upto})",
        )
        shown = hidden_shown = 0
        for e in page.events:
            hidden = e["seq"] <= page.logical_deleted_upto
            hidden_shown += hidden
            shown += 1
            table.add_row(
                str(e["seq"]) + ("*" if hidden else ""),
                e["origin"],
                str(e["origin_time"]),
                vector_text(e["vt"]),
                cell(e["type"]),
                cell(e["key"]),
                cell(",".join(e["tags"] or [])),
                cell(e["payload"]),
            )
        console = stdout()
        with console.capture() as captured:
            console.print(table)
            if hidden_shown:
                console.print(
                    "* logically deleted: hidden from local reading, kept for replication (DEL1)",
                    markup=False,
                )
            if page.newest is not None and shown < page.stored:
                console.print(
                    f"the newest {shown} of {page.stored} stored events; every one: replctl log show "
                    f"{location} --all (or --from SEQ, --limit N)",
                    markup=False,
                    soft_wrap=True,
                )
        text = captured.get()
        # Like git: only a terminal pages, and only when the text is longer than the screen.
        if not no_pager and sys.stdout.isatty() and text.count("\n") > console.height:
            page_through(text)
        else:
            sys.stdout.write(text)
            sys.stdout.flush()

    run(ctx, action, render)


@log_app.command("verify")
def verify(ctx: typer.Context, locations: Annotated[list[str] | None, typer.Argument()] = None) -> None:
    """Check the invariants of rules.md §9 (I1–I7); exit 3 naming the first violation."""

    def action(app: AppContext) -> VerifyOutcome:
        from replctl.services import logs

        return logs.verify(app.catalog(), app.engine(), list(locations or []))

    def render(app: AppContext, out: VerifyOutcome) -> None:
        console = stdout()
        for log in out.logs:
            if log.ok:
                console.print(f"{log.location}: ok (I1–I7)", markup=False)
            for v in log.violations:
                at = f" at seq {v['seq']}" if v["seq"] is not None else ""
                console.print(
                    f"{log.location}: violation [{v['invariant']}]{at}: {v['message']}", markup=False
                )
            if any(v["invariant"] == "SEG" for v in log.violations):
                # Damage (DR0), whether a file is missing, truncated or overwritten: the way out is recovery.
                console.print(f"hint: {log.hint}", markup=False)
        for v in out.topology:
            console.print(f"topology: violation [I6/{v['code']}]: {v['message']}", markup=False)

    run(ctx, action, render)


@log_app.command("compact")
def compact(
    ctx: typer.Context,
    location: str,
    gc: Annotated[bool, typer.Option("--gc", help="Also remove segment files no catalog row names.")] = False,
    dry_run: DryRun = False,
) -> None:
    """Merge runs of small segments into one (many small passes leave many small files)."""

    def action(app: AppContext) -> CompactionOutcome:
        from replctl.services import compaction

        return compaction.compact(
            app.catalog(), app.engine(), location, gc=gc, reason=app.reason, dry_run=dry_run or app.planning
        )

    def render(app: AppContext, out: CompactionOutcome) -> None:
        verb = "would merge" if out.dry_run else "merged"
        for merged in out.merged:
            stdout().print(
                f"{verb} {merged.count} segments (seq {merged.seq_lo}..{merged.seq_hi}) into one",
                markup=False,
            )
        for path in out.orphans_removed:
            stdout().print(f"{'would remove' if out.dry_run else 'removed'} orphan {path}", markup=False)
        stdout().print(f"{location}: {out.segments_before} → {out.segments_after} segment(s)", markup=False)

    run(ctx, action, render, effect=Effect.OPERATION)


def register(root: typer.Typer) -> None:
    """Attach `log` to the root app."""
    root.add_typer(log_app, name="log")
