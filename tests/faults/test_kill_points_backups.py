"""Crash safety of `backup create` and `recover --from-backup` with real kills (rules.md BK1, BK2; REP3).

The harness is `killpoints.py`'s: a world built once, a copy per case, the real CLI killed by SIGKILL in a child
process (or crashed in-process at the cheaper boundaries), orphans poisoned, then the same command re-run at once.
A killed backup must leave no backup that `backup list` shows; a killed restore must converge to what an
uninterrupted one leaves, with nothing lost.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from clitool import Replctl

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

SUITE = "backup create, recover --from-backup"
BACKUP = ("backup", "create", "B")
RESTORE = ("recover", "location", "B", "--from-backup", "latest")


def build(rc: Replctl) -> None:
    # B holds two segments (so a backup copies twice); A then deletes what B backed up; B loses everything.
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1", "a2")
    rc("replicate")
    rc.append("B", "b1")
    rc("replicate")


def build_restore(rc: Replctl) -> None:
    build(rc)
    rc("backup", "create", "B")
    rc.append("A", "a3")
    rc("replicate")
    rc("delete", "A", "--upto", "2")
    rc("drill", "disaster", "B", "--from", "1")


def build_recopy(rc: Replctl) -> None:
    # B backed up, then one of its copies lost its data file: the next backup copies that segment again over
    # the damaged copy, which it sets aside (`.damaged`) until the whole one is in place.
    build(rc)
    [made] = rc.json("backup", "create", "B")["backups"]
    [first, *_] = rc.json("backup", "show", made["id"])["backup"]["segments"]
    for file in (rc.backups / "segments" / first["path"]).iterdir():
        file.unlink()


# The world each case starts from: its builder and the command crashed in it.
WORLDS = {"backup": (build, BACKUP), "restore": (build_restore, RESTORE), "recopy": (build_recopy, BACKUP)}

# (world, failpoint, mode)
CASES = [
    ("backup", "backup.after-copy@2", "kill"),  # one segment copied, the second and the manifest not
    ("backup", "backup.after-copy", "raise"),
    ("recopy", "backup.before-aside-removed", "kill"),  # the whole copy in place, the damaged one set aside
    ("restore", "restore.after-copy", "kill"),  # the backup's copies in the log store, the catalog not
    ("restore", "recover.after-metadata", "raise"),  # B restored and recovering, old files not removed
]


@pytest.fixture(scope="module")
def worlds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Per world: the template world and what the uninterrupted command leaves."""
    built: dict[str, tuple[Path, dict[str, Any]]] = {}
    for name, (builder, command) in WORLDS.items():
        template = tmp_path_factory.mktemp("backup-template")
        rc = Replctl(template)
        rc("init")
        builder(rc)
        reference = tmp_path_factory.mktemp("backup-reference")
        shutil.copytree(template, reference, dirs_exist_ok=True)
        ref = Replctl(reference)
        ref(*command)
        built[name] = (template, observe(ref))
    return built


def without_backup_ids(status: dict[str, Any]) -> dict[str, Any]:
    # A re-run backup has a new id; everything else in the status must be as after one uninterrupted run.
    return {
        **status,
        "locations": [{k: v for k, v in x.items() if k != "recoverable"} for x in status["locations"]],
    }


@pytest.mark.parametrize(("name", "failpoint", "mode"), CASES, ids=[f"{m}-{w}-{p}" for w, p, m in CASES])
def test_a_killed_backup_or_restore_leaves_no_half_backup_and_converges_when_rerun(
    name: str,
    failpoint: str,
    mode: str,
    worlds: dict[str, tuple[Path, dict[str, Any]]],
    tmp_path: Path,
) -> None:
    template, expected = worlds[name]
    command = WORLDS[name][1]
    world = World.copy_of(template, tmp_path / "world")
    listed_before = Replctl(world.root).json("backup", "list")["backups"]
    if mode == "kill":
        kill_at(world, command, failpoint)
        dead = world.running_operations()
    else:
        dead = crash_in_process(world, command, failpoint)
    assert len(dead) == 1 and world.held_leases()  # the crashed operation left running, its leases held
    rc = world.tool()
    # BK1: the manifest is written last, so a crash leaves no backup that `list` shows.
    assert rc.json("backup", "list")["backups"] == listed_before
    orphans = world.orphans()
    poison(world, orphans)
    rc(*command)
    got = observe(rc)
    assert got["logs"] == expected["logs"]
    assert without_backup_ids(got["status"]) == without_backup_ids(expected["status"])
    assert rc.json("log", "verify")["ok"]
    assert rc.json("backup", "verify")["ok"]
    # A damaged copy a killed recopy set aside is gone with the re-run: nothing is left to list or count.
    assert sorted((world.root / "backups").rglob("*.damaged")) == []
    assert world.held_leases() == []
    assert_taken_over(rc, dead[0])
    lost, duplicated = lost_and_duplicated(expected["logs"], got["logs"])
    assert (lost, duplicated) == (0, 0)
    REPORT.add(Survived(SUITE, command[0], failpoint, mode, len(orphans), lost, duplicated))


def test_a_backup_dead_after_its_manifest_is_listed_whole_and_a_rerun_reuses_every_copy(
    worlds: dict[str, tuple[Path, dict[str, Any]]], tmp_path: Path
) -> None:
    # BK1, issue 16: the backup step is journalled with the operation's end, so a crash after the manifest
    # leaves a backup that is complete (listed, verified) and an operation that journalled no step; the re-run
    # takes its leases over and makes a backup of the same state from the copies already there.
    template, expected = worlds["backup"]
    world = World.copy_of(template, tmp_path / "world")
    [dead] = crash_in_process(world, BACKUP, "operation.before-finish")
    assert sorted(world.held_leases()) == ["backups:B"]  # the location's was given back after the read
    rc = world.tool()
    [listed] = rc.json("backup", "list")["backups"]
    assert (listed["location"], listed["segments"], listed["segments_reused"]) == ("B", 2, 0)
    assert rc.json("backup", "verify")["ok"]
    assert rc.json("ops", "show", dead)["operation"]["steps"] == []
    [again] = rc.json("backup", "create", "B")["backups"]
    assert (again["segments"], again["segments_reused"], again["copied"]) == (2, 2, [])
    assert_taken_over(rc, dead)
    assert world.held_leases() == []
    assert observe(rc)["logs"] == expected["logs"]


def test_a_damaged_copy_a_killed_recopy_set_aside_is_never_listed_and_the_next_prune_removes_it(
    worlds: dict[str, tuple[Path, dict[str, Any]]], tmp_path: Path
) -> None:
    # BK1: a recopy killed between putting the whole copy in place and removing the damaged one it replaced
    # left the damaged one set aside in the backup store for good; a prune of the location removes it now, as
    # the next backup does (the re-run above).
    template, _ = worlds["recopy"]
    world = World.copy_of(template, tmp_path / "world")
    rc = world.tool()
    [listed] = rc.json("backup", "list")["backups"]
    kill_at(world, BACKUP, "backup.before-aside-removed")
    [aside] = (world.root / "backups" / "segments" / "B").glob(".*.damaged")
    assert aside.is_dir()
    assert rc.json("backup", "list")["backups"] == [listed]  # no backup made, nothing counted
    assert rc.json("backup", "verify")["ok"]  # the whole copy in place serves the earlier backup too
    pruned = rc.json("backup", "prune", "B", "--keep-last", "1")
    assert (pruned["removed"], pruned["files_removed"], pruned["kept"]) == ([], [], [listed["id"]])
    assert sorted((world.root / "backups").rglob("*.damaged")) == []
    assert rc.json("backup", "verify")["ok"]
