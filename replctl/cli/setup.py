"""`init`, `db upgrade|current`, `config show` and `status`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from replctl.cli.boundary import Effect, run
from replctl.cli.context import AppContext
from replctl.cli.output import stdout
from replctl.errors import InvalidInput

if TYPE_CHECKING:
    from replctl.services.setup import CatalogCopied, Initialised, SchemaRevision, Upgraded, Versions
    from replctl.services.shown_settings import SettingsShown
    from replctl.services.status import StatusView

db_app = typer.Typer(help="Catalog schema migrations (Alembic).", no_args_is_help=True)
config_app = typer.Typer(help="Resolved configuration.", no_args_is_help=True)


def init(ctx: typer.Context) -> None:
    """Create the catalog (migrated to head) and the log store; safe to re-run."""

    def action(app: AppContext) -> Initialised:
        from replctl.services import setup

        return setup.init(app.installer())

    def render(_app: AppContext, out: Initialised) -> None:
        console = stdout()
        state = "created" if out.created else "already there"
        console.print(f"catalog {state}: {out.db} (revision {out.revision})", markup=False)
        console.print(f"log store: {out.store}", markup=False)
        console.print("next: replctl location add NAME", markup=False)

    run(ctx, action, render, effect=Effect.UNPLANNED)


@db_app.command("upgrade")
def db_upgrade(ctx: typer.Context) -> None:
    """Migrate the catalog to the newest schema revision."""

    def action(app: AppContext) -> Upgraded:
        from replctl.services import setup

        return setup.upgrade(app.installer())

    def render(_app: AppContext, out: Upgraded) -> None:
        stdout().print(f"catalog at revision {out.revision} (was {out.previous or 'empty'})", markup=False)
        if out.repairs.repaired_prunings:
            stdout().print(
                "restored the vector entries of the clock prunings of "
                f"{', '.join(out.repairs.repaired_prunings)} (RET2, RET4)",
                markup=False,
            )
        if out.repairs.cleared_removed_progress:
            stdout().print(
                "cleared the progress of removed connections left past their source's log (DR2): "
                + ", ".join(f"{source}→{target}" for source, target in out.repairs.cleared_removed_progress),
                markup=False,
            )

    run(ctx, action, render, effect=Effect.UNPLANNED)


@db_app.command("current")
def db_current(ctx: typer.Context) -> None:
    """Print the catalog's schema revision and the newest one this replctl knows."""

    def action(app: AppContext) -> SchemaRevision:
        from replctl.services import setup

        return setup.current(app.installer())

    def render(_app: AppContext, out: SchemaRevision) -> None:
        note = "up to date" if out.up_to_date else "behind: run replctl db upgrade"
        stdout().print(f"revision {out.revision or 'none'} (head {out.head}, {note})", markup=False)

    run(ctx, action, render)


@db_app.command("backup")
def db_backup(
    ctx: typer.Context, file: Annotated[Path, typer.Argument(metavar="FILE", help="Where to write the copy.")]
) -> None:
    """Copy a SQLite catalog with SQLite's online backup API (PostgreSQL: use pg_dump)."""

    def action(app: AppContext) -> CatalogCopied:
        from replctl.services import setup

        # A copy named like the catalog's -wal or -journal file would be replayed into it by SQLite.
        app.check_output(file, "db backup", "the copy")
        return setup.backup_catalog(app.installer(), file)

    def render(_app: AppContext, out: CatalogCopied) -> None:
        stdout().print(f"catalog copied to {out.file} ({out.bytes} bytes)", markup=False)

    run(ctx, action, render)


@config_app.command("show")
def config_show(ctx: typer.Context) -> None:
    """Print every resolved setting and where it came from (flag, env, config, default)."""

    def action(app: AppContext) -> SettingsShown:
        from replctl.services import shown_settings

        return shown_settings.show(app.settings, app.spark_choice)

    def render(_app: AppContext, out: SettingsShown) -> None:
        from replctl.cli.render import value_text

        table = Table("setting", "value", "from")
        for setting in out.settings:
            table.add_row(setting.name, value_text(setting.value), setting.source)
        stdout().print(table)

    run(ctx, action, render)


def status(
    ctx: typer.Context,
    watch: Annotated[
        float | None, typer.Option("--watch", metavar="SECONDS", min=0.5, help="Refresh every SECONDS.")
    ] = None,
    wide: Annotated[bool, typer.Option("--wide", help="Long texts in the tables, not below them.")] = False,
) -> None:
    """Locations, connections (state, progress, lag, why they wait), version vectors and pending deletions."""

    def action(app: AppContext) -> StatusView:
        from replctl.services import status as status_service

        return status_service.status(
            app.catalog(),
            app.checked_store(),
            manifests=app.manifests(),
            require_recoverable=app.settings.require_recoverable,
        )

    def render(app: AppContext, out: StatusView) -> None:
        from replctl.cli.render import render_status

        render_status(stdout(), out, wide=wide)

    app: AppContext = ctx.obj
    if watch is not None and app.json:
        run(ctx, _refuse_watch_json)
    # Under --plan-out, `run` refuses the read-only command before anything is drawn.
    if watch is not None and not app.planning:
        _watch(ctx, watch, wide)
    run(ctx, action, render)


def _refuse_watch_json(_app: AppContext) -> None:
    raise InvalidInput(
        "--watch redraws a text display and cannot be combined with --json",
        code="bad-option",
        hint="drop --watch, or poll `replctl --json status` from the script",
    )


def _watch(ctx: typer.Context, seconds: float, wide: bool) -> None:
    """Redraw the text status every `seconds` until Ctrl-C (exit 0) or SIGTERM (exit 143).

    On a terminal Rich's Live display redraws it in place; piped (a log file, `| tail`), Live would print nothing
    until the end, so each interval prints one snapshot under a line with its time instead (issue 18).
    """
    import io
    import signal
    import time
    from datetime import UTC, datetime

    from rich.live import Live
    from rich.text import Text

    from replctl.cli.interrupt import ctrl_c_stops_cleanly, interrupted_exit_code
    from replctl.cli.output import emit_error, timestamp_text
    from replctl.cli.render import render_status
    from replctl.errors import ReplctlError
    from replctl.services import status as status_service

    app: AppContext = ctx.obj
    console = stdout()

    def snapshot() -> Text:
        capture = Console(file=io.StringIO(), record=True, width=console.width, highlight=False)
        render_status(
            capture,
            status_service.status(
                app.catalog(),
                app.checked_store(),
                manifests=app.manifests(),
                require_recoverable=app.settings.require_recoverable,
            ),
            wide=wide,
        )
        # Text, not a string: Rich would read the notes' `[1]` as markup.
        return Text(capture.export_text())

    try:
        # Ctrl-C stops the watch as it stops every other command (`cli.interrupt`), also when the shell that
        # started it ignores SIGINT (a background job of a script), where the interpreter installs no handler.
        with ctrl_c_stops_cleanly():
            if console.is_terminal:
                with Live(snapshot(), console=console, auto_refresh=False) as live:
                    while True:
                        time.sleep(seconds)
                        live.update(snapshot(), refresh=True)
            while True:
                console.print(f"status at {timestamp_text(datetime.now(UTC))}", markup=False)
                console.print(snapshot())
                console.file.flush()
                time.sleep(seconds)
    except KeyboardInterrupt:
        stopped = interrupted_exit_code()
        raise typer.Exit(0 if stopped == 128 + signal.SIGINT else stopped) from None
    except ReplctlError as exc:
        emit_error(exc, as_json=False)
        raise typer.Exit(exc.exit_code) from None
    finally:
        app.close()


def version(ctx: typer.Context) -> None:
    """Print the versions of replctl, Spark (pyspark), Java and the catalog schema (this one's and the newest)."""

    def action(app: AppContext) -> Versions:
        from importlib.metadata import version as installed

        from replctl import __version__
        from replctl.services import setup

        return setup.versions(
            app.installer(), replctl=__version__, spark=installed("pyspark"), java=_java_version()
        )

    def render(_app: AppContext, out: Versions) -> None:
        catalog = out.catalog
        if catalog.error is not None:
            schema = f"unknown ({catalog.error}); this replctl writes {catalog.head}"
        else:
            schema = f"{catalog.revision or 'none'} (newest {catalog.head})"
        console = stdout()
        for name, value in (
            ("replctl", out.replctl),
            ("spark", out.spark),
            ("java", out.java or "not found (install a Java runtime 17 or newer, or set JAVA_HOME)"),
            ("catalog schema", schema),
        ):
            console.print(f"{name}: {value}", markup=False, soft_wrap=True)

    run(ctx, action, render)


def _java_version() -> str | None:
    """The Java runtime Spark would start (JAVA_HOME, else `java` on PATH), as `java -version` names it."""
    import os
    import re
    import shutil
    import subprocess

    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).exists():
        return None
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r'version "([^"]+)"', done.stderr)
    return found.group(1) if found else None


def register(app: typer.Typer) -> None:
    """Attach these commands to the root app."""
    app.command("init")(init)
    app.command("version")(version)
    app.add_typer(db_app, name="db")
    app.add_typer(config_app, name="config")
    app.command("status")(status)
