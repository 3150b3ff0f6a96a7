"""Crash safety with real kills (architecture.md, Concurrency and faults; rules.md REP3).

For each mutating data command a small world is built once in-process. Each kill point then gets its own copy
of that world, runs the real CLI in a child process with `REPLCTL_FAILPOINT` set, and checks that SIGKILL
ended it. Before the re-run, every store file no committed segment row names (the orphans of the killed run)
is overwritten with garbage: a re-run that read one would fail. The re-run (without the failpoint, at once:
the dead holder's leases are taken over) must give what an uninterrupted run of the same command gives: the
same events per log in the same order, the same status (seq, CVV, DVV, progress, pending deletions),
`log verify` clean, and no lease left held.

Child processes are the expensive part (each starts its own Spark): there is one world per command, a real
SIGKILL at the boundaries where the most is left behind, and every other boundary crashed in-process
(`REPLCTL_FAILPOINT_MODE=raise`: the same state left behind, at a fraction of the cost; the operation's own
clean-up then releases its leases, so only the real kills exercise the takeover). The last test sums up.
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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from clitool import Replctl

from replctl import failpoints

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CHILD_TIMEOUT_S = 240


def append(rc: Replctl, location: str, *keys: str) -> None:
    args: list[str] = []
    for key in keys:
        args += ["--event", json.dumps({"key": key})]
    rc("log", "append", location, *args)


def build_append(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    append(rc, "A", "a1")


def build_replicate(rc: Replctl) -> None:
    # A chain A<->B<->C with work on every connection, and a deletion at A that waits for B (DEL4): the
    # run replicates, then retries the deletion, which rewrites A's first segment.
    for name in ("A", "B", "C"):
        rc("location", "add", name)
    rc("topology", "add", "A", "B", "--both")
    rc("topology", "add", "B", "C", "--both")
    append(rc, "A", "a1", "a2")
    append(rc, "A", "a3")
    append(rc, "C", "c1")
    rc("delete", "A", "--upto", "1", expect=5)


def build_delete(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    append(rc, "A", "a1", "a2")
    append(rc, "A", "a3")
    rc("replicate")


def build_recover(rc: Replctl) -> None:
    # A keeps a1 of its first segment; B can give back a2 and b1; a3, a4 never left A and are lost.
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    append(rc, "A", "a1", "a2")
    rc("replicate")
    append(rc, "B", "b1")
    rc("replicate")
    append(rc, "A", "a3", "a4")
    rc("drill", "disaster", "A", "--from", "2")


@dataclass(frozen=True)
class Story:
    """One command, the world it runs in, and its exit code when it runs uninterrupted."""

    build: Callable[[Replctl], None]
    command: tuple[str, ...]
    exit_code: int = 0


STORIES = {
    "append": Story(
        build_append, ("log", "append", "A", "--event", '{"key": "a2"}', "--event", '{"key": "a3"}')
    ),
    "replicate": Story(build_replicate, ("replicate",)),
    "delete": Story(build_delete, ("delete", "A", "--upto", "1")),
    "recover": Story(build_recover, ("recover", "location", "A")),
}

# (story, failpoint): every step boundary that leaves a different state behind.
CRASH_POINTS = [
    ("append", "append.after-write"),  # segment written, catalog not
    ("append", "operation.before-finish"),  # committed, journal outcome and lease release not
    ("replicate", "replicate.after-write@2"),  # one pass committed, the second one's files orphaned
    ("replicate", "replicate.after-commit"),
    ("replicate", "delete.after-rewrite"),  # the DEL4 retry after replication
    ("delete", "operation.after-lease"),  # nothing done yet, lease held
    ("delete", "delete.after-rewrite"),
    ("delete", "delete.after-commit"),  # committed, dropped files not yet removed
    ("recover", "recover.before-metadata"),  # survivors rewritten, catalog not
    ("recover", "recover.after-metadata"),  # A recovering, lost files not yet removed
    ("recover", "replicate.after-commit"),  # event recovery from B committed
    ("recover", "recover.before-end"),  # clock floor not yet applied
]

# The boundaries at which a child process is really killed: one per command, where the most is left behind.
KILL_POINTS = [
    ("append", "append.after-write"),
    ("replicate", "replicate.after-write@2"),
    ("delete", "operation.after-lease"),  # cheap: no Spark starts before it
    ("delete", "delete.after-commit"),
    ("recover", "recover.after-metadata"),
]
CASES = [(*point, "kill") for point in KILL_POINTS] + [
    (*point, "raise") for point in CRASH_POINTS if point not in KILL_POINTS
]

# An append is not idempotent: once its commit is in, re-running it appends again. The journal says so
# (`ops show`: the step `append` is recorded), so the operator does not re-run; the check is then that the
# kill lost nothing and that the lease does not stand in the way of the next command.
NOT_RERUN = {("append", "operation.before-finish")}

RESULTS: dict[tuple[str, str, str], dict[str, Any]] = {}


@dataclass
class World:
    """A copy of a story's world on disk: catalog file and store folder."""

    root: Path

    def tool(self) -> Replctl:
        return Replctl(self.root)

    def catalog_rows(self, sql: str) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.root / "catalog.db") as conn:
            return list(conn.execute(sql))

    def segment_dirs(self) -> set[str]:
        """Every segment folder in the store, as a relative path."""
        store = self.root / "logs"
        return {f"{loc.name}/{seg.name}" for loc in store.iterdir() if loc.is_dir() for seg in loc.iterdir()}

    def orphans(self) -> set[str]:
        """Segment folders no committed row names: garbage that must never be read."""
        return self.segment_dirs() - {path for (path,) in self.catalog_rows("SELECT path FROM segments")}


def observe(rc: Replctl) -> dict[str, Any]:
    """What a converged run is judged by: the status document and every log's events."""
    status = rc.json("status")
    logs = {loc["name"]: rc.json("log", "show", loc["name"]) for loc in status["locations"]}
    return {"status": status, "logs": logs}


def identities(logs: dict[str, Any]) -> dict[str, Counter[tuple[str, int]]]:
    return {
        name: Counter((e["origin"], e["origin_time"]) for e in doc["events"]) for name, doc in logs.items()
    }


@pytest.fixture(scope="module")
def worlds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Per story: the template world, and what the uninterrupted command leaves (observed)."""
    built: dict[str, tuple[Path, dict[str, Any]]] = {}
    for name, story in STORIES.items():
        template = tmp_path_factory.mktemp(f"{name}-template")
        rc = Replctl(template)
        rc("init")
        story.build(rc)
        reference = tmp_path_factory.mktemp(f"{name}-reference")
        shutil.copytree(template, reference, dirs_exist_ok=True)
        ref = Replctl(reference)
        ref(*story.command, expect=story.exit_code)
        assert ref.json("log", "verify")["ok"]
        built[name] = (template, observe(ref))
    return built


def run_killed(world: World, command: tuple[str, ...], failpoint: str) -> subprocess.CompletedProcess[str]:
    """The real CLI in a child process (its own session, so its JVM can be found), killed at `failpoint`."""
    env = {
        **os.environ,
        "REPLCTL_DB": f"sqlite:///{world.root / 'catalog.db'}",
        "REPLCTL_STORE": str(world.root / "logs"),
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


def crash_in_process(world: World, command: tuple[str, ...], failpoint: str) -> None:
    """The same command in this process, crashing at `failpoint` (FailpointCrash escapes every handler)."""
    rc = world.tool()
    rc.env = {**rc.env, "REPLCTL_FAILPOINT": failpoint, "REPLCTL_FAILPOINT_MODE": "raise"}
    failpoints.reset()
    with pytest.raises(failpoints.FailpointCrash):
        rc(*command, expect=None)


@pytest.mark.parametrize(("story", "failpoint", "mode"), CASES, ids=[f"{m}-{s}-{p}" for s, p, m in CASES])
def test_a_command_crashed_at_a_step_boundary_converges_when_rerun_at_once(
    story: str,
    failpoint: str,
    mode: str,
    worlds: dict[str, tuple[Path, dict[str, Any]]],
    tmp_path: Path,
) -> None:
    template, expected = worlds[story]
    command = STORIES[story].command
    world = World(tmp_path / "world")
    shutil.copytree(template, world.root)

    if mode == "kill":
        killed = run_killed(world, command, failpoint)
        assert killed.returncode == -signal.SIGKILL, (
            f"{failpoint} was not reached: exit {killed.returncode}\n{killed.stdout}\n{killed.stderr}"
        )
        dead = world.catalog_rows("SELECT id FROM operations WHERE outcome = 'running'")
        assert len(dead) == 1  # the killed operation, journalled as still running
        held = world.catalog_rows("SELECT resource FROM leases WHERE released_at IS NULL")
        assert held  # and its lease left behind
    else:
        crash_in_process(world, command, failpoint)
    orphans = world.orphans()
    poison(world, orphans)

    rc = world.tool()
    rerun = (story, failpoint) not in NOT_RERUN
    if rerun:
        rc(*command, expect=STORIES[story].exit_code)
    else:
        # A command that takes the same lease goes through at once (here: a logical delete of nothing).
        rc("delete", "A", "--upto", "0", "--logical")
    got = observe(rc)
    assert got["logs"] == expected["logs"]
    assert got["status"] == expected["status"]
    assert rc.json("log", "verify")["ok"]
    assert world.catalog_rows("SELECT resource FROM leases WHERE released_at IS NULL") == []
    if mode == "kill":
        # The takeover journals the dead operation as failed, saying why.
        op = rc.json("ops", "show", dead[0][0])["operation"]
        assert op["outcome"] == "failed"
        assert op["error"]["code"] == "holder-died"

    want, have = identities(expected["logs"]), identities(got["logs"])
    lost = sum((want[n] - have[n]).total() for n in want)
    duplicated = sum(max(0, c - 1) for n in have for c in have[n].values())
    RESULTS[(story, failpoint, mode)] = {"orphans": len(orphans), "lost": lost, "duplicated": duplicated}
    print(
        f"{mode} at {story}@{failpoint}: {len(orphans)} orphan segment(s) poisoned and never read, "
        f"{'re-run converged' if rerun else 'committed state kept'}, lost {lost}, duplicated {duplicated}"
    )


def test_every_crash_point_was_survived_with_no_event_lost_or_duplicated() -> None:
    if len(RESULTS) < len(CASES):
        pytest.skip("sums up the crash-point tests; runs only after all of them")
    kills = [r for (_, _, mode), r in RESULTS.items() if mode == "kill"]
    lost = sum(r["lost"] for r in RESULTS.values())
    duplicated = sum(r["duplicated"] for r in RESULTS.values())
    orphans = sum(r["orphans"] for r in RESULTS.values())
    print(
        f"\nreal SIGKILLs {len(kills)}/{len(KILL_POINTS)} survived, in-process crashes "
        f"{len(RESULTS) - len(kills)}/{len(CASES) - len(KILL_POINTS)} survived, orphan segments poisoned "
        f"and never read {orphans}, events lost {lost}, duplicated {duplicated}"
    )
    assert len(kills) == len(KILL_POINTS)
    assert lost == 0
    assert duplicated == 0
