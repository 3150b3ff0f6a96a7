"""`replctl demo`: the whole story on the embedded defaults, narrated, in a fresh folder.

Every step is a real `replctl` command run in this process (so Spark starts once), printed as an operator would
type it, followed by its output. The demo stops at the first step that does not end as expected.
"""

from __future__ import annotations

import io
import json
import shlex
import sys
import tempfile
import time
from contextlib import redirect_stdout
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer

from replctl.cli.output import emit_json, stdout
from replctl.errors import InvalidInput, ReplctlError


@dataclass(frozen=True)
class Step:
    """One narrated command and the exit code the story expects from it."""

    say: str
    args: tuple[str, ...]
    expect: int = 0


def _events(*keys: str) -> tuple[str, ...]:
    out: list[str] = []
    for key in keys:
        out += ["--event", json.dumps({"key": key, "type": "demo"})]
    return tuple(out)


STORY: tuple[Step, ...] = (
    Step("Create the catalog (SQLite) and the log store in this folder.", ("init",)),
    Step(
        "Three read-write locations in a cycle, and D, a read-only leaf behind C.", ("location", "add", "A")
    ),
    Step("", ("location", "add", "B")),
    Step("", ("location", "add", "C")),
    Step("", ("location", "add", "D", "--role", "read-only")),
    Step("Connect A, B and C both ways: a cycle.", ("topology", "add", "A", "B", "--both")),
    Step("", ("topology", "add", "B", "C", "--both")),
    Step("", ("topology", "add", "C", "A", "--both")),
    Step(
        "D hangs off C and only wants events tagged 'ext': a filter on a leaf edge is safe.",
        ("topology", "add", "C", "D", "--filter", "array_contains(tags, 'ext')"),
    ),
    Step(
        "A filter inside the cycle would let causally related events arrive on two paths: refused (F1).",
        ("topology", "filter", "A", "B", "--set", "key = 'a1'"),
        3,
    ),
    Step("Write at every read-write location.", ("log", "append", "A", *_events("a1", "a2"))),
    Step("", ("log", "append", "B", "--event", json.dumps({"key": "b1", "tags": ["ext"]}))),
    Step("", ("log", "append", "C", *_events("c1"))),
    Step(
        "Replicate every connection until nothing changes (causal order, duplicates dropped by CF1).",
        ("replicate",),
    ),
    Step("D received only the events its filter admits.", ("log", "show", "D")),
    Step("More writes at A that B and C have not seen yet.", ("log", "append", "A", *_events("a3"))),
    Step(
        "Delete A's log up to seq 5 (a3): A may drop only what every target already has (DEL3), so a3 waits.",
        ("delete", "A", "--upto", "5"),
        5,
    ),
    Step(
        "The next replication run delivers a3 and retries the pending deletion, which completes.",
        ("replicate",),
    ),
    Step(
        "A game-day drill: destroy C's stored events from seq 2 on, as a disk failure would.",
        ("drill", "disaster", "C", "--from", "2"),
    ),
    Step(
        "Recover C: metadata first, then events from its eligible neighbours, in rounds (DR0–DR5).",
        ("recover", "location", "C"),
    ),
    Step(
        "A new location E joins from B with only new events (history mode 'none').", ("location", "add", "E")
    ),
    Step("", ("topology", "add", "B", "E", "--history", "none")),
    Step("", ("log", "append", "B", *_events("b2"))),
    Step("", ("replicate",)),
    Step("E holds only what was written after it joined.", ("log", "show", "E")),
    Step(
        "Retire E: first its connection goes, then the location (its name is never reused).",
        ("topology", "remove", "B", "E"),
    ),
    Step("", ("location", "retire", "E")),
    Step(
        "Back up every active location: its segment files and a manifest (BK1); the next one copies only new "
        "segments.",
        ("backup", "create"),
    ),
    Step(
        "Check every backup: file digests, and the invariants on the backup's own events.",
        ("backup", "verify"),
    ),
    Step(
        "A write at B after the backup, replicated to its neighbours.", ("log", "append", "B", *_events("b3"))
    ),
    Step("", ("replicate",)),
    Step("B loses its whole disk.", ("drill", "disaster", "B", "--from", "1")),
    Step(
        "Restore B from its latest backup, then recover what came after from its neighbours (BK2, DR1–DR5).",
        ("recover", "location", "B", "--from-backup", "latest"),
    ),
    Step("B holds again every event it held, b3 included.", ("log", "show", "B")),
    Step("Check the invariants of every log (storage order, no duplicates, clocks).", ("log", "verify")),
    Step("Where everything stands.", ("status",)),
)


def _quote(arg: str) -> str:
    """Quote as an operator would type it: double quotes around SQL with single quotes inside."""
    if "'" in arg and '"' not in arg:
        return f'"{arg}"'
    return shlex.quote(arg)


def demo(
    ctx: typer.Context,
    directory: Annotated[
        Path | None,
        typer.Option("--dir", help="Folder for the demo's catalog and logs (default: a new one)."),
    ] = None,
) -> None:
    """Run the whole story on the embedded defaults (SQLite, local files, local Spark), narrated."""
    from replctl.cli import app
    from replctl.cli.boundary import Effect, run

    if ctx.obj is not None and ctx.obj.planning:
        # The story runs many commands for real in its own folder: there is no one plan to review, to
        # write (--plan-out) or to apply (a plan file naming `demo`).
        run(ctx, lambda _app: None, effect=Effect.UNPLANNED)

    if directory is not None and ctx.obj is not None:
        # The story's catalog, logs and config must not land in the configured stores (or on the catalog's
        # side files), where the stores would take them for their own.
        try:
            # Nor hold them (the home's parent, `/`): the demo must reach nothing it did not create.
            ctx.obj.check_output_folder(directory, "--dir", "the demo")
        except ReplctlError as refusal:
            run(ctx, partial(_refuse, refusal))
    if directory is not None and directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        # The demo writes its own catalog, logs and config there: never beside (or over) someone's files.
        run(ctx, lambda _app: _refuse_folder(directory))
    folder = directory or Path(tempfile.mkdtemp(prefix="replctl-demo-"))
    folder.mkdir(parents=True, exist_ok=True)
    # The backup store is a config setting (no global flag): a config file beside the catalog names it.
    config = folder.resolve() / "replctl.toml"
    config.write_text('backup_store = "backups"\n', encoding="utf-8")
    base = [
        "--config",
        str(config),
        "--db",
        f"sqlite:///{folder.resolve() / 'catalog.db'}",
        "--store",
        str(folder.resolve() / "logs"),
    ]
    if ctx.obj is not None and ctx.obj.json:
        _quietly(base, folder)
    console = stdout()
    console.print(f"replctl demo in {folder}", style="bold", markup=False)
    started = time.monotonic()
    for step in STORY:
        if step.say:
            console.print()
            console.print(step.say, style="bold cyan", markup=False, soft_wrap=True)
        console.print(
            "$ replctl " + " ".join(_quote(a) for a in step.args), style="dim", markup=False, soft_wrap=True
        )
        sys.stdout.flush()
        try:
            # Without standalone mode the command's exit code comes back as the return value.
            code = app([*base, *step.args], standalone_mode=False) or 0
        except typer.Exit as done:
            code = done.exit_code
        if code != step.expect:
            console.print(
                f"the demo stopped: exit {code}, expected {step.expect}", style="bold red", markup=False
            )
            raise typer.Exit(1)
    console.print()
    console.print(f"Done in {time.monotonic() - started:.0f} s. Look next at:", style="bold", markup=False)
    env = (
        f"REPLCTL_CONFIG={config} REPLCTL_DB=sqlite:///{folder.resolve() / 'catalog.db'} "
        f"REPLCTL_STORE={folder.resolve() / 'logs'}"
    )
    for hint in (
        "replctl topology show --format tree",
        "replctl topology history",
        "replctl ops list",
        "replctl log show A",
        "replctl backup list",
    ):
        console.print(f"  {env} {hint}", markup=False)


def _refuse(refusal: ReplctlError, _app: object) -> None:
    raise refusal


def _refuse_folder(directory: Path) -> None:
    raise InvalidInput(
        f"--dir {directory} is not an empty folder; the demo makes its own catalog and logs there",
        code="bad-option",
        hint="replctl demo --dir NEW_OR_EMPTY_FOLDER (or no --dir: a new folder)",
    )


def _quietly(base: list[str], folder: Path) -> None:
    """`demo --json`: the story without narration, each step's own output kept back, then one document that
    lists each step's command and exit code (cli.md: exactly one JSON document on stdout)."""
    from replctl.cli import app

    steps: list[dict[str, Any]] = []
    for step in STORY:
        with redirect_stdout(io.StringIO()):
            try:
                code = app([*base, "--json", *step.args], standalone_mode=False) or 0
            except typer.Exit as done:
                code = done.exit_code
        steps.append({"command": ["replctl", *step.args], "exit": code, "expected": step.expect})
        if code != step.expect:
            emit_json(
                {
                    "ok": False,
                    "error": {
                        "code": "demo-failed",
                        "message": f"the demo stopped: exit {code}, expected {step.expect}",
                        "hint": None,
                    },
                    "dir": str(folder),
                    "steps": steps,
                }
            )
            raise typer.Exit(1)
    emit_json({"ok": True, "dir": str(folder), "steps": steps})
    raise typer.Exit(0)


def register(root: typer.Typer) -> None:
    """Attach `demo` to the root app."""
    root.command("demo")(demo)
