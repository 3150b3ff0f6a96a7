"""Backup and restore stories through the CLI with exact log contents (rules.md BK1–BK4, DR1–DR5)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import uuid
from contextlib import closing
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from clitool import Replctl
from unremovable import unremovable

from replctl import failpoints
from replctl.adapters.logstore import LogStore
from replctl.cli.context import AppContext
from replctl.localfiles import digest

pytestmark = pytest.mark.spark


def two_locations(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")


def a1_backed_up(rc: Replctl) -> dict[str, Any]:
    """A↔B, a1 at A, and A backed up: the backup's `backup create --json` entry."""
    two_locations(rc)
    rc.append("A", "a1")
    made: dict[str, Any] = rc.json("backup", "create", "A")["backups"][0]
    return made


def test_a_restored_from_its_backup_gets_back_what_its_neighbour_deleted_and_what_came_after(
    rc: Replctl,
) -> None:
    # (a) BK2: B backed up; A deletes its first events; B loses everything; the backup brings them back.
    two_locations(rc)
    rc.append("A", "a1", "a2")
    rc.append("B", "b1")
    rc("replicate")
    made = rc.json("backup", "create", "B")["backups"]
    assert [(b["location"], b["seq"], b["events"], b["segments_reused"]) for b in made] == [("B", 3, 3, 0)]
    rc.append("A", "a3")
    rc.append("B", "b2")
    rc("replicate")
    before = rc.stored("B")
    assert before == [("B", 1, "b1"), ("A", 1, "a1"), ("A", 2, "a2"), ("B", 4, "b2"), ("A", 4, "a3")]
    rc("delete", "A", "--upto", "2")  # B holds a1, a2 (DEL3): A deletes them for good
    assert rc.keys("A") == ["b1", "a3", "b2"]
    rc("drill", "disaster", "B", "--from", "1")
    doc = rc.json("recover", "location", "B", "--from-backup", "latest")
    assert doc["backup"] == made[0]["id"] and doc["refused"] == []
    # a1, a2 from the backup (A deleted them); a3 and B's own b2, written after the backup, from A.
    assert doc["rounds"] == [{"round": 1, "sources": ["A"], "written": 2}]
    restored = [
        (e["seq"], e["origin"], e["origin_time"], e["key"]) for e in rc.json("log", "show", "B")["events"]
    ]
    # DR1: T = 5 (the seq the catalog recorded); recovered events are numbered after it (gaps allowed, M4).
    assert doc["clock"] == {"before": 5, "after": 10, "floor": 5}
    assert restored == [
        (1, "B", 1, "b1"),
        (2, "A", 1, "a1"),
        (3, "A", 2, "a2"),
        (9, "A", 4, "a3"),
        (10, "B", 4, "b2"),
    ]
    rc.append("B", "b3")
    # B's clock never runs in the past: b3's origin time exceeds every B event before the loss.
    assert rc.stored("B")[-1] == ("B", 11, "b3")
    rc("replicate")
    assert rc.keys("A") == ["b1", "a3", "b2", "b3"]
    assert rc.json("log", "verify")["ok"]


def test_without_the_backup_the_same_recovery_leaves_a_blocked(rc: Replctl) -> None:
    two_locations(rc)
    rc.append("A", "a1", "a2")
    rc.append("B", "b1")
    rc("replicate")
    rc("delete", "A", "--upto", "2")
    rc("drill", "disaster", "B", "--from", "1")
    out = rc("recover", "location", "B", "--json", expect=5).doc
    assert [(r["source"], r["rule"]) for r in out["refused"]] == [("A", "DR4")]
    assert rc.connection("A", "B")["state"] == "blocked"
    assert rc.keys("B") == []


def test_restoring_a_location_from_another_locations_backup_is_refused_and_changes_nothing(
    rc: Replctl,
) -> None:
    # (c) BK2: a backup of another location is refused (a rule: exit 3). Found by the differential test,
    # which took it as a refusal where the CLI had exited 2.
    two_locations(rc)
    rc.append("A", "a1")
    rc("replicate")
    made = rc.json("backup", "create", "A")["backups"]
    before = rc.snapshot()
    out = rc.json("recover", "location", "B", "--from-backup", made[0]["id"], expect=3)
    assert out["error"] == {
        "code": "BK2",
        "message": f"refused [BK2]: backup {made[0]['id']} is a backup of A, not of B",
        "hint": "replctl backup list B",
    }
    assert rc.snapshot() == before and rc.keys("B") == ["a1"]


def test_restoring_latest_with_no_backup_of_the_location_is_a_bk2_refusal_whose_hint_runs(
    rc: Replctl,
) -> None:
    # BK2: the backup store answered and holds no backup of B (only one of A): a refusal (exit 3), not an
    # environment failure (exit 6). Its hint, plain event recovery from B's neighbours, is accepted.
    two_locations(rc)
    rc.append("A", "a1")
    rc("replicate")
    rc.json("backup", "create", "A")
    rc("drill", "disaster", "B", "--from", "1")
    before = rc.snapshot()
    for dry_run in ([], ["--dry-run"]):
        out = rc.json("recover", "location", "B", "--from-backup", "latest", *dry_run, expect=3)
        assert out["error"] == {
            "code": "BK2",
            "message": f"refused [BK2]: the backup store {rc.backups} holds no backup of B; nothing was changed",
            "hint": "replctl recover location B",
        }
    text = rc("recover", "location", "B", "--from-backup", "latest", expect=3)
    assert "hint: replctl recover location B" in text.stdout + text.stderr
    assert rc.snapshot() == before
    rc("recover", "location", "B")
    assert rc.keys("B") == ["a1"]


def test_a_backup_id_the_store_does_not_hold_is_an_unknown_name_exit_2(rc: Replctl) -> None:
    # cli.md: an unknown name exits 2; `backup show nosuch` exited 6 as if the backup store had failed.
    two_locations(rc)
    rc.append("A", "a1")
    rc("backup", "create", "A")
    before = rc.snapshot()
    unknown = {
        "code": "unknown-backup",
        "message": f"unknown backup 'nosuch': the backup store {rc.backups} holds no backup of that id",
        "hint": "list them with: replctl backup list",
    }
    for args in (
        ("backup", "show", "nosuch"),
        ("backup", "verify", "nosuch"),
        ("recover", "location", "A", "--from-backup", "nosuch"),
        ("recover", "location", "A", "--from-backup", "nosuch", "--dry-run"),
    ):
        assert rc.json(*args, expect=2)["error"] == unknown, args
    assert rc("backup", "show", "nosuch", expect=2).stderr.splitlines()[-2:] == [
        f"error: unknown backup 'nosuch': the backup store {rc.backups} holds no backup of that id",
        "hint: list them with: replctl backup list",
    ]
    assert rc.snapshot() == before


def test_bk3_does_not_count_a_neighbours_logically_deleted_prefix_beyond_its_cut(rc: Replctl) -> None:
    """B's logical deletion up to 1 cuts through the segment holding a1, a2: only a1 is hidden from B's
    passes (DEL1), so B serves a2 and a recovery of A loses nothing its backup holds (BK3 has nothing to
    refuse). Counting B's segment whole named a2 as lost and refused the recovery (exit 3)."""
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1", "a2")
    rc("replicate")
    rc("delete", "B", "--upto", "1", "--logical")
    rc("delete", "A", "--upto", "1")
    rc("backup", "create", "A")
    rc("drill", "disaster", "A", "--from", "2")
    dry = rc.json("recover", "location", "A", "--dry-run")
    assert (dry["lost"], dry["rounds"]) == ({}, [{"round": 1, "sources": ["B"], "written": None}])
    doc = rc.json("recover", "location", "A")
    assert (doc["lost"], doc["discarded"], doc["refused"]) == ({}, {}, [])
    assert doc["rounds"] == [{"round": 1, "sources": ["B"], "written": 1}]
    assert [(e["origin"], e["origin_time"], e["key"]) for e in rc.json("log", "show", "A")["events"]] == [
        ("A", 2, "a2")
    ]
    assert rc.json("log", "verify")["ok"]


def test_status_shows_which_locations_a_loss_would_hurt_and_the_backup_that_fixes_it(rc: Replctl) -> None:
    # BK3: after A deletes a1, a2, B alone holds them: B is not recoverable until it is backed up.
    two_locations(rc)
    rc.append("A", "a1", "a2")
    rc("replicate")
    assert rc.location("B")["recoverable"] == {"state": "yes", "backup": None, "shortfall": {}}
    rc("delete", "A", "--upto", "2")
    assert rc.location("B")["recoverable"] == {"state": "no", "backup": None, "shortfall": {"A": [1, 2]}}
    assert rc.location("A")["recoverable"] == {"state": "yes", "backup": None, "shortfall": {}}
    text = rc("status").stdout
    assert "no (would lose A: 1..2; fix: replctl backup create B)" in text
    made = rc.json("backup", "create", "B")["backups"][0]
    assert rc.location("B")["recoverable"] == {"state": "yes", "backup": made["id"], "shortfall": {}}


def test_a_backup_survives_compaction_deletion_and_pruning_and_later_backups_reuse_its_segments(
    rc: Replctl,
) -> None:
    # (d) BK1: the backup's files are its own; what later happens to the live log never reaches them.
    two_locations(rc)
    rc.append("A", "a1")
    rc.append("A", "a2")
    rc.append("A", "a3")
    rc("replicate")
    first = rc.json("backup", "create", "A", "--reason", "before maintenance")["backups"][0]
    assert (first["events"], first["segments"], first["segments_reused"]) == (3, 3, 0)
    rc.append("A", "a4")
    second = rc.json("backup", "create", "A")["backups"][0]
    assert (second["events"], second["segments"], second["segments_reused"]) == (4, 4, 3)  # incremental
    rc("log", "compact", "A")
    rc("delete", "A", "--upto", "2")
    assert rc.keys("A") == ["a3", "a4"]
    pruned = rc.json("backup", "prune", "A", "--keep-last", "1")
    # The first backup goes; every file it named is still listed by the second, so none is removed.
    assert (pruned["removed"], pruned["files_removed"]) == ([first["id"]], [])
    listed = rc.json("backup", "list", "A")["backups"]
    assert [b["id"] for b in listed] == [second["id"]]
    verified = rc.json("backup", "verify")
    assert verified["backups"] == [
        {"id": second["id"], "location": "A", "ok": True, "problems": [], "violations": []}
    ]
    shown = rc.json("backup", "show", second["id"])["backup"]
    assert [(s["seq_lo"], s["seq_hi"]) for s in shown["segments"]] == [(1, 1), (2, 2), (3, 3), (4, 4)]
    # The live log lost a1, a2; a restore from the backup gets them back, as the backup took them.
    rc("drill", "disaster", "A", "--from", "1")
    doc = rc.json("recover", "location", "A", "--from-backup", second["id"])
    assert doc["refused"] == []
    assert rc.keys("A") == ["a1", "a2", "a3", "a4"]
    assert rc.json("log", "verify")["ok"]


def test_a_damaged_backup_is_refused_with_exit_6_and_changes_nothing(rc: Replctl) -> None:
    made = a1_backed_up(rc)
    shown = rc.json("backup", "show", made["id"])["backup"]
    for file in (rc.backups / "segments" / shown["segments"][0]["path"]).rglob("*.parquet"):
        file.write_bytes(b"x" * file.stat().st_size)  # its size kept: only the digest tells
    out = rc.json("backup", "verify", expect=6)
    copy = rc.backups / "segments" / shown["segments"][0]["path"]
    # `backup create` checks a reused copy by its sizes only: the hint has the altered copy removed first.
    repair = (
        f"remove the copies whose bytes differ ({copy}), then run `replctl backup create A`: it copies the "
        "damaged segments again from its log"
    )
    assert out["error"] == {
        "code": "backup-damaged",
        "message": f"backup {made['id']} is damaged: {shown['segments'][0]['path']}: digest differs from the "
        "manifest's",
        "hint": repair,
    }
    # Files that fail their digests are not read as events: no invariant is reported on them.
    assert out["backups"][0]["violations"] == []
    before = rc.snapshot()
    refused = rc.json("recover", "location", "A", "--from-backup", "latest", expect=6)
    assert refused["error"] == {**out["error"], "message": refused["error"]["message"]}
    assert refused["error"]["message"] == out["error"]["message"]
    assert rc.snapshot() == before and rc.keys("A") == ["a1"]
    # Following the hint gives a whole backup; without the removal, the new backup would reuse the copy.
    shutil.rmtree(copy)
    [again] = rc.json("backup", "create", "A")["backups"]
    assert (again["segments_reused"], again["segments_recopied"]) == (0, 1)
    assert [b["ok"] for b in rc.json("backup", "verify", again["id"])["backups"]] == [True]


def test_a_copy_the_backup_store_lost_is_copied_again_so_the_backup_after_it_restores_bk1(
    rc: Replctl,
) -> None:
    # BK1: the store lost the copy of B's first segment, which an earlier manifest names. The next backup
    # reused it unchecked: status said B recoverable (BK3), BK4 let A delete, and after the disaster the
    # restore refused the damaged backup (exit 6) while the plain recovery pointed back at it (BK3).
    two_locations(rc)
    rc("log", "append", "A", "--generate", "3")
    rc("replicate")
    older = rc.json("backup", "create", "B")["backups"][0]
    [lost] = (rc.backups / "segments" / "B").glob("seg-*")
    shutil.rmtree(lost)
    rc("log", "append", "A", "--generate", "2", "--seed", "9")
    rc("replicate")
    events = rc.json("log", "show", "B")["events"]
    plan = rc.json("backup", "create", "B", "--dry-run")["backups"][0]
    text = rc("backup", "create", "B", "--dry-run").stdout
    made = rc.json("backup", "create", "B")["backups"][0]
    [first, second] = made["copied"]
    assert first == f"B/{lost.name}"
    # The dry run says what the run does: the lost copy is copied again, not counted as reused.
    for doc in (plan, made):
        assert (doc["segments"], doc["segments_reused"], doc["segments_recopied"]) == (2, 0, 1)
        assert doc["copied"] == [first, second]
    assert text.splitlines()[1:] == [
        "  would copy 1 segment(s) again: their earlier copies were missing or of another size"
    ]
    # Copied again from the live segment, whose digest the older manifest recorded: that backup is whole too.
    assert [(b["id"], b["ok"]) for b in rc.json("backup", "verify")["backups"]] == [
        (older["id"], True),
        (made["id"], True),
    ]
    assert rc.location("B")["recoverable"] == {"state": "yes", "backup": made["id"], "shortfall": {}}
    rc("delete", "A", "--upto", "5", "--require-recoverable")
    assert rc.keys("A") == []
    rc("drill", "disaster", "B", "--from", "1", "--yes")
    doc = rc.json("recover", "location", "B", "--from-backup", "latest")
    assert (doc["backup"], doc["lost"], doc["discarded"], doc["refused"]) == (made["id"], {}, {}, [])
    # BK2: B's log is exactly the backup's events, with their seqs, without --accept-loss.
    assert rc.json("log", "show", "B")["events"] == events
    assert [(e["seq"], e["origin"], e["origin_time"]) for e in events] == [
        (1, "A", 1),
        (2, "A", 2),
        (3, "A", 3),
        (4, "A", 4),
        (5, "A", 5),
    ]
    assert rc.json("log", "verify")["ok"]


def test_backup_verify_says_a_copy_lost_its_file_and_hints_the_repair_the_live_log_allows(
    rc: Replctl,
) -> None:
    # A copy whose file is gone but whose folder stays is "missing", not a digest that differs; the hint is
    # the way out: a new backup while A's log holds the segment, an older backup once it does not.
    made = a1_backed_up(rc)
    [path] = [s["path"] for s in rc.json("backup", "show", made["id"])["backup"]["segments"]]
    for file in (rc.backups / "segments" / path).rglob("*.parquet"):
        file.unlink()
    assert (rc.backups / "segments" / path).is_dir()
    damaged = f"backup {made['id']} is damaged: {path}: missing"
    create = "run `replctl backup create A`: it copies the damaged segments again from its log"
    out = rc.json("backup", "verify", expect=6)
    assert out["error"] == {"code": "backup-damaged", "message": damaged, "hint": create}
    assert rc("backup", "verify", expect=6).stdout.splitlines() == [
        f"{made['id']}: DAMAGED: {path}: missing",
        f"hint: {create}",
    ]
    refused = rc.json("recover", "location", "A", "--from-backup", "latest", expect=6)
    assert refused["error"] == {"code": "backup-damaged", "message": damaged, "hint": create}
    rc("drill", "disaster", "A", "--from", "1", "--yes")
    older = (
        "A's log is damaged or recovering, so no new backup can copy the damaged segments again: restore an "
        "older backup (`replctl backup list A`, then `replctl backup verify ID`), or recover A without one, "
        "accepting the loss: `replctl recover location A --accept-loss`"
    )
    assert rc.json("backup", "verify", expect=6)["error"]["hint"] == older
    refused = rc.json("recover", "location", "A", "--from-backup", "latest", expect=6)
    assert refused["error"] == {"code": "backup-damaged", "message": damaged, "hint": older}


def work_remotely(rc: Replctl, monkeypatch: pytest.MonkeyPatch) -> Replctl:
    """`rc` with its log store worked on as a remote one (`hdfs://`, `s3a://`): through a pyarrow file system
    over the same real folder, so the restore's copy and digest take the non-local path; Spark reads and
    writes that folder as before."""

    def remote_store(self: AppContext) -> LogStore:
        return LogStore(str(rc.store), filesystem=pafs.LocalFileSystem())

    monkeypatch.setattr(AppContext, "store", remote_store)
    return rc


@pytest.fixture
def remote(rc: Replctl, monkeypatch: pytest.MonkeyPatch) -> Replctl:
    """`rc` on a log store worked on as a remote one (`work_remotely`)."""
    return work_remotely(rc, monkeypatch)


@pytest.fixture(params=["local", "remote"])
def either_store(request: pytest.FixtureRequest, rc: Replctl, monkeypatch: pytest.MonkeyPatch) -> Replctl:
    """`rc` on its local log store, then on the same store worked on as a remote one."""
    return work_remotely(rc, monkeypatch) if request.param == "remote" else rc


def test_a_backup_copy_changed_after_its_check_is_not_restored_and_changes_nothing(
    either_store: Replctl,
) -> None:
    # Issue 19: the restore compares each copy it made with the manifest's digest, not only the backup's own
    # copy before it starts; a file changed in between (here once the leases are held) restores nothing. On a
    # remote log store too, where the copy is read back through the store's file system.
    rc = either_store
    made = a1_backed_up(rc)
    path = rc.json("backup", "show", made["id"])["backup"]["segments"][0]["path"]
    rc.append("A", "a2")
    before = rc.snapshot()
    folders = sorted(p.name for p in (rc.store / "A").iterdir())

    def tamper() -> None:
        for file in (rc.backups / "segments" / path).rglob("*.parquet"):
            file.write_bytes(b"damaged")

    with failpoints.calling("operation.after-lease", tamper) as ran:
        # a2 is stored at A only: discarding it needs consent (DR0), given here to reach the copy's check.
        refused = rc.json("recover", "location", "A", "--from-backup", "latest", "--accept-loss", expect=6)
    assert ran == ["operation.after-lease"]
    assert refused["error"] == {
        "code": "backup-damaged",
        "message": f"backup {made['id']} is damaged: the copy of {path} differs from the manifest's digest; "
        "nothing was restored (BK2)",
        "hint": f"replctl backup verify {made['id']}",
    }
    assert rc.snapshot() == before
    assert rc.keys("A") == ["a1", "a2"]
    assert sorted(p.name for p in (rc.store / "A").iterdir()) == folders  # the copy made was removed


def test_a_deletion_that_would_leave_b_unrecoverable_is_refused_until_b_is_backed_up(rc: Replctl) -> None:
    # (b) BK4: A may delete a1, a2 (B holds them, DEL3), but then only B's log would still hold them.
    two_locations(rc)
    rc.append("A", "a1", "a2")
    rc("replicate")
    plan = rc.json("delete", "A", "--upto", "2", "--dry-run")
    assert plan["makes_unrecoverable"] == [
        {
            "location": "B",
            "state": "no",
            "backup": None,
            "shortfall": {"A": [1, 2]},
            "fix": "replctl backup create B",
        }
    ]
    before = rc.snapshot()
    refused = rc.json("delete", "A", "--upto", "2", "--require-recoverable", expect=3)
    assert refused["error"] == {
        "code": "BK4",
        "message": "refused [BK4]: deleting A up to 2 would make B unrecoverable (B would lose A: 1..2)",
        "hint": "replctl backup create B",
    }
    assert rc.snapshot() == before and rc.keys("A") == ["a1", "a2"]
    # The catalog's policy refuses the same way without the flag.
    (rc.root / "replctl.toml").write_text("require_recoverable = true\n")
    rc.env["REPLCTL_CONFIG"] = str(rc.root / "replctl.toml")
    assert rc.json("delete", "A", "--upto", "2", expect=3)["error"]["code"] == "BK4"
    assert rc.keys("A") == ["a1", "a2"]
    rc("backup", "create", "B")
    done = rc.json("delete", "A", "--upto", "2", "--require-recoverable")
    assert (done["deleted_upto"], done["makes_unrecoverable"]) == (2, [])
    assert rc.keys("A") == []


def test_a_restore_from_a_backup_older_than_a_neighbours_deletion_is_planned_as_it_runs(rc: Replctl) -> None:
    # BK2 + DR4: B's backup predates a1, a2, which A has since deleted; A cannot serve B, dry run or not.
    two_locations(rc)
    rc.append("B", "b1")
    rc("backup", "create", "B")
    rc.append("A", "a1", "a2")
    rc("replicate")
    rc("delete", "A", "--upto", "2")
    rc("drill", "disaster", "B", "--from", "1")
    plan = rc.json("recover", "location", "B", "--from-backup", "latest", "--dry-run")
    assert (plan["rounds"], [(r["source"], r["rule"]) for r in plan["refused"]]) == ([], [("A", "DR4")])
    out = rc("recover", "location", "B", "--from-backup", "latest", "--json", expect=5).doc
    assert (out["rounds"], [(r["source"], r["rule"]) for r in out["refused"]]) == ([], [("A", "DR4")])
    assert out["refused"][0]["missing"] == plan["refused"][0]["missing"] == {"A": [1, 2]}
    assert rc.keys("B") == ["b1"] and rc.connection("A", "B")["state"] == "blocked"


def test_backup_verify_checks_the_backups_own_events_after_the_live_log_is_gone(rc: Replctl) -> None:
    # §9 on the backup's events, read from the backup store only: the live log has lost everything.
    two_locations(rc)
    rc.append("A", "a1", "a2")
    rc.append("B", "b1")
    rc("replicate")
    made = rc.json("backup", "create", "B")["backups"][0]
    rc("drill", "disaster", "B", "--from", "1")
    assert rc.json("log", "show", "B", expect=6)["error"]["code"] == "store-damaged"
    out = rc.json("backup", "verify", made["id"])
    assert out["backups"] == [
        {"id": made["id"], "location": "B", "ok": True, "problems": [], "violations": []}
    ]
    assert rc("backup", "verify", made["id"]).stdout == f"{made['id']}: ok\n"


def _give_the_second_event_the_first_seq(segment: Path) -> None:
    # A part file rewritten in place (as a faulty tool or disk might): two events now carry seq 1.
    part = next(segment.glob("*.parquet"))
    table = pq.read_table(part)
    seqs = table.column("seq").to_pylist()
    assert seqs == [1, 2]
    index = table.schema.get_field_index("seq")
    table = table.set_column(index, table.schema.field(index), pa.array([1, 1], type=pa.int64()))
    pq.write_table(table, part)


def test_backup_create_refuses_a_log_whose_segment_differs_from_its_row_dr0(rc: Replctl) -> None:
    # A backup of a damaged log would hold other events than its manifest says: refused, nothing written.
    rc("location", "add", "A")
    rc.append("A", "a1", "a2")
    (segment,) = [p for p in (rc.store / "A").iterdir() if p.is_dir()]
    _give_the_second_event_the_first_seq(segment)
    out = rc.json("backup", "create", "A", expect=4)
    assert out["error"] == {
        "code": "damaged",
        "message": "A's log is damaged: 1 catalogued segment(s) from seq 1 on are missing from the store or "
        f"differ from their catalog rows (files differ at A/{segment.name}); it is neither read nor written "
        "until it is recovered (DR0)",
        "hint": "replctl recover location A",
    }
    assert rc.json("backup", "list")["backups"] == []


def test_backup_verify_refuses_a_backup_whose_events_break_i7_although_its_digests_match(rc: Replctl) -> None:
    # A backup written wrong by a faulty tool, its manifest's digests taken of what it wrote: every digest
    # matches, but the backup's events assign seq 1 twice (I7) and the segment disagrees with its entry.
    # (A live log changed this way is damage: the census refuses to back it up, DR0.)
    rc("location", "add", "A")
    rc.append("A", "a1", "a2")
    (segment,) = [p for p in (rc.store / "A").iterdir() if p.is_dir()]
    made = rc.json("backup", "create", "A")["backups"][0]
    path = f"A/{segment.name}"
    copy = rc.backups / "segments" / path
    _give_the_second_event_the_first_seq(copy)
    manifest_file = rc.backups / "manifests" / f"{made['id']}.json"
    manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
    (entry,) = manifest["segments"]
    entry["digest"] = digest(copy)
    entry["bytes"] = sum(f.stat().st_size for f in copy.iterdir())
    manifest_file.write_text(json.dumps(manifest), encoding="utf-8")
    out = rc.json("backup", "verify", expect=6)
    i7 = "violation [I7] at seq 1: seq 1 is assigned twice"
    seg = f"violation [SEG] at seq 1: segment {path} holds seq 1..1 (2 events); the manifest says 1..2 (2 events)"
    assert out["backups"][0]["problems"] == [i7, seg]
    assert [(v["invariant"], v["seq"]) for v in out["backups"][0]["violations"]] == [("I7", 1), ("SEG", 1)]
    assert out["error"] == {
        "code": "backup-damaged",
        "message": f"backup {made['id']} is damaged: {i7}; {seg}",
        "hint": "replctl log verify A",
    }
    text = rc("backup", "verify", expect=6).stdout
    assert text == f"{made['id']}: DAMAGED: {i7}; {seg}\nhint: replctl log verify A\n"


def test_a_file_uri_backup_store_backs_up_verifies_and_restores_end_to_end(rc: Replctl) -> None:
    # BK1/BK2 with the backup store named as a `file://` URI (percent-encoded, as `Path.as_uri()` writes it).
    two_locations(rc)
    rc.append("A", "a1", "a2")
    rc("replicate")
    root = rc.root / "backup store"
    rc.env["REPLCTL_BACKUP_STORE"] = root.as_uri()
    made = rc.json("backup", "create", "B")["backups"][0]
    assert (made["events"], made["segments_reused"]) == (2, 0)
    assert (root / "manifests" / f"{made['id']}.json").is_file()
    assert [b["id"] for b in rc.json("backup", "list", "B")["backups"]] == [made["id"]]
    assert rc.json("backup", "verify", made["id"])["backups"][0]["ok"]
    # `--to` takes the same URI; a second store starts its own chain of copies.
    other = rc.root / "second store"
    again = rc.json("backup", "create", "B", "--to", other.as_uri())["backups"][0]
    assert (again["events"], again["segments_reused"]) == (2, 0) and (other / "manifests").is_dir()
    rc("drill", "disaster", "B", "--from", "1")
    doc = rc.json("recover", "location", "B", "--from-backup", made["id"])
    assert (doc["backup"], doc["refused"]) == (made["id"], [])
    assert rc.stored("B") == [("A", 1, "a1"), ("A", 2, "a2")]
    assert rc.json("log", "verify")["ok"]


def test_a_backup_store_in_the_log_store_is_refused_and_the_hinted_one_backs_up_and_restores(
    rc: Replctl,
) -> None:
    # BK1/BK2: a backup store inside the log store would look like a location's log there; it is refused
    # before anything is written, and the folder the hint names is the one to use.
    two_locations(rc)
    rc.append("A", "a1", "a2")
    rc("replicate")
    files = sorted(p.relative_to(rc.store) for p in rc.store.rglob("*"))
    ops = rc.json("ops", "list")["operations"]
    doc = rc.json("backup", "create", "B", "--to", str(rc.store / "bk"), expect=2)
    assert (doc["error"]["code"], doc["error"]["hint"]) == (
        "store-overlap",
        f"back up apart from the log store: replctl backup create B --to {rc.root / 'backups'}; "
        "set backup_store there to keep it",
    )
    assert sorted(p.relative_to(rc.store) for p in rc.store.rglob("*")) == files
    assert rc.json("ops", "list")["operations"] == ops
    made = rc.json("backup", "create", "B", "--to", str(rc.root / "backups"))["backups"][0]
    rc("drill", "disaster", "B", "--from", "1")
    # The same backups copied into the log store are not restored from: the restore changes nothing.
    shutil.copytree(rc.root / "backups", rc.store / "bk")
    rc.env["REPLCTL_BACKUP_STORE"] = str(rc.store / "bk")
    before = {**rc.snapshot(), "ops": rc.json("ops", "list")["operations"]}
    doc = rc.json("recover", "location", "B", "--from-backup", made["id"], expect=2)
    assert doc["error"]["code"] == "store-overlap"
    assert {**rc.snapshot(), "ops": rc.json("ops", "list")["operations"]} == before
    shutil.rmtree(rc.store / "bk")
    rc.env["REPLCTL_BACKUP_STORE"] = str(rc.root / "backups")
    assert rc.json("recover", "location", "B", "--from-backup", made["id"])["backup"] == made["id"]
    assert rc.stored("B") == [("A", 1, "a1"), ("A", 2, "a2")]
    assert rc.json("log", "verify")["ok"]


def test_a_restore_into_a_remote_log_store_brings_back_the_backups_events(remote: Replctl) -> None:
    # BK2 on a non-local log store: the backup's segments are copied in through the store's file system
    # (before, the copy needed a local path and the restore exited 6).
    rc = remote
    two_locations(rc)
    rc.append("A", "a1", "a2")
    rc("replicate")
    made = rc.json("backup", "create", "A")["backups"][0]
    rc.append("B", "b1")
    rc("replicate")
    doc = rc.json("recover", "location", "A", "--from-backup", made["id"])
    assert (doc["backup"], doc["refused"]) == (made["id"], [])
    # a1, a2 keep their seqs: they are the backup's files, copied in; b1 comes back from B after the floor (DR1).
    assert (doc["rounds"], doc["clock"]) == (
        [{"round": 1, "sources": ["B"], "written": 1}],
        {"before": 3, "after": 6, "floor": 3},
    )
    shown = [
        (e["seq"], e["origin"], e["origin_time"], e["key"]) for e in rc.json("log", "show", "A")["events"]
    ]
    assert shown == [(1, "A", 1, "a1"), (2, "A", 2, "a2"), (6, "B", 3, "b1")]
    assert rc.json("log", "verify")["ok"]


def three_with_b_damaged(rc: Replctl) -> str:
    """A, B and C each hold one event; then B's log is destroyed (a drill), its catalog left as it was.
    Returns the path of B's lost segment."""
    for name in ("A", "B", "C"):
        rc("location", "add", name)
        rc.append(name, f"{name.lower()}1")
    (segment,) = [p for p in (rc.store / "B").iterdir() if p.is_dir()]
    rc("drill", "disaster", "B", "--from", "1")
    return f"B/{segment.name}"


B_DAMAGED = {
    "code": "damaged",
    "message": "B's log is damaged: 1 catalogued segment(s) from seq 1 on are missing from the store or differ "
    "from their catalog rows (missing at {segment}); it is neither read nor written until it is recovered (DR0)",
    "hint": "replctl recover location B",
}


def test_backup_create_of_every_location_backs_up_the_others_and_names_the_damaged_one_exit_5(
    rc: Replctl,
) -> None:
    """BK1/DR0, finding 6: B's damaged log is refused, A's and C's backups are made and listed, and the
    command says it is incomplete (exit 5); it used to exit 4 listing none of the backups it had made."""
    segment = three_with_b_damaged(rc)
    planned = rc.json("backup", "create", "--dry-run")
    assert [(b["location"], b["id"], b["events"]) for b in planned["backups"]] == [
        ("A", None, 1),
        ("C", None, 1),
    ]
    [refusal] = planned["refused"]
    assert refusal["location"] == "B" and refusal["error"]["code"] == "damaged"
    assert rc.json("backup", "list")["backups"] == []  # the dry run made none
    doc = rc.json("backup", "create", expect=5)
    assert doc["ok"] is True
    listed = rc.json("backup", "list")["backups"]
    assert [(b["id"], b["location"], b["events"]) for b in doc["backups"]] == [
        (b["id"], b["location"], 1) for b in listed
    ]
    assert [b["location"] for b in listed] == ["A", "C"]
    expected = {**B_DAMAGED, "message": B_DAMAGED["message"].format(segment=segment)}
    assert doc["refused"] == planned["refused"] == [{"location": "B", "error": expected}]
    journal = rc.json("ops", "list", "--limit", "3")["operations"]
    assert sorted((op["args"]["location"], op["outcome"]) for op in journal) == [
        ("A", "succeeded"),
        ("B", "refused"),
        ("C", "succeeded"),
    ]
    text = rc("backup", "create", expect=5).stdout
    assert f"refused B: {expected['message']}" in " ".join(text.split())
    assert "hint: replctl recover location B" in text


def test_backup_create_of_one_damaged_location_stays_exit_4(rc: Replctl) -> None:
    """DR0: naming only B, nothing can be made: B's refusal stands (exit 4), no backup is listed."""
    three_with_b_damaged(rc)
    out = rc.json("backup", "create", "B", expect=4)
    assert out["error"]["code"] == "damaged" and out["error"]["hint"] == "replctl recover location B"
    assert rc.json("backup", "list")["backups"] == []


def test_a_prune_that_leaves_a_location_unrecoverable_says_so_first_and_is_refused_when_required_bk3_bk4(
    rc: Replctl, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A's only backup holds a1, a2 and nothing else does: removing it leaves A unrecoverable (BK3).
    two_locations(rc)
    rc("topology", "remove", "A", "B", "--both")
    rc.append("A", "a1", "a2")
    made = rc.json("backup", "create", "A")["backups"][0]
    assert rc.location("A")["recoverable"]["state"] == "yes"
    hurt = [
        {
            "location": "A",
            "state": "no",
            "backup": None,
            "shortfall": {"A": [1, 2]},
            "fix": "replctl backup prune A --keep-last 1",
        }
    ]
    refusal = {
        "code": "BK4",
        "message": "refused [BK4]: removing the newest backup of A would make A unrecoverable "
        "(A would lose A: 1..2)",
        "hint": "replctl backup prune A --keep-last 1",
    }
    # Reported before acting, in the dry run as in the run (BK4's style, `makes_unrecoverable`).
    for prune in (["--keep-last", "0"], ["--older-than", "0s"]):
        dry = rc.json("backup", "prune", "A", *prune, "--dry-run")
        assert (dry["removed"], dry["makes_unrecoverable"]) == ([made["id"]], hurt)
        # Refused (exit 3) with the option or the catalog policy, dry run and run alike: nothing removed.
        for dry_run in ([], ["--dry-run"]):
            error = rc.json("backup", "prune", "A", *prune, "--require-recoverable", *dry_run, expect=3)[
                "error"
            ]
            assert error == refusal
    text = rc("backup", "prune", "A", "--keep-last", "0", "--dry-run").stdout
    assert (
        "warning [BK4]: A would become unrecoverable (would lose A: 1..2); "
        "fix: replctl backup prune A --keep-last 1" in text
    )
    monkeypatch.setenv("REPLCTL_REQUIRE_RECOVERABLE", "true")
    assert rc.json("backup", "prune", "--keep-last", "0", expect=3)["error"] == refusal
    assert [b["id"] for b in rc.json("backup", "list")["backups"]] == [made["id"]]
    assert rc.location("A")["recoverable"]["state"] == "yes"

    # Without the guard the prune runs and says what it did.
    monkeypatch.delenv("REPLCTL_REQUIRE_RECOVERABLE")
    done = rc("backup", "prune", "A", "--keep-last", "0").stdout
    assert "warning [BK4]: A is now unrecoverable (would lose A: 1..2)" in done
    assert rc.json("backup", "list")["backups"] == []
    assert rc.location("A")["recoverable"] == {"state": "no", "backup": None, "shortfall": {"A": [1, 2]}}


def test_backup_prune_takes_plan_out_and_apply_refuses_the_plan_once_the_backups_moved_on(
    rc: Replctl,
) -> None:
    # Every mutating command takes --plan-out (cli.md): the plan is the dry run; apply runs it exactly.
    first = a1_backed_up(rc)
    second = rc.json("backup", "create", "A")["backups"][0]
    plan = rc.root / "prune.json"
    rc("backup", "prune", "A", "--keep-last", "1", "--plan-out", str(plan))
    recorded = json.loads(plan.read_text())
    assert recorded["command"] == ["backup", "prune", "A", "--keep-last", "1"]
    assert (recorded["plan"]["removed"], recorded["plan"]["kept"]) == ([first["id"]], [second["id"]])
    assert len(rc.json("backup", "list", "A")["backups"]) == 2  # planning removed nothing

    # A backup made since changes what the prune would remove: the plan is stale (exit 3), nothing removed.
    third = rc.json("backup", "create", "A")["backups"][0]
    error = rc.json("apply", str(plan), expect=3)["error"]
    assert error["code"] == "stale-plan"
    assert (
        error["message"]
        == f"the plan made now differs from the one in {plan} (at plan.kept[0]); make the plan again"
    )
    assert [b["id"] for b in rc.json("backup", "list", "A")["backups"]] == [
        first["id"],
        second["id"],
        third["id"],
    ]

    rc("backup", "prune", "A", "--keep-last", "1", "--plan-out", str(plan))
    applied = rc.json("apply", str(plan))
    assert (applied["removed"], applied["kept"]) == ([first["id"], second["id"]], [third["id"]])
    assert [b["id"] for b in rc.json("backup", "list", "A")["backups"]] == [third["id"]]


def test_a_drill_on_a_retired_location_is_refused_since_it_can_never_be_recovered_ret1(rc: Replctl) -> None:
    two_locations(rc)
    rc.append("A", "a1")
    rc("replicate")
    rc("topology", "remove", "A", "B", "--both")
    rc("location", "retire", "A")
    for dry in ([], ["--dry-run"]):
        error = rc.json("drill", "disaster", "A", "--from", "1", *dry, expect=3)["error"]
        assert error == {
            "code": "RET1",
            "message": "refused [RET1]: A is retired; it can never be recovered, so a drill on it tests "
            "nothing and only destroys what is left (RET1)",
            "hint": "drill an active location: replctl location list",
        }
    assert rc.keys("A") == ["a1"]  # nothing destroyed


def backed_up_before_an_own_event(rc: Replctl) -> str:
    """M↔N replicated at m1, m2 and M backed up; then m3 stored intact at M only (finding 1)."""
    rc("location", "add", "M")
    rc("location", "add", "N")
    rc("topology", "add", "M", "N", "--both")
    rc.append("M", "m1", "m2")
    rc("replicate")
    made = rc.json("backup", "create", "M")["backups"][0]["id"]
    rc.append("M", "m3")
    return str(made)


def test_restoring_a_healthy_log_over_events_only_it_holds_is_refused_dry_run_and_run(rc: Replctl) -> None:
    # DR0 via BK2: the restore would drop m3, stored intact at M and nowhere else.
    made = backed_up_before_an_own_event(rc)
    refusal = {
        "code": "DR0",
        "message": f"refused [DR0]: recover location M --from-backup {made} would discard M:3, which M still "
        "stores intact and no other location stores; nothing was changed",
        "hint": f"replctl recover location M --from-backup {made} --accept-loss",
    }
    rc.refused_alike("recover", "location", "M", "--from-backup", "latest", error=refusal)
    assert rc.stored("M") == [("M", 1, "m1"), ("M", 2, "m2"), ("M", 3, "m3")]


def test_restoring_with_accept_loss_names_the_discarded_events(rc: Replctl) -> None:
    made = backed_up_before_an_own_event(rc)
    planned = rc.json("recover", "location", "M", "--from-backup", made, "--accept-loss", "--dry-run")
    doc = rc.json("recover", "location", "M", "--from-backup", made, "--accept-loss")
    for out in (planned, doc):
        assert (out["discarded"], out["lost"]) == ({"M": [3, 3]}, {"M": [3, 3]})
    assert rc.stored("M") == [("M", 1, "m1"), ("M", 2, "m2")]
    assert rc.location("M")["cvv"] == {"M": 2}


def test_restoring_over_an_own_event_the_neighbour_deleted_is_refused_dr0(rc: Replctl) -> None:
    # DR0 via BK2: N's CVV covers m3 but N deleted it physically; M stores the only copy.
    made = backed_up_before_an_own_event(rc)
    rc("replicate")
    rc("delete", "N", "--upto", "3")
    before = rc.snapshot()
    refusal = {
        "code": "DR0",
        "message": f"refused [DR0]: recover location M --from-backup {made} would discard M:3, which M still "
        "stores intact and no other location stores; nothing was changed",
        "hint": f"replctl recover location M --from-backup {made} --accept-loss",
    }
    planned = rc.json("recover", "location", "M", "--from-backup", "latest", "--dry-run", expect=3)
    assert planned["error"] == refusal
    assert rc.json("recover", "location", "M", "--from-backup", "latest", expect=3)["error"] == refusal
    assert rc.snapshot() == before
    assert rc.stored("M") == [("M", 1, "m1"), ("M", 2, "m2"), ("M", 3, "m3")]


def test_a_restore_dry_run_reads_the_own_events_the_backup_stores_not_its_cvv(rc: Replctl) -> None:
    # A⇄N filtered on x%: y1 (A:2) was lost in an earlier total loss, so the backup's CVV covers A:2 though
    # it stores only A:1 and A:3. The dry run reads the backup's events as the run reads the restored copies.
    rc("location", "add", "A")
    rc("location", "add", "N")
    rc("topology", "add", "A", "N", "--filter", "key like 'x%'")
    rc("topology", "add", "N", "A", "--filter", "key like 'x%'")
    rc.append("A", "x1", "y1", "x2")
    rc("replicate")
    rc("drill", "disaster", "A", "--from", "1")
    assert rc.json("recover", "location", "A")["lost"] == {"A": [2, 2]}
    rc("backup", "create", "A")
    rc("drill", "disaster", "A", "--from", "1")
    planned = rc.json("recover", "location", "A", "--from-backup", "latest", "--dry-run")
    doc = rc.json("recover", "location", "A", "--from-backup", "latest")
    assert planned["lost"] == doc["lost"] == {"A": [2, 2]}
    assert rc.stored("A") == [("A", 1, "x1"), ("A", 3, "x2")]


def lone_backed_up(rc: Replctl) -> str:
    """K alone (no neighbour with both directions), k1..k5 backed up, then a total loss (finding 2)."""
    rc("location", "add", "K")
    rc.append("K", "k1", "k2", "k3", "k4", "k5")
    made = rc.json("backup", "create", "K")["backups"][0]["id"]
    rc("drill", "disaster", "K", "--from", "1")
    return str(made)


def test_a_plain_recovery_that_would_lose_what_the_backup_holds_is_refused_with_the_restore_as_hint(
    rc: Replctl,
) -> None:
    # BK3: no source can give k1..k5 back, the backup can; the plain recovery is refused before it acts.
    made = lone_backed_up(rc)
    rc.refused_backup_held("K", "K: 1..5", made)
    doc = rc.json("recover", "location", "K", "--from-backup", made)
    assert (doc["lost"], doc["discarded"], doc["refused"]) == ({}, {}, [])
    assert [e[2] for e in rc.stored("K")] == ["k1", "k2", "k3", "k4", "k5"]


@pytest.mark.parametrize("declared", [(), ("--lost-from", "3")], ids=["census", "--lost-from"])
def test_a_recovery_keeping_the_survivors_of_a_straddling_segment_is_not_refused_for_them_bk3(
    rc: Replctl, declared: tuple[str, ...]
) -> None:
    """BK3: A's one segment a1..a3 loses a3 (cut from seq 3, by the census or declared); a1, a2 survive in
    it, B's logical deletion hides them from its passes and B serves a3. Nothing the backup holds is lost,
    so the plain recovery runs; counting the straddling segment's survivors out, it was refused as losing
    A: 1..2, which A still stores."""
    two_locations(rc)
    rc.append("A", "a1", "a2", "a3")
    rc("replicate")
    rc("delete", "B", "--upto", "2", "--logical")
    rc("backup", "create", "A")
    if not declared:
        rc("drill", "disaster", "A", "--from", "3")
    planned = rc.json("recover", "location", "A", *declared, "--dry-run")
    doc = rc.json("recover", "location", "A", *declared)
    for report in (planned, doc):
        assert (report["lost_from"], report["survivors_upto"], report["lost"], report["refused"]) == (
            3,
            2,
            {},
            [],
        )
    assert [r["sources"] for r in doc["rounds"]] == [["B"]]
    assert rc.stored("A") == [("A", 1, "a1"), ("A", 2, "a2"), ("A", 3, "a3")]
    assert rc.json("log", "verify")["ok"]


def test_a_plain_recovery_accepting_the_loss_says_what_is_lost_for_good(rc: Replctl) -> None:
    lone_backed_up(rc)
    planned = rc.json("recover", "location", "K", "--accept-loss", "--dry-run")
    out = rc("recover", "location", "K", "--accept-loss")
    assert out.code == 0
    assert "K: events K: 1..5 are lost for good" in out.stdout.splitlines()
    assert planned["lost"] == {"K": [1, 5]}
    assert rc.stored("K") == []
    rc.append("K", "k6")
    assert rc.stored("K") == [("K", 6, "k6")]  # DR1: the clock continues past the lost events


def test_a_location_added_with_history_current_is_recoverable_when_a_loss_gets_back_all_it_holds_bk3(
    rc: Replctl,
) -> None:
    # ADD3 `current`: C never holds a1, a2 (A deleted them before C joined; C's baseline says so). A total
    # loss of C starts from that baseline (DR1) and gets a3 back from A: nothing C ought to hold is lost.
    two_locations(rc)
    rc.append("A", "a1", "a2", "a3")
    rc("replicate")
    rc("delete", "A", "--upto", "2")
    rc("location", "add", "C")
    rc("topology", "add", "A", "C", "--both", "--history", "current")
    rc("replicate")
    assert rc.keys("C") == ["a3"]
    assert rc.location("C")["recoverable"] == {"state": "yes", "backup": None, "shortfall": {}}
    # What status promises, the recovery keeps: C loses everything and gets a3 back, nothing lost.
    rc("drill", "disaster", "C", "--from", "1")
    doc = rc.json("recover", "location", "C")
    assert (doc["refused"], doc["lost"]) == ([], {})
    assert rc.keys("C") == ["a3"]


def test_a_restore_keeps_the_history_baseline_merged_since_the_backup_so_no_later_target_skips_events(
    rc: Replctl,
) -> None:
    # BK2 with ADD3: Y was backed up empty, then joined X with `--history none`, merging X's clock (x1..x5)
    # into its CVV and DVV; X still stores x4, x5. The restore must keep that baseline in DVV-Y, or ADD1 lets
    # Y→Z start at once and Z's CVV then covers x4, x5, which X→Z skips for good (CF1).
    rc("location", "add", "X")
    rc("location", "add", "Y")
    rc.append("X", "x1", "x2", "x3", "x4", "x5")
    rc("delete", "X", "--upto", "3")  # no targets yet: x1..x3 go for good
    rc.json("backup", "create", "Y")
    rc("topology", "add", "X", "Y", "--both", "--history", "none")
    rc.append("Y", "y1", "y2")
    rc("replicate")
    rc.append("X", "x6")
    rc("replicate")
    assert rc.keys("Y") == ["y1", "y2", "x6"]
    assert rc.location("Y")["dvv"] == {"X": 5}
    rc("drill", "disaster", "Y", "--from", "1")
    doc = rc.json("recover", "location", "Y", "--from-backup", "latest")
    assert (doc["refused"], doc["lost"]) == ([], {})
    assert rc.keys("Y") == ["y1", "y2", "x6"]
    assert rc.location("Y")["dvv"] == {"X": 5}
    rc("location", "add", "Z")
    rc("topology", "add", "Y", "Z", "--both")
    # ADD1: Y never held x4, x5, so Z waits for them from X instead of taking Y's word for it.
    assert rc.connection("Y", "Z")["state"] == "pending"
    # x1..x3 are gone from X too: Z takes what X still stores (ADD3 `current`), then Y→Z may start.
    rc("topology", "add", "X", "Z", "--both", "--history", "current")
    rc("replicate")
    assert rc.connection("Y", "Z")["state"] == "active"
    assert sorted(rc.keys("Z")) == ["x4", "x5", "x6", "y1", "y2"]
    assert rc.json("log", "verify")["ok"]


# BK4's report of B once A deletes a1, which B alone would then hold, and why A's retried deletion waits.
B_LOSES_A1 = {
    "location": "B",
    "state": "no",
    "backup": None,
    "shortfall": {"A": [1, 1]},
    "fix": "replctl backup create B",
}
B_WHY = "[BK4]: deleting A up to 1 would make B unrecoverable (B would lose A: 1..1); run: replctl backup create B"


def replicate_keeps_the_deletion_at_a_waiting(rc: Replctl) -> None:
    """`replicate` retries A's deletion up to 1 and BK4 holds it back (B would lose a1): its dry run says so
    in JSON and text, and the run cuts nothing, keeps it waiting and still exits 0."""
    dry = rc.json("replicate", "--dry-run")["deletions"]
    assert [(d["location"], d["pending"], d["reason"], d["makes_unrecoverable"]) for d in dry] == [
        ("A", True, f"waits {B_WHY}", [B_LOSES_A1])
    ]
    assert rc("replicate", "--dry-run").stdout.splitlines()[-2:] == [
        "warning [BK4]: B would become unrecoverable (would lose A: 1..1); fix: replctl backup create B",
        f"pending deletion at A: would still wait {B_WHY}",
    ]
    ran = rc("replicate", "--json")
    assert ran.code == 0  # a deletion that waits does not fail the replication run
    [d] = ran.doc["deletions"]
    assert (d["pending"], d["deleted_upto"], d["reason"], d["makes_unrecoverable"]) == (
        True,
        0,
        f"waits {B_WHY}",
        [B_LOSES_A1],
    )


def test_a_pending_deletion_that_would_leave_b_unrecoverable_is_refused_or_waits_under_the_policy_bk4(
    rc: Replctl,
) -> None:
    # BK4 + DEL4: B lacks a1 when A asks to delete it, so the cut waits; once B holds a1, completing it would
    # leave a1 only in B's log. The request is judged as it completes; under `require_recoverable` a retry
    # that would hurt keeps waiting, dry run and run alike.
    two_locations(rc)
    rc.append("A", "a1")
    later_b = {**B_LOSES_A1, "fix": "replctl replicate && replctl backup create B"}
    plan = rc.json("delete", "A", "--upto", "1", "--dry-run")
    # Reported for what the deletion does once it completes, not only for its immediate (empty) part.
    assert (plan["pending"], plan["makes_unrecoverable"]) == (True, [later_b])
    before = rc.snapshot()
    refused = rc.json("delete", "A", "--upto", "1", "--require-recoverable", expect=3)
    assert refused["error"] == {
        "code": "BK4",
        "message": "refused [BK4]: deleting A up to 1 (the part that waits for B, DEL4) would make B "
        "unrecoverable (B would lose A: 1..1)",
        "hint": "replctl replicate && replctl backup create B",
    }
    assert rc.snapshot() == before and rc.json("status")["pending_deletions"] == []
    asked = rc("delete", "A", "--upto", "1", "--json", expect=5).doc
    assert (asked["pending"], asked["deleted_upto"], asked["makes_unrecoverable"]) == (True, 0, [later_b])
    (rc.root / "replctl.toml").write_text("require_recoverable = true\n")
    rc.env["REPLCTL_CONFIG"] = str(rc.root / "replctl.toml")
    replicate_keeps_the_deletion_at_a_waiting(rc)
    assert rc.keys("A") == ["a1"] and rc.keys("B") == ["a1"]
    assert rc("replicate").stdout.splitlines()[-2:] == [
        "warning [BK4]: B would become unrecoverable (would lose A: 1..1); fix: replctl backup create B",
        f"pending deletion at A still waits {B_WHY}",
    ]
    status = rc.json("status")
    assert status["pending_deletions"] == [
        {"location": "A", "requested_upto": 1, "blocked_by": [{"target": "B", "first_blocked_seq": None}]}
    ]
    # The HTML report reads the same policy as `status` (it named no holder under it).
    assert '<td class="held-by">B</td>' in rc("report", "--html", "-").stdout
    assert rc.location("B")["recoverable"] == {"state": "yes", "backup": None, "shortfall": {}}
    # The backup BK4 names lets the next run complete it.
    rc("backup", "create", "B")
    [done] = rc.json("replicate")["deletions"]
    assert (done["pending"], done["deleted_upto"], done["makes_unrecoverable"]) == (False, 1, [])
    assert rc.keys("A") == [] and rc.keys("B") == ["a1"]
    assert rc.json("status")["pending_deletions"] == []
    assert rc.location("B")["recoverable"]["state"] == "yes"


def guarded_deletion_outlived_its_check(rc: Replctl) -> None:
    """A↔B, A↔C, B↔C; C holds a1 and a backup of it, B lacks it. A's deletion up to 1, asked with
    `--require-recoverable` (no policy), waits for B (DEL4) and is accepted: B could then recover a1 from C.
    Then C→B goes, so that completing it once B holds a1 would leave a1 in B's log alone (BK4)."""
    for name in ("A", "B", "C"):
        rc("location", "add", name)
    for src, dst in (("A", "B"), ("A", "C"), ("B", "C")):
        rc("topology", "add", src, dst, "--both")
    rc.append("A", "a1")
    rc("replicate", "A", "C")
    rc("backup", "create", "C")
    asked = rc("delete", "A", "--upto", "1", "--require-recoverable", "--json", expect=5).doc
    assert (asked["pending"], asked["deleted_upto"], asked["makes_unrecoverable"]) == (True, 0, [])
    assert asked["blocked_by"] == [{"target": "B", "first_blocked_seq": 1}]
    rc("topology", "remove", "C", "B")


def test_a_deletion_asked_with_require_recoverable_keeps_bk4_for_its_waiting_part_without_the_policy(
    rc: Replctl,
) -> None:
    # BK4 + DEL4: `--require-recoverable` holds for the whole request, the part that waits included, although
    # the command has ended by the time `replicate` completes it and the policy is off. A's request was
    # accepted while B could recover a1 from C; C→B is gone before the retry, so completing it now would leave
    # a1 in B's log alone: the retry must keep waiting as under the policy, never cut silently.
    guarded_deletion_outlived_its_check(rc)
    # The reviewed plan comes from the run's own retry, as the dry run does, and says what it does.
    plan = rc.root / "replicate.json"
    rc("replicate", "--plan-out", str(plan))
    planned = json.loads(plan.read_text())["plan"]["deletions"]
    assert [(d["location"], d["pending"], d["reason"]) for d in planned] == [("A", True, f"waits {B_WHY}")]
    replicate_keeps_the_deletion_at_a_waiting(rc)
    assert rc.stored("A") == [("A", 1, "a1")] and rc.stored("B") == [("A", 1, "a1")]
    assert rc.location("A")["dvv"] == {}
    assert rc.json("status")["pending_deletions"] == [
        {"location": "A", "requested_upto": 1, "blocked_by": [{"target": "B", "first_blocked_seq": None}]}
    ]
    # The stricter wins: a plain `delete` that extends the waiting request joins it under BK4 (refused, exit 3,
    # nothing changed) rather than cutting now what the request was asked to keep recoverable.
    rc.append("A", "a2")
    before = rc.snapshot()
    for dry_run in ((), ("--dry-run",)):
        refused = rc.json("delete", "A", "--upto", "2", *dry_run, expect=3)
        assert refused["error"] == {
            "code": "BK4",
            "message": "refused [BK4]: deleting A up to 1 would make B unrecoverable (B would lose A: 1..1); "
            "it joins the waiting deletion of A up to 1, which was asked to keep every location recoverable",
            "hint": "replctl backup create B",
        }
    assert rc.snapshot() == before and rc.stored("A") == [("A", 1, "a1"), ("A", 2, "a2")]
    # The backup BK4 names lets the next run complete it.
    rc("backup", "create", "B")
    [done] = rc.json("replicate")["deletions"]
    assert (done["pending"], done["deleted_upto"], done["makes_unrecoverable"]) == (False, 1, [])
    assert rc.stored("A") == [("A", 2, "a2")] and rc.json("status")["pending_deletions"] == []


def test_own_events_a_filter_kept_at_a_make_recoverability_unknown_until_a_backup_holds_them(
    rc: Replctl,
) -> None:
    # BK3 (DR3): A terminal, A→N passes only x%. N's CVV covers y1 (A:1) through x1's vt, yet only A stores
    # y1: BK3 once said `yes`, and the recovery then lost y1 (named, exit 0).
    rc("location", "add", "A")
    rc("location", "add", "N")
    rc("topology", "add", "A", "N", "--filter", "key like 'x%'")
    rc("topology", "add", "N", "A")
    rc.append("A", "y1", "x1")
    rc("replicate")
    assert rc.stored("N") == [("A", 2, "x1")]
    assert rc.location("A")["recoverable"] == {"state": "unknown", "backup": None, "shortfall": {}}
    made = rc.json("backup", "create", "A")["backups"]
    assert rc.location("A")["recoverable"] == {"state": "yes", "backup": made[0]["id"], "shortfall": {}}
    rc.append("A", "y2")
    assert rc.location("A")["recoverable"]["state"] == "unknown"  # y2 is after the backup
    rc("drill", "disaster", "A", "--from", "1", "--yes")
    doc = rc.json("recover", "location", "A", "--from-backup", "latest")
    assert doc["lost"] == {"A": [3, 3]}
    assert rc.stored("A") == [("A", 1, "y1"), ("A", 2, "x1")]


def test_own_events_behind_only_a_filtered_connection_in_make_recoverability_no(rc: Replctl) -> None:
    # BK3: A's only connection is B→A, filtered. a1 never left A, whatever the filter passes: `no`, with A's
    # own part as the shortfall (once `unknown`, which a deletion guard cannot act on).
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "B", "A", "--filter", "key = 'k'")
    rc.append("A", "a1")
    assert rc.location("A")["recoverable"] == {"state": "no", "backup": None, "shortfall": {"A": [1, 1]}}
    rc("drill", "disaster", "A", "--from", "1", "--yes")
    assert rc.json("recover", "location", "A")["lost"] == {"A": [1, 1]}


def test_a_plain_recovery_is_refused_when_only_the_backup_holds_what_the_refused_neighbour_deleted(
    rc: Replctl,
) -> None:
    # BK3: N deleted n1..n3 (A held them), A is backed up, then loses everything. N, refused by DR4, holds
    # nothing of N:1..3 any more: the plain recovery would lose them, the backup holds them. Before, N's
    # whole CVV was counted as held: the recovery went on, named them lost for good and hinted at
    # `--accept-loss`, which would have given up what the backup holds.
    for name in ("A", "N"):
        rc("location", "add", name)
    rc("topology", "add", "A", "N", "--both")
    rc.append("N", "n1", "n2", "n3")
    rc("replicate")
    made = rc.json("backup", "create", "A")["backups"][0]["id"]
    rc("delete", "N", "--upto", "3")
    assert rc.keys("N") == []
    rc("drill", "disaster", "A", "--from", "1", "--yes")
    rc.refused_backup_held("A", "N: 1..3", made)
    doc = rc.json("recover", "location", "A", "--from-backup", made)
    assert (doc["lost"], doc["refused"]) == ({}, [])
    assert rc.stored("A") == [("N", 1, "n1"), ("N", 2, "n2"), ("N", 3, "n3")]


def _another_world(rc: Replctl, root: Path) -> Replctl:
    """A second catalog and log store whose backup store is `rc`'s (a re-initialised home, a shared
    REPLCTL_BACKUP_STORE), with A and B connected both ways."""
    other = Replctl(root)
    other.env["REPLCTL_BACKUP_STORE"] = str(rc.backups)
    other("init")
    two_locations(other)
    return other


def test_another_catalogs_backups_in_the_same_store_are_never_listed_counted_restored_or_pruned(
    rc: Replctl, tmp_path: Path
) -> None:
    # BK1/BK2/BK3/M3: the first world backed up B (old-1..3); a second catalog shares the backup store and
    # assigns the same identities (A:1..3) to other events. Its B must not count or restore the first's backup.
    two_locations(rc)
    rc.append("A", "old-1", "old-2", "old-3")
    rc("replicate")
    old = rc.json("backup", "create")["backups"]
    new = _another_world(rc, tmp_path / "second")
    new.append("A", "new-1", "new-2", "new-3")
    new("replicate")
    assert new.json("backup", "list")["backups"] == []
    assert new.location("B")["recoverable"] == {"state": "yes", "backup": None, "shortfall": {}}
    refused = new.json("delete", "A", "--upto", "3", "--require-recoverable", expect=3)["error"]
    assert refused["code"] == "BK4"
    assert new.keys("A") == ["new-1", "new-2", "new-3"]
    new("drill", "disaster", "B", "--from", "1")
    latest = new.json("recover", "location", "B", "--from-backup", "latest", expect=3)["error"]
    assert latest == {
        "code": "BK2",
        "message": f"refused [BK2]: the backup store {rc.backups} holds no backup of B; nothing was changed",
        "hint": "replctl recover location B",
    }
    old_b = next(b["id"] for b in old if b["location"] == "B")
    for args in (["recover", "location", "B", "--from-backup", old_b], ["backup", "show", old_b]):
        error = new.json(*args, expect=2)["error"]
        assert error["code"] == "foreign-backup"
        assert error["message"].startswith(
            f"backup '{old_b}' is not a backup of this catalog: it was made by"
        )
        assert error["hint"] == "list this catalog's backups with: replctl backup list"
    # Recovered from A instead: B holds the second world's events only.
    new("recover", "location", "B")
    assert new.keys("B") == ["new-1", "new-2", "new-3"]
    # The second world's prune neither removes the first's backups nor a file they list.
    mine = new.json("backup", "create", "B")["backups"][0]["id"]
    pruned = new.json("backup", "prune", "--keep-last", "0")
    assert pruned["removed"] == [mine]
    assert [b["id"] for b in rc.json("backup", "list")["backups"]] == [b["id"] for b in old]
    assert all(check["ok"] for check in rc.json("backup", "verify")["backups"])
    assert rc.json("recover", "location", "B", "--from-backup", "latest", "--dry-run")["ok"]


def _a_forked_world(rc: Replctl, root: Path) -> Replctl:
    """A second catalog whose log store holds `rc`'s very segment files (a catalog and its store copied before
    catalogs had ids, each copy given its own when upgraded), sharing `rc`'s backup store."""
    root.mkdir()
    shutil.copytree(rc.store, root / "logs")
    with (
        closing(sqlite3.connect(rc.db_url.removeprefix("sqlite:///"))) as live,
        closing(sqlite3.connect(root / "catalog.db")) as copy,
    ):
        live.backup(copy)
        other_id = str(uuid.uuid4())
        with copy:
            copy.execute("UPDATE catalog_state SET catalog_id = ?", (other_id,))
    marker = root / "logs" / "replctl-store.json"
    marker.write_text(json.dumps({**json.loads(marker.read_text()), "catalog_id": other_id}))
    other = Replctl(root)
    other.env["REPLCTL_BACKUP_STORE"] = str(rc.backups)
    return other


def _b_backed_up_then_forked(
    rc: Replctl, tmp_path: Path
) -> tuple[dict[str, Any], list[dict[str, Any]], Replctl]:
    """A↔B, B backed up with two segments (a1, a2 received; b1), then `_a_forked_world`: the backup's
    `backup create --json` entry, its segments as `backup show` lists them, and the second catalog."""
    two_locations(rc)
    rc.append("A", "a1", "a2")
    rc("replicate")
    rc.append("B", "b1")
    [old] = rc.json("backup", "create", "B")["backups"]
    segments = rc.json("backup", "show", old["id"])["backup"]["segments"]
    return old, segments, _a_forked_world(rc, tmp_path / "forked")


def test_a_backup_reuses_only_its_own_catalogs_copies_and_never_copies_over_another_catalogs_whole_one(
    rc: Replctl, tmp_path: Path
) -> None:
    # BK1: a backup reused a copy that another catalog's backup listed, on that manifest's word; that catalog
    # prunes its backups without this catalog's lease, so the copy could go before this backup's manifest
    # named it. Now another catalog's manifest vouches for nothing: a copy of the same segment file there is
    # kept when whole (never copied over) and read for its own digest, and one that lost a file is copied again.
    old, (first, second), other = _b_backed_up_then_forked(rc, tmp_path)
    for file in (rc.backups / "segments" / first["path"]).iterdir():
        file.unlink()
    [made] = other.json("backup", "create", "B")["backups"]
    assert (made["segments"], made["segments_reused"], made["copied"], made["segments_recopied"]) == (
        2,
        0,
        [first["path"]],
        1,
    )
    # The whole segment file repaired the first catalog's backup too.
    assert rc.json("backup", "verify")["ok"]
    # The first catalog prunes every backup of its own: the copies stay, the second's backup names them.
    pruned = rc.json("backup", "prune", "--keep-last", "0")
    assert (pruned["removed"], pruned["files_removed"]) == ([old["id"]], [])
    assert other.json("backup", "verify")["ok"]
    # The second catalog's next backup reuses them on its own backup's word.
    [again] = other.json("backup", "create", "B")["backups"]
    assert (again["segments_reused"], again["copied"]) == (2, [])
    assert [s["path"] for s in other.json("backup", "show", again["id"])["backup"]["segments"]] == [
        first["path"],
        second["path"],
    ]


def test_a_held_copy_another_catalogs_prune_removes_before_the_manifest_is_copied_again_not_listed_missing(
    rc: Replctl, tmp_path: Path
) -> None:
    # BK1: the second catalog's backup plans both copies HELD (whole, listed by the first catalog's backup
    # only); the first catalog prunes every backup of its own while the copies are being gathered, taking
    # no lease of the second's. The manifest then listed two missing copies, and BK3 counted the backup.
    old, (first, second), other = _b_backed_up_then_forked(rc, tmp_path)
    pruned: list[dict[str, Any]] = []
    with failpoints.calling(
        "backup.after-copy", lambda: pruned.append(rc.json("backup", "prune", "--keep-last", "0"))
    ) as ran:
        [made] = other.json("backup", "create", "B")["backups"]
    assert ran == ["backup.after-copy"]
    assert pruned[0]["removed"] == [old["id"]]
    assert sorted(pruned[0]["files_removed"]) == sorted([first["path"], second["path"]])
    assert (made["segments"], made["segments_reused"], made["copied"]) == (
        2,
        0,
        [first["path"], second["path"]],
    )
    assert other.json("backup", "verify")["ok"]


def test_another_catalogs_copy_whose_bytes_rotted_at_its_size_is_copied_again_not_vouched_for(
    rc: Replctl, tmp_path: Path
) -> None:
    # BK1: a copy no backup of this catalog lists was kept when whole by its sizes and recorded under its own
    # digest: one byte flipped in it (its size kept) was vouched for by the new backup. Each file's sha256,
    # recorded in the segment's row at write, is now compared, in the dry run as in the run.
    old, (first, _), other = _b_backed_up_then_forked(rc, tmp_path)
    [copy] = (rc.backups / "segments" / first["path"]).glob("part-*.parquet")
    content = bytearray(copy.read_bytes())
    content[len(content) // 2] ^= 0xFF
    copy.write_bytes(bytes(content))
    planned = other.json("backup", "create", "B", "--dry-run")["backups"][0]
    [made] = other.json("backup", "create", "B")["backups"]
    for doc in (planned, made):
        assert (doc["segments"], doc["segments_reused"], doc["copied"], doc["segments_recopied"]) == (
            2,
            0,
            [first["path"]],
            1,
        )
    assert copy.read_bytes() == (other.store / first["path"] / copy.name).read_bytes()
    assert other("backup", "verify", made["id"]).stdout.splitlines()[-1].endswith("ok")
    assert other.json("backup", "verify", made["id"])["ok"]
    assert rc.json("backup", "verify", old["id"])["ok"]  # the whole segment file repaired it for rc too


def test_a_backup_made_before_backups_named_their_catalog_is_the_one_whose_journal_made_it(
    rc: Replctl, tmp_path: Path
) -> None:
    # Manifests written by an older replctl name no catalog: the catalog that journalled making one keeps it
    # (listed, counted, restorable); another catalog sharing the store does not take it for its own.
    two_locations(rc)
    rc.append("A", "old-1")
    rc("replicate")
    [made] = rc.json("backup", "create", "B")["backups"]
    for manifest in (rc.backups / "manifests").glob("*.json"):
        doc = json.loads(manifest.read_text())
        del doc["catalog_id"]
        manifest.write_text(json.dumps(doc))
    assert [b["id"] for b in rc.json("backup", "list")["backups"]] == [made["id"]]
    assert rc.location("B")["recoverable"]["backup"] == made["id"]
    new = _another_world(rc, tmp_path / "second")
    assert new.json("backup", "list")["backups"] == []
    error = new.json("backup", "show", made["id"], expect=2)["error"]
    assert error["code"] == "foreign-backup"
    assert error["message"] == (
        f"backup '{made['id']}' is not a backup of this catalog: it names no catalog, and this catalog's journal "
        "has no record of making it: another catalog's; its events are another world's, under identities this "
        "catalog gave to others (M3), so it is neither shown, verified nor restored (BK2)"
    )
    rc("drill", "disaster", "B", "--from", "1")
    assert rc.json("recover", "location", "B", "--from-backup", "latest")["backup"] == made["id"]
    assert rc.keys("B") == ["old-1"]


def test_backup_verify_never_judges_the_live_log_through_a_store_that_is_not_this_catalogs(
    rc: Replctl, tmp_path: Path
) -> None:
    # The repair hint reads the live log: through a mistyped --store (no marker) A's log looked damaged and the
    # hint said to recover A with --accept-loss. The store is checked first, as every command that reads a log
    # checks it; one that fails the check leaves the generic way out, and the verdict on the backups stands.
    made = a1_backed_up(rc)
    [segment] = rc.json("backup", "show", made["id"])["backup"]["segments"]
    shutil.rmtree(rc.backups / "segments" / segment["path"])
    typo = tmp_path / "typo"
    typo.mkdir()
    error = rc.json("--store", str(typo), "backup", "verify", expect=6)["error"]
    assert error == {
        "code": "backup-damaged",
        "message": f"backup {made['id']} is damaged: {segment['path']}: missing",
        "hint": "replctl backup create A",
    }
    assert rc.json("backup", "verify", expect=6)["error"]["hint"] == (
        "run `replctl backup create A`: it copies the damaged segments again from its log"
    )


def test_backup_list_reads_no_log_and_lists_through_any_store(rc: Replctl, tmp_path: Path) -> None:
    # `backup list` reads the backup store and the catalog's id only: it needs no log store (what an operator
    # reads to choose a backup once the log store is lost), so it checks none.
    made = a1_backed_up(rc)
    typo = tmp_path / "typo"
    assert [b["id"] for b in rc.json("--store", str(typo), "backup", "list")["backups"]] == [made["id"]]
    shutil.rmtree(rc.store)
    assert [b["id"] for b in rc.json("backup", "list", "A")["backups"]] == [made["id"]]


def test_backup_verify_reports_each_backup_when_the_log_store_is_gone(rc: Replctl) -> None:
    # The repair hint reads the live log; a lost store must not hide the verdict on the backups behind a store
    # error: the damaged backup is named, with the generic way out.
    made = a1_backed_up(rc)
    shown = rc.json("backup", "show", made["id"])["backup"]
    shutil.rmtree(rc.backups / "segments" / shown["segments"][0]["path"])
    shutil.rmtree(rc.store)
    out = rc.json("backup", "verify", expect=6)
    assert out["error"] == {
        "code": "backup-damaged",
        "message": f"backup {made['id']} is damaged: {shown['segments'][0]['path']}: missing",
        "hint": "replctl backup create A",
    }


def test_a_set_aside_copy_that_cannot_be_removed_does_not_fail_the_backup_that_tidies_it(
    rc: Replctl,
) -> None:
    # Removing what a crashed recopy left set aside raised (exit 6) at the start of `backup create`, whose dry
    # run had said it would work; it is tidying, best effort: the backup runs, the next one tries again.
    two_locations(rc)
    rc.append("B", "b1")
    stuck = rc.backups / "segments" / "B" / ".seg-0000000000000000001-0123abcd.aaaaaaaa.damaged"
    with unremovable(stuck):
        rc("backup", "create", "B", "--dry-run")
        [made] = rc.json("backup", "create", "B")["backups"]
        assert stuck.is_dir()
    assert rc.json("backup", "verify", made["id"])["ok"]
    rc("backup", "create", "B")
    assert not stuck.exists()
