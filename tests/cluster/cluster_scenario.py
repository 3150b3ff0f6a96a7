"""One replication-and-deletion story, run the same way wherever Spark runs, and its exact outcome.

The story uses every kind of Spark job a day of operation needs: an append (write), a filtered replication pass
(read, classify, renumber, write, observe; the filter keeps the fast bootstrap from copying files instead), a
physical deletion that checks DEL3 and rewrites the straddling segment, and `log verify`. The outcome is what an
operator reads back: both logs (`log show --json`) and the verification report.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from clitool import Replctl

# One CLI invocation: its arguments (global options are added per run) and the exit code it must give.
Step = tuple[tuple[str, ...], int]

STEPS: tuple[Step, ...] = (
    (("init",), 0),
    (("location", "add", "A"), 0),
    (("location", "add", "B"), 0),
    (("topology", "add", "A", "B", "--filter", "key <> 'e2'"), 0),
    (
        (
            "log",
            "append",
            "A",
            *[a for k in ("e1", "e2", "e3", "e4") for a in ("--event", json.dumps({"key": k}))],
        ),
        0,
    ),
    (("replicate", "A", "B"), 0),
    (("delete", "A", "--upto", "2"), 0),
)
READS: dict[str, tuple[str, ...]] = {
    "A": ("log", "show", "A"),
    "B": ("log", "show", "B"),
    "verify": ("log", "verify"),
}
# What the story must leave, whatever runs it: A lost seq 1..2 to the deletion; B never got e2 (filtered) and
# keeps A's seqs, as the first pass into an empty log renumbers by a zero shift (gaps are allowed, M4).
EXPECTED_KEYS = {"A": [(3, "e3"), (4, "e4")], "B": [(1, "e1"), (3, "e3"), (4, "e4")]}
# A JVM started under load on two shared cores can take minutes; a hung job must still end the test.
COMMAND_TIMEOUT_S = 300

Invoke = Callable[[Sequence[str], int], dict[str, Any]]


def run_story(invoke: Invoke) -> dict[str, Any]:
    """Run the story through `invoke(args, expected exit code) -> JSON document`; returns what it reads back."""
    for args, code in STEPS:
        invoke(args, code)
    return {name: invoke(args, 0) for name, args in READS.items()}


def stored_keys(outcome: Mapping[str, Any], location: str) -> list[tuple[int, str]]:
    """(seq, key) of each event stored at `location`, in seq order."""
    return [(e["seq"], e["key"]) for e in outcome[location]["events"]]


def subprocess_invoker(cwd: Path, env: Mapping[str, str], global_options: Sequence[str]) -> Invoke:
    """Invoke `python -m replctl ARGS --json GLOBAL_OPTIONS` as a fresh process each time.

    Each process gets its own process group, so a command that runs out of time is killed with its driver JVM.
    """

    def invoke(args: Sequence[str], code: int) -> dict[str, Any]:
        argv = [sys.executable, "-m", "replctl", *args, "--json", *global_options]
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            stdout, stderr = process.communicate(timeout=COMMAND_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
            raise AssertionError(f"{' '.join(argv)} ran past {COMMAND_TIMEOUT_S}s\n{stderr}") from None
        finally:
            # Nothing of the command may outlive it (a driver JVM left behind would hold a core).
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        if process.returncode != code:
            raise AssertionError(
                f"{' '.join(argv)} exited {process.returncode}, expected {code}\n"
                f"stdout:\n{stdout}\nstderr:\n{stderr}"
            )
        try:
            doc: dict[str, Any] = json.loads(stdout)
        except json.JSONDecodeError as exc:
            raise AssertionError(f"stdout of {' '.join(argv)} is not one JSON document:\n{stdout}") from exc
        return doc

    return invoke


def in_process_invoker(tool: Replctl, global_options: Sequence[str] = ()) -> Invoke:
    """Invoke the CLI in this process (the run's shared local session) with `--json` and `global_options`."""

    def invoke(args: Sequence[str], code: int) -> dict[str, Any]:
        return tool.json(*args, *global_options, expect=code)

    return invoke
