"""Backup and restore stories through the CLI with exact log contents (rules.md BK1–BK4, DR1–DR5)."""

from __future__ import annotations

import pytest
from clitool import Replctl

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


def test_restoring_a_location_from_another_locations_backup_exits_2_and_changes_nothing(rc: Replctl) -> None:
    # (c) BK2: a backup of another location is refused.
    two_locations(rc)
    rc.append("A", "a1")
    rc("replicate")
    made = rc.json("backup", "create", "A")["backups"]
    before = rc.snapshot()
    out = rc.json("recover", "location", "B", "--from-backup", made[0]["id"], expect=2)
    assert out["error"]["code"] == "BK2"
    assert out["error"]["message"] == f"backup {made[0]['id']} is a backup of A, not of B (BK2)"
    missing = rc.json("recover", "location", "B", "--from-backup", "latest", expect=6)
    assert missing["error"]["code"] == "backup-missing"
    assert rc.snapshot() == before and rc.keys("B") == ["a1"]
