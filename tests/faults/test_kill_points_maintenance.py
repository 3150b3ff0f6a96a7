"""Crash safety of the maintenance commands with real kills: `log compact --gc` and `location retire
--prune-clock` (rules.md REP3, RET1–RET3; architecture.md, Concurrency and faults).

As in `test_kill_points.py` (the harness is `killpoints.py`): one small world per command, built once; each
crash case copies it, crashes the command at one step boundary (a real SIGKILL in a child process where the
most is left behind, `REPLCTL_FAILPOINT_MODE=raise` in-process elsewhere), poisons every orphan, and re-runs
the same command at once. The re-run must leave what an uninterrupted run on the twin copy leaves: the same
events per log in the same order, the same status (seq, CVV, DVV, progress), the same segment rows (range,
count, vt LUB; the paths differ by nature), the same topology history, `log verify` clean, no lease held.
No orphan is read: the poisoned folders would fail the re-run, and its segment rows name only folders that
existed before the crash or that the re-run wrote itself. Finally `log compact --gc` collects every orphan
the crash left (for `log compact A --gc` the re-run itself must already have done so).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from clitool import Replctl
from crashed import died

from faults.killpoints import (
    REPORT,
    Survived,
    World,
    assert_taken_over,
    crash_in_process,
    kill_at,
    lost_and_duplicated,
    observe,
    poison,
)
from replctl import failpoints

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SUITE = "compact, retire/prune"


def crashed_append(rc: Replctl, location: str, key: str) -> None:
    """An append that dies after writing its segment: one orphan folder at `location` (never committed)."""
    crashing = Replctl(rc.root)
    crashing.env = {**rc.env, "REPLCTL_FAILPOINT": "append.after-write", "REPLCTL_FAILPOINT_MODE": "raise"}
    failpoints.reset()
    with pytest.raises(failpoints.FailpointCrash):
        crashing.append(location, key)
    died(rc.db_url)


def build_compact(rc: Replctl) -> None:
    # Three one-event segments at A, B replicating from A (progress and lag depend on A's segment rows),
    # and two orphans at A for --gc, so that a crash between two removals leaves one behind.
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B")
    rc.append("A", "a1")
    rc.append("A", "a2")
    rc("replicate")
    rc.append("A", "a3")
    crashed_append(rc, "A", "lost1")
    crashed_append(rc, "A", "lost2")


def build_retire(rc: Replctl) -> None:
    # Z's events z1, z2 spread to A and on to B (RET3 holds); A's a1 carries Z:2 in its vt (EM1); B's b1
    # segment never held Z and is left alone. Z is disconnected, so it may retire (RET1). The pruning then
    # rewrites the logs A, B and Z, in that order (`@1`, `@2`, `@3` below).
    for name in "ABZ":
        rc("location", "add", name)
    rc("topology", "add", "Z", "A", "--both")
    rc("topology", "add", "A", "B", "--both")
    rc.append("B", "b1")
    rc.append("Z", "z1", "z2")
    rc("replicate", "Z", "A")
    rc.append("A", "a1")
    rc("topology", "remove", "Z", "A", "--both")
    rc("replicate", "A", "B")


@dataclass(frozen=True)
class Story:
    """One command and the world it runs in."""

    build: Callable[[Replctl], None]
    command: tuple[str, ...]


STORIES = {
    "compact": Story(build_compact, ("log", "compact", "A", "--gc")),
    "retire": Story(build_retire, ("location", "retire", "Z", "--prune-clock")),
}

# (story, failpoint, mode): every step boundary of the two commands. The real kills are where a dead holder
# leaves the most behind (and, cheaply, a lease held before any Spark starts); the rest crash in-process.
CASES = [
    ("compact", "operation.after-lease", "kill"),  # lease held, nothing done; no Spark starts before it
    ("compact", "compact.after-write", "kill"),  # merged segment written, catalog not: an orphan
    ("compact", "compact.after-commit", "kill"),  # merged row committed, the run's old files not removed
    ("compact", "compact.after-remove", "raise"),  # merged and cleaned up, --gc not begun
    ("compact", "compact.gc-after-remove@1", "raise"),  # one orphan collected, the other not
    ("compact", "operation.before-finish", "raise"),
    ("retire", "operation.after-lease", "kill"),  # the retirement's lease held, Z not retired
    ("retire", "retire.after-scan@2", "raise"),  # RET1's scan done (@1 is the dry run), nothing recorded
    ("retire", "retire.before-prune", "raise"),  # Z retired (RET1), the pruning not begun
    ("retire", "operation.after-lease@2", "raise"),  # the pruning's leases (topology, every location) held
    ("retire", "prune.after-rewrite@1", "raise"),  # A's pruned copies written, catalog not
    ("retire", "prune.after-commit@1", "raise"),  # A's rows and parked CVV[Z] committed, old files kept
    ("retire", "prune.after-log@1", "raise"),  # A done, B and Z not begun
    ("retire", "prune.after-rewrite@2", "kill"),  # A done, B's copies written: every lease left held
    ("retire", "prune.after-commit@3", "raise"),  # every log committed, Z's old files kept
    ("retire", "prune.before-vectors", "kill"),  # every vt pruned, Z not yet recorded as pruned (RET2)
    ("retire", "operation.before-finish@2", "raise"),  # Z pruned everywhere, the journal not finished
]


@dataclass(frozen=True)
class Expected:
    """What the uninterrupted command leaves on the twin copy."""

    template: Path
    observed: dict[str, Any]
    segments: list[tuple[str, int, int, int, dict[str, int]]]
    history: list[str]


def history(rc: Replctl) -> list[str]:
    """The kinds of the recorded topology changes, in order (H1)."""
    return [change["kind"] for change in rc.json("topology", "history")["changes"]]


@pytest.fixture(scope="module")
def worlds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Expected]:
    """Per story: the template world, and what the uninterrupted command leaves on its twin."""
    built: dict[str, Expected] = {}
    for name, story in STORIES.items():
        template = tmp_path_factory.mktemp(f"{name}-template")
        rc = Replctl(template)
        rc("init")
        story.build(rc)
        twin = World(tmp_path_factory.mktemp(f"{name}-twin"))
        shutil.copytree(template, twin.root, dirs_exist_ok=True)
        ref = twin.tool()
        ref(*story.command)
        assert ref.json("log", "verify")["ok"]
        built[name] = Expected(template, observe(ref), twin.segment_rows(), history(ref))
    assert built["compact"].segments[0][:4] == ("A", 1, 3, 3)  # the three segments merged into one
    return built


@pytest.mark.parametrize(("story", "failpoint", "mode"), CASES, ids=[f"{m}-{s}-{p}" for s, p, m in CASES])
def test_a_maintenance_command_crashed_at_a_step_boundary_converges_when_rerun_rep3(
    story: str, failpoint: str, mode: str, worlds: dict[str, Expected], tmp_path: Path
) -> None:
    expected = worlds[story]
    command = STORIES[story].command
    world = World.copy_of(expected.template, tmp_path / "world")

    if mode == "kill":
        kill_at(world, command, failpoint)
        dead = world.running_operations()
    else:
        dead = crash_in_process(world, command, failpoint)
    # The crashed operation, journalled as still running, and its leases left behind; none between the
    # retirement and the pruning, which are two operations.
    between = failpoint == "retire.before-prune"
    assert len(dead) == (0 if between else 1)
    assert bool(world.held_leases()) is not between
    orphans = world.orphans()
    poison(world, orphans)
    catalogued, stored = world.catalogued(), world.segment_dirs()

    rc = world.tool()
    rc(*command)
    got = observe(rc)
    assert got["logs"] == expected.observed["logs"]
    assert got["status"] == expected.observed["status"]
    assert world.segment_rows() == expected.segments
    assert history(rc) == expected.history
    assert rc.json("log", "verify")["ok"]
    assert world.held_leases() == []
    # The rows name folders that were committed before the crash or that the re-run wrote, never an orphan.
    written = world.segment_dirs() - stored
    assert world.catalogued() <= (catalogued | written)
    assert not world.catalogued() & orphans
    for op in dead:
        assert_taken_over(rc, op)

    # Every orphan the crash left is garbage that --gc collects (the compact story's re-run already did).
    left = world.orphans()
    if story == "compact":
        assert left == set()
    for location in sorted({path.split("/")[0] for path in left}):
        removed = rc.json("log", "compact", location, "--gc")["orphans_removed"]
        assert set(removed) == {path for path in left if path.startswith(f"{location}/")}
    assert world.orphans() == set()
    assert {n: d["events"] for n, d in observe(rc)["logs"].items()} == {
        n: d["events"] for n, d in expected.observed["logs"].items()
    }

    lost, duplicated = lost_and_duplicated(expected.observed["logs"], got["logs"])
    assert (lost, duplicated) == (0, 0)
    REPORT.add(Survived(SUITE, story, failpoint, mode, len(orphans), lost, duplicated))
