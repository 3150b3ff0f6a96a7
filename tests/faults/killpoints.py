"""The kill-point harness shared by the crash-safety suites (architecture.md, Concurrency and faults; REP3).

A world is a catalog file and a store folder under one directory, copied per crash case from a template built
once. A case crashes a command at a failpoint (`replctl.failpoints.POINTS`): for real, in a child process
killed by SIGKILL (`run_killed`), or in-process (`crash_in_process`, `REPLCTL_FAILPOINT_MODE=raise`), which
leaves the same state behind at a fraction of the cost: the operation journalled as running and its leases
held by a process that is gone (`crashed.died`). Before the re-run every orphan (a store folder no
committed segment row names) is overwritten with garbage (`poison`): a re-run that read one would fail.

Every case asserts its own outcome (nothing lost, nothing duplicated, the crashed operation taken over) and
reports to `REPORT`; `tests/faults/conftest.py` prints the totals over all suites at the end of the run, the
kill-point report: a summary for the reader, not a test.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from clitool import Replctl
from crashed import died

from replctl import failpoints

CHILD_TIMEOUT_S = 240


@dataclass
class World:
    """A copy of a story's world on disk: catalog file and store folder."""

    root: Path

    @classmethod
    def copy_of(cls, template: Path, root: Path) -> World:
        """A fresh copy of `template` at `root`."""
        shutil.copytree(template, root)
        return cls(root)

    def tool(self) -> Replctl:
        """The in-process CLI bound to this world."""
        return Replctl(self.root)

    def catalog_rows(self, sql: str) -> list[tuple[Any, ...]]:
        """Rows of a read-only query on the catalog file."""
        with sqlite3.connect(self.root / "catalog.db") as conn:
            return list(conn.execute(sql))

    def segment_dirs(self) -> set[str]:
        """Every segment folder in the store, as a relative path."""
        store = self.root / "logs"
        return {f"{loc.name}/{seg.name}" for loc in store.iterdir() if loc.is_dir() for seg in loc.iterdir()}

    def catalogued(self) -> set[str]:
        """The store paths the committed segment rows name."""
        return {path for (path,) in self.catalog_rows("SELECT path FROM segments")}

    def orphans(self) -> set[str]:
        """Segment folders no committed row names: garbage that must never be read."""
        return self.segment_dirs() - self.catalogued()

    def segment_rows(self) -> list[tuple[str, int, int, int, dict[str, int]]]:
        """Every segment row without its path and operation: what an uninterrupted run must also leave."""
        rows = self.catalog_rows(
            "SELECT location, seq_lo, seq_hi, count, vt_lub FROM segments ORDER BY location, seq_lo"
        )
        return [(loc, lo, hi, count, json.loads(lub)) for loc, lo, hi, count, lub in rows]

    def running_operations(self) -> list[str]:
        """The ids of the operations journalled as still running."""
        return [op for (op,) in self.catalog_rows("SELECT id FROM operations WHERE outcome = 'running'")]

    def held_leases(self) -> list[str]:
        """The resources whose lease nobody released."""
        return [r for (r,) in self.catalog_rows("SELECT resource FROM leases WHERE released_at IS NULL")]


def observe(rc: Replctl) -> dict[str, Any]:
    """What a converged run is judged by: the status document and every log's events."""
    status = rc.json("status")
    logs = {loc["name"]: rc.json("log", "show", loc["name"]) for loc in status["locations"]}
    return {"status": status, "logs": logs}


def identities(logs: dict[str, Any]) -> dict[str, Counter[tuple[str, int]]]:
    """Per log, how many copies of each event identity `(origin, origin_time)` it stores (M3)."""
    return {
        name: Counter((e["origin"], e["origin_time"]) for e in doc["events"]) for name, doc in logs.items()
    }


def lost_and_duplicated(expected: dict[str, Any], got: dict[str, Any]) -> tuple[int, int]:
    """Events the uninterrupted run stores and the re-run does not; identities stored more than once."""
    want, have = identities(expected), identities(got)
    lost = sum((want[n] - have.get(n, Counter())).total() for n in want)
    duplicated = sum(max(0, c - 1) for n in have for c in have[n].values())
    return lost, duplicated


def run_killed(world: World, command: tuple[str, ...], failpoint: str) -> subprocess.CompletedProcess[str]:
    """The real CLI in a child process (its own session, so its JVM can be found), killed at `failpoint`."""
    env = {
        **os.environ,
        "REPLCTL_DB": f"sqlite:///{world.root / 'catalog.db'}",
        "REPLCTL_STORE": str(world.root / "logs"),
        "REPLCTL_BACKUP_STORE": str(world.root / "backups"),
        "REPLCTL_SPARK_MASTER": "local[1]",
        "REPLCTL_CONFIG": "",
        "REPLCTL_OUTPUT": "",
        "REPLCTL_FAILPOINT": failpoint,
    }
    env.pop("REPLCTL_FAILPOINT_MODE", None)
    child = subprocess.Popen(
        [sys.executable, "-m", "replctl", *command],
        env=env,
        cwd=world.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = child.communicate(timeout=CHILD_TIMEOUT_S)
    finally:
        _reap_group(child.pid)
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)


def kill_at(world: World, command: tuple[str, ...], failpoint: str) -> subprocess.CompletedProcess[str]:
    """`run_killed`, asserting that SIGKILL ended it (the failpoint was reached)."""
    killed = run_killed(world, command, failpoint)
    assert killed.returncode == -signal.SIGKILL, (
        f"{failpoint} was not reached: exit {killed.returncode}\n{killed.stdout}\n{killed.stderr}"
    )
    return killed


def _reap_group(pgid: int) -> None:
    # The JVM notices its parent's death and exits; give it a moment, then make sure nothing lingers.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.killpg(pgid, signal.SIGKILL)


def poison(world: World, orphans: set[str]) -> None:
    """Overwrite every data file of the orphaned segments: reading one fails the re-run."""
    for rel in orphans:
        for path in (world.root / "logs" / rel).rglob("*"):
            if path.is_file():
                path.write_bytes(b"orphan: never to be read")


def crash_in_process(world: World, command: tuple[str, ...], failpoint: str) -> list[str]:
    """The same command in this process, crashing at `failpoint` (FailpointCrash escapes every handler) and
    leaving what a kill leaves; returns the ids of the operations left running (`crashed.died`)."""
    rc = world.tool()
    rc.env = {**rc.env, "REPLCTL_FAILPOINT": failpoint, "REPLCTL_FAILPOINT_MODE": "raise"}
    failpoints.reset()
    with pytest.raises(failpoints.FailpointCrash):
        rc(*command, expect=None)
    return died(rc.db_url)


def assert_taken_over(rc: Replctl, operation_id: str) -> None:
    """The re-run took the dead operation's leases over and journalled it as failed (`holder-died`); an append
    whose events were already in is then completed by the re-run instead (REP3), which the journal says too."""
    op = rc.json("ops", "show", operation_id)["operation"]
    if op["outcome"] == "failed":
        assert op["error"]["code"] == "holder-died", op
        return
    completed = op["steps"][-1]
    assert (op["outcome"], completed["name"]) == ("succeeded", "completed-by"), op
    assert completed["detail"]["interrupted"]["code"] == "holder-died", op


@dataclass(frozen=True)
class Survived:
    """One crash case's result: what was poisoned, and whether the re-run lost or duplicated anything."""

    suite: str
    story: str
    failpoint: str
    mode: str  # "kill" (SIGKILL in a child process) or "raise" (in-process)
    orphans: int
    lost: int
    duplicated: int


@dataclass
class Report:
    """The crash cases of every suite that ran, for the kill-point report."""

    cases: list[Survived] = field(default_factory=list)

    def add(self, case: Survived) -> None:
        """Record one case and say how it went (shown with -s)."""
        self.cases.append(case)
        print(
            f"{case.mode} at {case.story}@{case.failpoint}: {case.orphans} orphan segment(s) poisoned and "
            f"never read, lost {case.lost}, duplicated {case.duplicated}"
        )

    def lines(self) -> list[str]:
        """The report: real kills and in-process crashes per suite, then the totals."""
        if not self.cases:
            return []
        out = []
        for suite in sorted({c.suite for c in self.cases}):
            mine = [c for c in self.cases if c.suite == suite]
            out.append(f"{suite}: {_counts(mine)}")
        points = {c.failpoint.partition("@")[0] for c in self.cases}
        out.append(
            f"all: {_counts(self.cases)}; {len(points)} of {len(failpoints.POINTS)} failpoints "
            f"(replctl.failpoints.POINTS) crashed at"
        )
        return out


def _counts(cases: list[Survived]) -> str:
    kills = sum(c.mode == "kill" for c in cases)
    return (
        f"real SIGKILLs {kills}, in-process crashes {len(cases) - kills} survived; orphan segments poisoned "
        f"and never read {sum(c.orphans for c in cases)}; events lost {sum(c.lost for c in cases)}, "
        f"duplicated {sum(c.duplicated for c in cases)}"
    )


REPORT = Report()
