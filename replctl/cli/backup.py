"""`replctl backup create|list|show|verify|prune` (rules.md BK1; cli.md)."""

from __future__ import annotations

import shlex
from typing import Annotated, Any

import typer
from rich.table import Table

from replctl.cli.boundary import Effect, run
from replctl.cli.context import AppContext
from replctl.cli.output import stdout, timestamp_text
from replctl.cli.render import cell, fitted_table, render_unrecoverable, value_text, vector_text
from replctl.masking import mask
from replctl.services.backup_outcomes import BackupChecks, BackupList, BackupShown, BackupsMade, PruneOutcome

app = typer.Typer(help="Backups of location logs (BK1–BK3).", no_args_is_help=True)


def _table(backups: list[dict[str, Any]]) -> Table:
    # Fits 80 columns with the id whole (it is what `backup show ID` and `recover --from-backup ID` take; issue
    # 18). No `created` column: the id already says when, in UTC (LOC-yyyymmddThhmmssZ-...); --json and
    # `backup show` give the exact time.
    table = fitted_table(("id", "location"), ("seq", "events", "segments", "reused", "bytes"))
    for b in backups:
        table.add_row(
            cell(b["id"]),
            cell(b["location"]),
            str(b["seq"]),
            str(b["events"]),
            str(b["segments"]),
            str(b["segments_reused"]),
            str(b["bytes"]),
        )
    return table


@app.command("create")
def create(
    ctx: typer.Context,
    locations: Annotated[
        list[str] | None, typer.Argument(help="Locations (default: every active one).")
    ] = None,
    to: Annotated[
        str | None,
        typer.Option(
            "--to", metavar="URI", help="Backup store, apart from the log store (default: backup_store)."
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show which segments would be copied or reused; copy nothing.")
    ] = False,
) -> None:
    """Back up locations' logs: their segment files at one catalog version plus a manifest (incremental)."""

    def action(app: AppContext) -> BackupsMade:
        from replctl.services import backups
        from replctl.storeroots import check_root_text

        if to is not None:
            check_root_text(to, "--to")  # an empty one would read as the configured backup store
        return backups.create(
            app.catalog(),
            app.checked_store(),  # a foreign store, or a catalog older than it, is refused (exit 6)
            app.backups(to),
            list(locations or []),
            reason=app.reason,
            dry_run=dry_run or app.planning,
            # What a Ctrl-C tells to run for the locations left: with the store given, masked as any text.
            again=" ".join(["replctl backup create", *(["--to", mask(shlex.quote(to))] if to else [])]),
        )

    def render(app: AppContext, outcome: BackupsMade) -> None:
        # Finding 6: backups made while another location was refused are partial work (exit 5, the outcome's
        # completion); a dry run exits 0 and says the same, as every dry run of partial work does.
        out = outcome.to_json()
        for b in out["backups"]:
            head = (
                f"would back up {b['location']}" if out["dry_run"] else f"backup {b['id']}: {b['location']}"
            )
            stdout().print(
                f"{head} at seq {b['seq']}, {b['events']} event(s) in {b['segments']} segment(s), "
                f"{b['segments_reused']} reused, {len(b['copied'])} copied ({b['bytes_copied']} bytes)",
                markup=False,
            )
            if b["segments_recopied"]:
                # BK1: an earlier backup's copy that lost a file is copied again, not reused.
                verb = "would copy" if out["dry_run"] else "copied"
                stdout().print(
                    f"  {verb} {b['segments_recopied']} segment(s) again: their earlier copies were missing "
                    "or of another size",
                    markup=False,
                )
        for r in out["refused"]:
            error = r["error"]
            verb = "would refuse" if out["dry_run"] else "refused"
            stdout().print(f"{verb} {r['location']}: {error['message']}", markup=False, soft_wrap=True)
            if error.get("hint"):
                stdout().print(f"hint: {error['hint']}", markup=False, soft_wrap=True)

    # Before `run`: its --plan-out check must not let the plan land in the store this command writes to.
    ctx.obj.named_backup_store = to
    run(ctx, action, render, effect=Effect.OPERATION)


@app.command("list")
def list_(ctx: typer.Context, location: Annotated[str | None, typer.Argument()] = None) -> None:
    """Complete backups (those whose manifest was written), oldest first."""

    def action(app: AppContext) -> BackupList:
        from replctl.services import backups

        # No store check: the listing reads the backup store and the catalog's id only, never a log or the
        # catalog's state, and it is what an operator reads to choose a backup once the log store is lost.
        if location is not None:
            backups.check_location(app.catalog(), location)
        return backups.listing(app.catalog(), app.backups(), location)

    def render(app: AppContext, outcome: BackupList) -> None:
        stdout().print(_table(list(outcome.backups)))

    run(ctx, action, render)


@app.command("show")
def show(ctx: typer.Context, backup_id: Annotated[str, typer.Argument(metavar="ID")]) -> None:
    """One backup's manifest."""

    def action(app: AppContext) -> BackupShown:
        from replctl.services import backups

        return backups.show(app.catalog(), app.backups(), backup_id)

    def render(app: AppContext, outcome: BackupShown) -> None:
        m = outcome.manifest.to_json()
        console = stdout()
        for key in (
            "id",
            "location",
            "created_at",
            "who",
            "reason",
            "catalog_version",
            "seq",
            "deleted_upto",
            "logical_deleted_upto",
            "cvv",
            "dvv",
            "replctl_version",
        ):
            # The one text style (issue 18): vectors as {A:2}, times RFC 3339 Z, nothing as `-`.
            value = m[key]
            if key in ("cvv", "dvv"):
                text = vector_text(value)
            elif key == "created_at":
                text = timestamp_text(value)
            else:
                text = value_text(value)
            console.print(f"{key}: {text}", markup=False)
        table = Table("segment", "seq", "events", "bytes", "digest")
        for s in m["segments"]:
            table.add_row(
                cell(s["path"]),
                f"{s['seq_lo']}..{s['seq_hi']}",
                str(s["count"]),
                str(s["bytes"]),
                s["digest"][:16],
            )
        console.print(table)

    run(ctx, action, render)


@app.command("verify")
def verify(
    ctx: typer.Context, ids: Annotated[list[str] | None, typer.Argument(metavar="ID...")] = None
) -> None:
    """Check the backups (default: all): every segment copy against its manifest's sizes and digest, and the
    invariants I1–I4, I7 on the backup's own events (never the live log); exit 6 if one is damaged."""

    def action(app: AppContext) -> BackupChecks:
        from replctl.services import backups

        # The verdict reads the backup store only, so it needs no log store (a disaster may have taken it).
        # The catalog and the live log are opened only for a damaged backup, for the hint on how to repair it,
        # and the store is checked first (exit 6 `store-not-found`, `catalog-behind`, ... as every command
        # that reads a log): a mistyped --store looked like a damaged log, and the hint then said to recover
        # with --accept-loss. A store that fails the check leaves the generic hint (`BackupChecks.error`).
        return backups.verify(
            app.catalog(), app.backups(), list(ids or []), live=lambda: (app.catalog(), app.checked_store())
        )

    def render(app: AppContext, outcome: BackupChecks) -> None:
        # A damaged backup exits 6 (the outcome's completion); the text says which and why, and the way out.
        console = stdout()
        for b in outcome.checks:
            state = "ok" if b.ok else "DAMAGED: " + "; ".join(b.problems)
            console.print(f"{b.id}: {state}", markup=False, soft_wrap=True)
        error = outcome.error
        if error is not None and error.hint:
            console.print(f"hint: {error.hint}", markup=False, soft_wrap=True)

    run(ctx, action, render)


@app.command("prune")
def prune(
    ctx: typer.Context,
    location: Annotated[str | None, typer.Argument()] = None,
    keep_last: Annotated[
        int | None, typer.Option("--keep-last", help="Keep the newest N per location.")
    ] = None,
    older_than: Annotated[
        str | None, typer.Option("--older-than", metavar="DURATION", help="Remove backups older (30d, 12h).")
    ] = None,
    require_recoverable: Annotated[
        bool,
        typer.Option(
            "--require-recoverable",
            help="Refuse (exit 3) a prune that would leave a location unrecoverable (BK3, BK4).",
        ),
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would be removed.")] = False,
) -> None:
    """Remove old backups; a segment file that a kept backup lists is never removed.

    The locations the prune would leave unrecoverable (BK3: their newest backup goes) are named first; with
    --require-recoverable or the catalog policy require_recoverable, such a prune is refused (BK4).
    """

    def action(app: AppContext) -> PruneOutcome:
        from replctl.services import backups

        if location is not None:
            backups.check_location(app.catalog(), location)
        # BK3 and BK4 judge from the catalog: an older copy of it (exit 6, catalog-behind) would take a stale
        # backup for the newest and remove the one that keeps a location recoverable.
        app.checked_store()
        # `app.planning`: --plan-out, and the dry run shown before the confirmation question (cli.confirm),
        # remove nothing.
        return backups.prune(
            app.catalog(),
            app.backups(),
            location,
            keep_last=keep_last,
            older_than=older_than,
            now=app.now,
            require_recoverable=require_recoverable or app.settings.require_recoverable,
            reason=app.reason,
            dry_run=dry_run or app.planning,
        )

    def render(app: AppContext, out: PruneOutcome) -> None:
        verb = "would remove" if out.dry_run else "removed"
        render_unrecoverable(stdout(), list(out.makes_unrecoverable), dry_run=out.dry_run)
        for backup_id in out.removed:
            stdout().print(f"{verb} backup {backup_id}", markup=False)
        stdout().print(
            f"{verb} {len(out.removed)} backup(s) and {len(out.files_removed)} segment file(s); "
            f"{len(out.kept)} kept",
            markup=False,
        )

    def question(preview: PruneOutcome) -> str | None:
        # Issue 14: a removed backup is gone for good; nothing to remove, or a dry run, asks nothing.
        if dry_run or not preview.removed:
            return None
        return f"remove {len(preview.removed)} backup(s) for good?"

    run(ctx, action, render, effect=Effect.OPERATION, question=question)


def register(root: typer.Typer) -> None:
    """Attach `backup` to the root app."""
    root.add_typer(app, name="backup")
