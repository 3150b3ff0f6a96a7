"""Two operators at once on one catalog (architecture.md, Concurrency and faults; cli.md exit 4).

Two real processes are started together, both changing the same connection (`topology add A B`, then
`topology remove A B`, alternately). Both ask for the same leases; whichever gets them stops right after
(`REPLCTL_FAILPOINT_MODE=fifo:...` at `operation.after-lease`) until the test, having seen the other one
end, lets it go, so the two always meet, whatever the start-up jitter, and no clock decides it. Exactly one
must proceed; the other must exit 4 naming the winner (its pid) in one line, and the history and
connections must stay consistent after every trial. On PostgreSQL and on SQLite. No Spark is involved.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from clitool import Replctl

# Each trial costs two cold process starts; PostgreSQL, the catalog teams share, gets the full count.
TRIALS = {"postgresql": 20, "sqlite": 6}


def start(rc: Replctl, fifo: Path, *args: str) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        **rc.env,
        "REPLCTL_FAILPOINT": "operation.after-lease",
        "REPLCTL_FAILPOINT_MODE": f"fifo:{fifo}",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "replctl", *args],
        env=env,
        cwd=rc.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def race(rc: Replctl, *args: str) -> list[tuple[int, int, str]]:
    """Start two `replctl ARGS` at once; (pid, exit code, stderr) of each.

    The one holding the leases waits at the FIFO: opening it for writing returns once it got there; the
    other one then ends on its own (refused), and only after that is the holder let go.
    """
    fifo = rc.root / "hold.fifo"
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    children = [start(rc, fifo, *args), start(rc, fifo, *args)]
    with fifo.open("wb"):
        # A holder is at its failpoint now. Wait, without reaping, for the first child to end: the refused one.
        ended = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT)
        assert ended is not None
        (loser,) = [c for c in children if c.pid == ended.si_pid]
        loser.communicate(timeout=120)
    done = []
    for child in children:
        _, err = child.communicate(timeout=120)
        done.append((child.pid, child.returncode, err))
    return done


def connection(rc: Replctl, source: str, target: str) -> dict[str, Any]:
    return next(c for c in rc.json("status")["connections"] if (c["source"], c["target"]) == (source, target))


def run_trials(rc: Replctl, trials: int) -> dict[str, int]:
    rc("init")
    rc("location", "add", "A")
    rc("location", "add", "B")
    history = len(rc.json("topology", "history")["changes"])
    held = 0
    for trial in range(trials):
        verb, kind, state = (
            ("add", "connection-added", "active")
            if trial % 2 == 0
            else ("remove", "connection-removed", "removed")
        )
        outcomes = race(rc, "topology", verb, "A", "B")
        codes = sorted(code for _, code, _ in outcomes)
        assert codes == [0, 4], f"trial {trial} ({verb}): {outcomes}"
        (winner,) = [pid for pid, code, _ in outcomes if code == 0]
        (loser_err,) = [err for _, code, err in outcomes if code == 4]
        first = loser_err.splitlines()[0]
        assert first.startswith("error: ") and "is held by" in first, loser_err
        assert f" pid {winner} " in first, f"the refusal does not name the winner (pid {winner}): {first}"
        held += 1
        # Exactly one change recorded, the one asked for, and the connection in the state it describes.
        changes = rc.json("topology", "history")["changes"]
        assert len(changes) == history + 1, f"trial {trial}: {changes[history:]}"
        assert changes[-1]["kind"] == kind
        history += 1
        assert connection(rc, "A", "B")["state"] == state
    assert rc.json("topology", "validate")["ok"]
    assert rc.json("log", "verify")["ok"]
    ops = rc.json("ops", "list", "--limit", str(4 * trials))["operations"]
    journalled = [op["outcome"] for op in ops if op["command"].startswith("topology")]
    assert journalled.count("succeeded") == trials
    assert journalled.count("refused") == trials
    return {"trials": trials, "one_proceeded": trials, "other_exit_4": held}


# Separate processes racing for a lease: part of the slow pass of .ci/run.
pytestmark = pytest.mark.slow


@pytest.mark.postgres
def test_two_operators_changing_one_connection_on_postgresql_one_proceeds_the_other_exits_4(
    postgres_url: str, tmp_path: Path
) -> None:
    figures = run_trials(Replctl(tmp_path, db_url=postgres_url), TRIALS["postgresql"])
    print(f"\nPostgreSQL: {figures}")


def test_two_operators_changing_one_connection_on_sqlite_one_proceeds_the_other_exits_4(
    tmp_path: Path,
) -> None:
    figures = run_trials(Replctl(tmp_path), TRIALS["sqlite"])
    print(f"\nSQLite: {figures}")
