"""Backup and restore stories through the CLI with exact log contents (rules.md BK1–BK4, DR1–DR5)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from clitool import Replctl

from replctl import failpoints
from replctl.localfiles import digest

pytestmark = pytest.mark.spark


def two_locations(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")


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
    missing = rc.json("recover", "location", "B", "--from-backup", "latest", expect=6)
    assert missing["error"]["code"] == "backup-missing"
    assert rc.snapshot() == before and rc.keys("B") == ["a1"]


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
    two_locations(rc)
    rc.append("A", "a1")
    made = rc.json("backup", "create", "A")["backups"][0]
    shown = rc.json("backup", "show", made["id"])["backup"]
    for file in (rc.backups / "segments" / shown["segments"][0]["path"]).rglob("*.parquet"):
        file.write_bytes(b"damaged")
    out = rc.json("backup", "verify", expect=6)
    assert out["error"] == {
        "code": "backup-damaged",
        "message": f"backup {made['id']} is damaged: {shown['segments'][0]['path']}: digest differs from the "
        "manifest's",
        "hint": "replctl backup create A",
    }
    # Files that fail their digests are not read as events: no invariant is reported on them.
    assert out["backups"][0]["violations"] == []
    before = rc.snapshot()
    refused = rc.json("recover", "location", "A", "--from-backup", "latest", expect=6)
    assert refused["error"]["code"] == "backup-damaged"
    assert refused["error"]["message"] == (
        f"backup {made['id']} is damaged: {shown['segments'][0]['path']}: digest differs from the manifest's"
    )
    assert rc.snapshot() == before and rc.keys("A") == ["a1"]


def test_a_backup_copy_changed_after_its_check_is_not_restored_and_changes_nothing(rc: Replctl) -> None:
    # Issue 19: the restore compares each copy it made with the manifest's digest, not only the backup's own
    # copy before it starts; a file changed in between (here once the leases are held) restores nothing.
    two_locations(rc)
    rc.append("A", "a1")
    made = rc.json("backup", "create", "A")["backups"][0]
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
    assert out["refused"][0]["missing"] == plan["refused"][0]["missing"] == {"A": [2, 0]}
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
    assert text == f"{made['id']}: DAMAGED: {i7}; {seg}\n"


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
    before = rc.snapshot()
    refusal = {
        "code": "DR0",
        "message": f"refused [DR0]: recover location M --from-backup {made} would discard M's own events with "
        "origin times 3..3, which M still stores intact and no other location holds; nothing was changed",
        "hint": f"replctl recover location M --from-backup {made} --accept-loss",
    }
    planned = rc.json("recover", "location", "M", "--from-backup", "latest", "--dry-run", expect=3)
    assert planned["error"] == refusal
    assert rc.json("recover", "location", "M", "--from-backup", "latest", expect=3)["error"] == refusal
    assert rc.snapshot() == before
    assert rc.stored("M") == [("M", 1, "m1"), ("M", 2, "m2"), ("M", 3, "m3")]


def test_restoring_with_accept_loss_names_the_discarded_events(rc: Replctl) -> None:
    made = backed_up_before_an_own_event(rc)
    planned = rc.json("recover", "location", "M", "--from-backup", made, "--accept-loss", "--dry-run")
    doc = rc.json("recover", "location", "M", "--from-backup", made, "--accept-loss")
    for out in (planned, doc):
        assert (out["discarded"], out["lost"]) == ({"M": [3, 3]}, {"M": [3, 3]})
    assert rc.stored("M") == [("M", 1, "m1"), ("M", 2, "m2")]
    assert rc.location("M")["cvv"] == {"M": 2}


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
    before = rc.snapshot()
    refusal = {
        "code": "BK3",
        "message": f"refused [BK3]: recover location K would lose K: 1..5, which backup {made} holds; "
        "nothing was changed",
        "hint": f"replctl recover location K --from-backup {made}",
    }
    assert rc.json("recover", "location", "K", "--dry-run", expect=3)["error"] == refusal
    assert rc.json("recover", "location", "K", expect=3)["error"] == refusal
    assert rc.snapshot() == before
    doc = rc.json("recover", "location", "K", "--from-backup", made)
    assert (doc["lost"], doc["discarded"], doc["refused"]) == ({}, {}, [])
    assert [e[2] for e in rc.stored("K")] == ["k1", "k2", "k3", "k4", "k5"]


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
