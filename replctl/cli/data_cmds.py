"""The data-plane commands: `log append|show|verify` and `replicate`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from replctl.cli.boundary import Effect, run
from replctl.cli.completion import location_names
from replctl.cli.confirm import deletion_question
from replctl.cli.context import AppContext
from replctl.cli.output import emit_json, emit_json_stream, page_through, stdout
from replctl.cli.render import Notes, cell, fitted_table, render_unrecoverable, state_text, vector_text
from replctl.core.events import MAX_PAYLOAD_BYTES
from replctl.errors import InvalidInput

log_app = typer.Typer(help="Local event logs: append, show, verify.", no_args_is_help=True)

DryRun = Annotated[bool, typer.Option("--dry-run", help="Show what would happen; change nothing.")]


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

    def action(app: AppContext) -> Any:
        from replctl.services import logs

        source = logs.read_source(event or [], file, generate, seed, max_payload_bytes, location=location)
        return logs.append(
            app.catalog(), app.engine(), location, source, reason=app.reason, dry_run=dry_run or app.planning
        )

    def render(app: AppContext, out: dict[str, Any]) -> None:
        if app.json:
            emit_json({"ok": True, **out})
        elif out.get("resumed_from"):
            # REP3: the same append was interrupted after its commit; nothing was appended again.
            stdout().print(
                f"already appended by operation {out['resumed_from']} before it was interrupted: "
                f"seq {out['seq_from']}..{out['seq_to']}" + (" (dry run)" if out["dry_run"] else ""),
                markup=False,
            )
        elif out["dry_run"]:
            count = out["appended"] or "the file's"
            stdout().print(
                f"would append {count} event(s) to {location} from seq {out['seq_from']}", markup=False
            )
        else:
            stdout().print(
                f"appended {out['appended']} event(s) to {location}: seq {out['seq_from']}..{out['seq_to']}",
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

    def action(app: AppContext) -> Any:
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
        page = logs.show_page(
            app.catalog(), app.engine(), location, from_seq=from_seq or 0, limit=limit, newest=newest
        )
        return page, newest

    def render(app: AppContext, out: Any) -> None:
        page, newest = out
        if app.json:
            emit_json_stream({"ok": True, **page.header}, "events", page.events)
            return
        header = page.header
        table = Table(
            "seq",
            "origin",
            "origin_time",
            "vt",
            "type",
            "key",
            "tags",
            "payload",
            title=f"{location}: seq {header['seq']}, deleted up to {header['deleted_upto']} "
            f"(logically {header['logical_deleted_upto']})",
        )
        shown = hidden_shown = 0
        for e in page.events:
            hidden = e["seq"] <= header["logical_deleted_upto"]
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
            if newest is not None and shown < page.stored:
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

    def action(app: AppContext) -> Any:
        from replctl.services import logs

        return logs.verify(app.catalog(), app.engine(), list(locations or []))

    def render(app: AppContext, out: dict[str, Any]) -> int:
        bad = [log for log in out["logs"] if not log["ok"]]
        failed = bool(bad or out["topology"])
        if app.json:
            doc: dict[str, Any] = {"ok": not failed, **out}
            if failed:
                first = bad[0]["violations"][0] if bad else out["topology"][0]
                where = f"{bad[0]['location']}: " if bad else ""
                doc["error"] = {
                    "code": first["invariant"],
                    "message": where + first["message"],
                    "hint": "inspect it with: replctl log show " + (bad[0]["location"] if bad else ""),
                }
            emit_json(doc)
        else:
            console = stdout()
            for log in out["logs"]:
                if log["ok"]:
                    console.print(f"{log['location']}: ok (I1–I7)", markup=False)
                for v in log["violations"]:
                    at = f" at seq {v['seq']}" if v["seq"] is not None else ""
                    console.print(
                        f"{log['location']}: violation [{v['invariant']}]{at}: {v['message']}", markup=False
                    )
            for v in out["topology"]:
                console.print(f"topology: violation [I6/{v['code']}]: {v['message']}", markup=False)
        return 3 if failed else 0

    run(ctx, action, render)


@log_app.command("compact")
def compact(
    ctx: typer.Context,
    location: str,
    gc: Annotated[bool, typer.Option("--gc", help="Also remove segment files no catalog row names.")] = False,
    dry_run: DryRun = False,
) -> None:
    """Merge runs of small segments into one (many small passes leave many small files)."""

    def action(app: AppContext) -> Any:
        from replctl.services import compaction

        return compaction.compact(
            app.catalog(), app.engine(), location, gc=gc, reason=app.reason, dry_run=dry_run or app.planning
        )

    def render(app: AppContext, out: dict[str, Any]) -> None:
        if app.json:
            emit_json({"ok": True, **out})
            return
        verb = "would merge" if out["dry_run"] else "merged"
        for merged in out["merged"]:
            stdout().print(
                f"{verb} {merged['from']} segments (seq {merged['seq_lo']}..{merged['seq_hi']}) into one",
                markup=False,
            )
        for path in out["orphans_removed"]:
            stdout().print(f"{'would remove' if out['dry_run'] else 'removed'} orphan {path}", markup=False)
        stdout().print(
            f"{location}: {out['segments_before']} → {out['segments_after']} segment(s)", markup=False
        )

    run(ctx, action, render, effect=Effect.OPERATION)


def replicate(
    ctx: typer.Context,
    endpoints: Annotated[
        list[str] | None, typer.Argument(metavar="SRC DST", help="One connection; default: all.")
    ] = None,
    dry_run: DryRun = False,
    wide: Annotated[bool, typer.Option("--wide", help="Long texts in the table, not below it.")] = False,
) -> None:
    """One pass over SRC→DST, or every connection until nothing changes."""

    def action(app: AppContext) -> Any:
        from replctl.services import replication

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
            )
        return replication.replicate_all(
            app.catalog(), app.engine(), reason=app.reason, dry_run=dry_run or app.planning
        )

    def render(app: AppContext, out: dict[str, Any]) -> int:
        # Issue 14: a connection whose filter failed is marked failed, or waits at a damaged log (DR0), while
        # the others ran: incomplete. Issue 19: so is a pass a concurrent topology change discarded, or one
        # whose locations another operation holds.
        unfinished = {"failed", "damaged", "discarded", "skipped"}
        code = 5 if any(p["action"] in unfinished for p in out["passes"]) and not out["dry_run"] else 0
        if app.json:
            emit_json({"ok": True, **out})
            return code
        # Issue 18: with nothing to do, one line, not a table of "nothing-new" rows (a full replicate leaves
        # them out of its passes already; `replicate SRC DST` reports its one pass).
        passes = [p for p in out["passes"] if p["action"] != "nothing-new"]
        if not passes:
            idle = ", ".join(f"{p['source']}→{p['target']}" for p in out["passes"])
            stdout().print(
                f"nothing to replicate: {idle} has nothing new" if idle else "nothing to replicate",
                markup=False,
            )
        notes = Notes(wide)
        # Issue 18: a connection seen again in a later round of a full replicate is told apart by a round
        # column, shown only when there was more than one round.
        rounds = len({p["round"] for p in passes}) > 1
        # Issue 18: names and states never cut at 80 columns; the "why" of each pass is a note below.
        table = fitted_table(
            ("round", "connection", "state", "action") if rounds else ("connection", "state", "action"),
            ("read", "written", "skip c/f", "blocked", "progress", "why"),
        )
        for p in passes:
            arrow = f"{p['source']}→{p['target']}"
            table.add_row(
                *((str(p["round"]),) if rounds else ()),
                arrow,
                state_text(p["state"]),
                p["action"],
                _count(p["examined"]),
                _count(p["written"]),
                f"{_count(p['skipped_causal'])}/{_count(p['skipped_filter'])}",
                "" if p["blocked_at"] is None else str(p["blocked_at"]),
                _count(p["progress"]),
                notes.cell(p["reason"], "", f"{arrow}: {p['reason']}"),
            )
        if passes:
            stdout().print(table)
            stdout().print(
                "read: events examined; skip c/f: skipped as held already (CF1) / by the filter; "
                "blocked: the seq the pass stopped at (RFC2)"
                + ("; ?: known only by running the pass" if _unknown(out["passes"]) else ""),
                markup=False,
                soft_wrap=True,
            )
            notes.print(stdout())
        for d in out["deletions"]:
            if out["dry_run"]:
                stdout().print(_planned_retry(d), markup=False)
            elif d["pending"]:
                held = ", ".join(b["target"] for b in d["blocked_by"])
                stdout().print(
                    f"pending deletion at {d['location']} still waits for {held}; physically deleted "
                    f"up to {d['deleted_upto']} of {d['requested_upto']}",
                    markup=False,
                )
            else:
                stdout().print(
                    f"pending deletion at {d['location']} completed: physically deleted up to "
                    f"{d['deleted_upto']}",
                    markup=False,
                )
        return code

    run(ctx, action, render, effect=Effect.OPERATION)


def _count(value: int | None) -> str:
    """A pass's count as the table shows it: "?" when a dry run cannot know it without running (finding 5)."""
    return "?" if value is None else str(value)


def _unknown(passes: list[dict[str, Any]]) -> bool:
    """Whether a pass in the table has a count only running it tells."""
    return any(p["examined"] is None or p["progress"] is None for p in passes)


def _planned_retry(d: dict[str, Any]) -> str:
    """A dry run's line for a pending deletion the run retries after its passes (DEL4)."""
    text = f"pending deletion at {d['location']}: "
    if d.get("damaged"):
        return (
            text
            + f"would still wait: its log is damaged (DR0); run: replctl recover location {d['location']}"
        )
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
            help="Refuse (exit 3) a deletion that would leave a location unrecoverable (BK4).",
        ),
    ] = False,
    dry_run: DryRun = False,
) -> None:
    """Delete a log prefix: logically at once, physically as far as every target allows (DEL1–DEL4)."""

    def action(app: AppContext) -> Any:
        from replctl.services import deletion
        from replctl.services.backups import DeletionGuard

        require = require_recoverable or app.settings.require_recoverable
        return deletion.delete(
            app.catalog(),
            app.engine(),
            location,
            upto=upto,
            older_than=older_than,
            logical=logical,
            reason=app.reason,
            dry_run=dry_run or app.planning,
            guard=DeletionGuard(tuple(app.manifests() or ()), require),
        )

    def render(app: AppContext, out: dict[str, Any]) -> int:
        code = 5 if out["pending"] and not out["dry_run"] else 0
        if app.json:
            emit_json({"ok": True, **out})
            return code
        console = stdout()
        render_unrecoverable(console, out)
        if out["dry_run"]:
            would = out["would_delete"]
            console.print(f"would hide seq ≤ {out['logical_deleted_upto']} from local reading", markup=False)
            if would:
                console.print(f"would delete seq {would['from']}..{would['upto']} physically", markup=False)
        else:
            console.print(
                f"{location}: logically deleted up to {out['logical_deleted_upto']}, physically up to "
                f"{out['deleted_upto']}; DVV {vector_text(out['dvv'])}",
                markup=False,
            )
        for b in out["blocked_by"]:
            console.print(
                f"waits [DEL3]: {b['target']} still needs seq {b['first_blocked_seq']}", markup=False
            )
        if out["pending"]:
            if out["pending_upto"] > out["requested_upto"]:
                console.print(
                    f"an earlier request up to {out['pending_upto']} still waits and is kept (DEL4)",
                    markup=False,
                )
            console.print(
                f"the rest waits; it is retried after every replicate run (hint: replctl replicate, "
                f"then replctl delete {location} --upto {out['pending_upto']})",
                markup=False,
            )
        return code

    run(ctx, action, render, effect=Effect.OPERATION, question=deletion_question(location, dry_run))


recover_app = typer.Typer(help="Disaster recovery (DR0–DR5).", no_args_is_help=True)
drill_app = typer.Typer(help="Game-day drills: destroy data as a disaster would.", no_args_is_help=True)


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

    def action(app: AppContext) -> Any:
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

    def render(app: AppContext, out: dict[str, Any]) -> int:
        code = 5 if out["refused"] and not out["dry_run"] else 0
        if app.json:
            emit_json({"ok": True, **out})
            return code
        console = stdout()
        if out.get("nothing_to_do"):
            console.print(f"{name}: the store holds every catalogued event; nothing to recover", markup=False)
            return 0
        prefix = "would " if out["dry_run"] else ""
        if out.get("backup"):
            console.print(f"{name}: {prefix}restore backup {out['backup']} (BK2)", markup=False)
        if out["lost_from"] is not None:
            console.print(f"{name}: events from seq {out['lost_from']} on are lost", markup=False)
        for origin, (lo, hi) in out["discarded"].items():
            console.print(
                f"{name}: {prefix}discard {origin}'s own events with origin times {lo}..{hi}, stored only "
                "here (accepted, DR0)",
                markup=False,
            )
        for r in out["progress_resets"]:
            console.print(
                f"  {prefix}reset progress {r['source']}→{r['target']}: {r['from']} → {r['to']} (DR2)",
                markup=False,
            )
        for r in out["rounds"]:
            written = "" if r["written"] is None else f", {r['written']} event(s) written"
            console.print(
                f"  round {r['round']}: from {', '.join(r['sources'])}{written} (DR4)", markup=False
            )
        for r in out["refused"]:
            console.print(f"  refused [{r['rule']}] {r['source']}: {r['reason']}", markup=False)
        for source in out["accepted"]:
            console.print(
                f"  accepted the loss of what {source} deleted; {source}→{name} unblocked (DR5)", markup=False
            )
        clock = out["clock"]
        # A dry run whose rounds write events cannot know the seqs they take, only the floor T (DR1).
        after = (
            clock["after"] if clock["after"] is not None else f"past {clock.get('floor', clock['before'])}"
        )
        console.print(
            f"{name}: clock {clock['before']} → {after}, CVV {vector_text(out['cvv'])}", markup=False
        )
        for line in _lost_lines(name, out):
            console.print(line, markup=False)
        if out["refused"] and not out["dry_run"]:
            console.print(
                f"hint: re-run replctl recover location {name} once those neighbours qualify, "
                f"or accept the loss with --accept-loss",
                markup=False,
            )
        return code

    def question(_preview: Any) -> str | None:
        if not accept_loss or dry_run:
            return None
        return (
            f"recover {name} accepting the loss of what its neighbours deleted (DR5) and of events only it "
            "stores or its backup holds (DR0, BK3)?"
        )

    run(ctx, action, render, effect=Effect.OPERATION, question=question)


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

    def action(app: AppContext) -> Any:
        from replctl.services import recovery

        return recovery.drill(
            app.catalog(),
            app.engine(),
            location,
            from_seq,
            reason=app.reason,
            dry_run=dry_run or app.planning,
        )

    def render(app: AppContext, out: dict[str, Any]) -> None:
        if app.json:
            emit_json({"ok": True, **out})
            return
        verb = "would destroy" if out["dry_run"] else "destroyed"
        stdout().print(
            f"{verb} {location}'s stored events from seq {from_seq} on "
            f"({len(out['destroyed_segments'])} segment(s) gone"
            + (", one truncated)" if out["truncated_segment"] else ")"),
            markup=False,
        )
        stdout().print(f"next: replctl recover location {location}", markup=False)

    def question(_preview: Any) -> str | None:
        return None if dry_run else f"destroy {location}'s stored events from seq {from_seq} on?"

    run(ctx, action, render, effect=Effect.OPERATION, question=question)


def register(app: typer.Typer) -> None:
    """Attach these commands to the root app."""
    app.add_typer(log_app, name="log")
    app.command("replicate")(replicate)
    app.command("delete")(delete)
    app.add_typer(recover_app, name="recover")
    app.add_typer(drill_app, name="drill")


def _lost_lines(name: str, out: dict[str, Any]) -> list[str]:
    """A recovery's `lost` for people: what no source, backup or blocked neighbour holds (the disaster or
    the consent took it), and what a dry run cannot tell (None: a filtered source's pass decides, DR3)."""
    known = {o: r for o, r in out["lost"].items() if r is not None}
    unknown = sorted(set(out["lost"]) - set(known))
    lines = []
    if known:
        lost = ", ".join(f"{o}: {lo}..{hi}" for o, (lo, hi) in known.items())
        lines.append(f"{name}: events {lost} {'would be' if out['dry_run'] else 'are'} lost for good")
    if unknown:
        lines.append(f"{name}: what of {', '.join(unknown)} is lost is known only by running")
    return lines
