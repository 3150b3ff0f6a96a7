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
(`REPLCTL_FAILPOINT_MODE=raise`: the same state left behind, at a fraction of the cost: the operation
running, its leases held by a process that is gone, so both modes exercise the takeover). Each case asserts
its own convergence; the harness (`killpoints.py`) is shared with `test_kill_points_maintenance.py` (compact,
retire/prune) and `test_append_resume.py`, and the kill-point report printed at the end of the run counts
them all.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from clitool import Replctl, lose_what_the_neighbour_deleted

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

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SUITE = "replicate, delete, recover (complete and incomplete), append"


def build_append(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1")


def build_replicate(rc: Replctl) -> None:
    # A chain A<->B<->C with work on every connection, and a deletion at A that waits for B (DEL4): the
    # run replicates, then retries the deletion, which rewrites A's first segment.
    for name in ("A", "B", "C"):
        rc("location", "add", name)
    rc("topology", "add", "A", "B", "--both")
    rc("topology", "add", "B", "C", "--both")
    rc.append("A", "a1", "a2")
    rc.append("A", "a3")
    rc.append("C", "c1")
    rc("delete", "A", "--upto", "1", expect=5)


def build_delete(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1", "a2")
    rc.append("A", "a3")
    rc("replicate")


def build_recover(rc: Replctl) -> None:
    # A keeps a1 of its first segment; B can give back a2 and b1; a3, a4 never left A and are lost.
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1", "a2")
    rc("replicate")
    rc.append("B", "b1")
    rc("replicate")
    rc.append("A", "a3", "a4")
    rc("drill", "disaster", "A", "--from", "2")


def build_recover_incomplete(rc: Replctl) -> None:
    # B deleted A's own events, so B fails DR4 once A lost them: the recovery ends incomplete (exit 5) and
    # must leave A recovering (DR0) however often it was interrupted on the way.
    lose_what_the_neighbour_deleted(rc, lost_from=2)


def build_damaged(rc: Replctl) -> None:
    # B lost its whole log (a drill): the census finds it damaged, and the append below is refused (DR0).
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1")
    rc.append("B", "b1")
    rc("replicate")
    rc("drill", "disaster", "B", "--from", "1")


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
    "recover-incomplete": Story(build_recover_incomplete, ("recover", "location", "A"), exit_code=5),
    "recover-damaged": Story(build_damaged, ("recover", "location", "B")),
}

# (story, failpoint): every step boundary that leaves a different state behind.
CRASH_POINTS = [
    ("append", "append.after-write"),  # segment written, catalog not
    ("append", "operation.before-finish"),  # committed, journal outcome and lease release not
    ("replicate", "replicate.after-write@2"),  # one pass committed, the second one's files orphaned
    ("replicate", "replicate.in-commit@2"),  # issue 19: inside the compare-and-set commit, rolled back
    ("replicate", "replicate.after-commit"),
    ("replicate", "delete.after-rewrite"),  # the DEL4 retry after replication
    ("delete", "operation.after-lease"),  # nothing done yet, lease held
    ("delete", "delete.after-rewrite"),
    ("delete", "delete.in-commit"),  # inside the committing transaction, its targets checked: rolled back
    ("delete", "delete.after-commit"),  # committed, dropped files not yet removed
    ("recover", "recover.before-metadata"),  # survivors rewritten, catalog not
    ("recover", "recover.after-metadata"),  # A recovering, lost files not yet removed
    ("recover", "replicate.after-commit"),  # event recovery from B committed
    ("recover", "recover.before-end"),  # clock floor not yet applied
    ("recover-incomplete", "recover.before-metadata"),
    ("recover-incomplete", "recover.before-end"),  # the end that keeps A recovering not yet committed
    ("recover-incomplete", "recover.after-end"),  # the end committed (A recovering), its report not given
    ("recover-incomplete", "recover.after-census"),  # the loss found, A not yet recovering
    ("recover-damaged", "recover.after-census"),  # issue 14: damage found, B not yet marked recovering
]

# The boundaries at which a child process is really killed: one per command, where the most is left behind.
KILL_POINTS = [
    ("append", "append.after-write"),
    ("replicate", "replicate.after-write@2"),
    ("replicate", "replicate.in-commit@2"),
    ("delete", "operation.after-lease"),  # cheap: no Spark starts before it
    ("delete", "delete.after-commit"),
    ("recover", "recover.after-metadata"),
    ("recover-incomplete", "recover.after-metadata"),  # A recovering; B's refusal not yet recorded
    ("recover-damaged", "recover.after-census"),  # killed between finding the loss and `recovering`
]
CASES = [(*point, "kill") for point in KILL_POINTS] + [
    (*point, "raise") for point in CRASH_POINTS if point not in KILL_POINTS
]


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
    world = World.copy_of(template, tmp_path / "world")

    if mode == "kill":
        kill_at(world, command, failpoint)
        dead = world.running_operations()
    else:
        dead = crash_in_process(world, command, failpoint)
    assert len(dead) == 1  # the crashed operation, journalled as still running
    assert world.held_leases()  # and its lease left behind
    orphans = world.orphans()
    poison(world, orphans)

    # Every command re-runs, an append too: one interrupted after its commit is completed, not repeated.
    rc = world.tool()
    rc(*command, expect=STORIES[story].exit_code)
    got = observe(rc)
    assert got["logs"] == expected["logs"]
    assert got["status"] == expected["status"]
    assert rc.json("log", "verify")["ok"]
    assert world.held_leases() == []
    # The takeover journals the dead operation as failed, saying why.
    assert_taken_over(rc, dead[0])

    lost, duplicated = lost_and_duplicated(expected["logs"], got["logs"])
    assert (lost, duplicated) == (0, 0)
    REPORT.add(Survived(SUITE, story, failpoint, mode, len(orphans), lost, duplicated))


# Issue 14: killed between the census finding damage and the refusal it leads to (DR0).
DAMAGE_POINT = "damage.before-refusal"
DAMAGE_KILLS = [("log", "append", "B", "--event", '{"key": "b2"}'), ("replicate", "A", "B")]


@pytest.mark.parametrize("command", DAMAGE_KILLS, ids=[" ".join(c[:2]) for c in DAMAGE_KILLS])
def test_a_kill_between_the_census_and_its_refusal_writes_nothing_and_recovery_converges(
    command: tuple[str, ...], tmp_path: Path
) -> None:
    template = tmp_path / "template"
    template.mkdir()
    rc = Replctl(template)
    rc("init")
    build_damaged(rc)
    world = World.copy_of(template, tmp_path / "world")
    kill_at(world, command, DAMAGE_POINT)
    assert len(world.running_operations()) == 1 and world.held_leases()
    rc = world.tool()
    assert rc.location("B")["state"] == "damaged"
    refused = rc(*command, "--json", expect=4).doc["error"]
    assert (refused["code"], refused["hint"]) == ("damaged", "replctl recover location B")
    rc("recover", "location", "B")
    assert rc.stored("B") == [("A", 1, "a1"), ("B", 1, "b1")]
    assert rc.stored("A") == [("A", 1, "a1"), ("B", 1, "b1")]
    assert rc.location("B")["state"] == "active"
    assert rc.json("log", "verify")["ok"]
    assert world.held_leases() == []
