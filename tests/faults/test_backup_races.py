"""A backup being made or read meets another operator (rules.md BK1), deterministically.

BK1: taking a backup "changes nothing at A and holds A's lease only while the catalog is read". Each test pauses
a real `backup create` or restore at a failpoint (`failpoints.calling`) and runs, right there, what a second
operator would run: an append or a compaction at A goes on (A's lease was given back), a prune of A's backups
waits (exit 4) until the backup no longer needs their files.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from clitool import Replctl

from replctl import failpoints
from replctl.services import backups as backup_service
from replctl.services.damage import refuse_damaged

pytestmark = [pytest.mark.spark]


@pytest.fixture
def rc(tmp_path: Path) -> Iterator[Replctl]:
    tool = Replctl(tmp_path)
    tool("init")
    tool("location", "add", "A")
    failpoints.reset()
    yield tool


def _backups_of(rc: Replctl, location: str) -> list[tuple[str, int, int]]:
    return [(b["id"], b["seq"], b["segments"]) for b in rc.json("backup", "list", location)["backups"]]


def test_bk1_an_append_goes_on_while_a_backup_copies_and_the_backup_is_as_of_its_catalog_read(
    rc: Replctl,
) -> None:
    rc.append("A", "a1")
    rc.append("A", "a2")
    with failpoints.calling("backup.after-copy", lambda: rc.append("A", "a3")) as ran:
        made = rc.json("backup", "create", "A")["backups"][0]
    assert ran == ["backup.after-copy"]
    assert (made["seq"], made["events"], made["segments"]) == (2, 2, 2)
    assert rc.keys("A") == ["a1", "a2", "a3"]
    assert rc.location("A")["seq"] == 3
    verified = rc.json("backup", "verify", made["id"])["backups"]
    assert verified == [{"id": made["id"], "location": "A", "ok": True, "problems": [], "violations": []}]


def test_bk1_a_prune_waits_while_a_backup_reuses_files_only_an_older_manifest_names(rc: Replctl) -> None:
    rc.append("A", "a1")
    rc.append("A", "a2")
    first = rc.json("backup", "create", "A")["backups"][0]
    rc.append("A", "a3")
    refusals: list[dict[str, object]] = []

    def prune_every_backup_of_a() -> None:
        refusals.append(rc.json("backup", "prune", "A", "--keep-last", "0", expect=4)["error"])

    with failpoints.calling("backup.after-copy", prune_every_backup_of_a):
        second = rc.json("backup", "create", "A")["backups"][0]
    assert (second["segments"], second["segments_reused"]) == (3, 2)
    (refusal,) = refusals
    assert str(refusal["message"]).startswith("backups:A is held by ")
    # Nothing was pruned: both backups are whole, and the second still finds the files it reuses.
    assert _backups_of(rc, "A") == [(first["id"], 2, 2), (second["id"], 3, 3)]
    assert all(b["ok"] for b in rc.json("backup", "verify")["backups"])
    # Once the backup is made, the prune runs; the files the kept backup names stay.
    pruned = rc.json("backup", "prune", "A", "--keep-last", "1")
    assert (pruned["removed"], pruned["kept"], pruned["files_removed"]) == ([first["id"]], [second["id"]], [])
    assert rc.json("backup", "verify", second["id"])["backups"][0]["ok"]
    journal = [(op["command"], op["outcome"]) for op in rc.json("ops", "list", "--limit", "3")["operations"]]
    # Newest first by start: the refused prune started inside the backup.
    assert journal == [
        ("backup prune", "succeeded"),
        ("backup prune", "refused"),
        ("backup create", "succeeded"),
    ]


def test_bk1_a_compaction_that_removes_a_segment_being_copied_makes_the_backup_read_the_catalog_again(
    rc: Replctl,
) -> None:
    rc.append("A", "a1")
    rc.append("A", "a2")
    rc("backup", "create", "A")
    rc.append("A", "a3")
    # The second backup reuses a1's and a2's copies and copies a3's segment after the pause at a1: by then the
    # compaction has merged all three and removed their files, so the copy fails and the backup starts over.
    with failpoints.calling("backup.after-copy", lambda: rc("log", "compact", "A")) as ran:
        made = rc.json("backup", "create", "A")["backups"][0]
    assert ran == ["backup.after-copy"]
    assert (made["seq"], made["events"], made["segments"], made["segments_reused"]) == (3, 3, 1, 0)
    shown = rc.json("backup", "show", made["id"])["backup"]
    assert [(s["seq_lo"], s["seq_hi"]) for s in shown["segments"]] == [(1, 3)]
    assert rc.json("backup", "verify", made["id"])["backups"][0]["ok"]
    rc("drill", "disaster", "A", "--from", "1")
    rc("recover", "location", "A", "--from-backup", made["id"])
    assert rc.keys("A") == ["a1", "a2", "a3"]


def test_bk1_a_prune_waits_while_a_restore_copies_the_backup_in(rc: Replctl) -> None:
    rc.append("A", "a1")
    made = rc.json("backup", "create", "A")["backups"][0]
    rc("drill", "disaster", "A", "--from", "1")
    refusals: list[dict[str, object]] = []

    def prune_every_backup_of_a() -> None:
        refusals.append(rc.json("backup", "prune", "A", "--keep-last", "0", expect=4)["error"])

    with failpoints.calling("restore.after-copy", prune_every_backup_of_a):
        rc("recover", "location", "A", "--from-backup", "latest")
    (refusal,) = refusals
    assert str(refusal["message"]).startswith("backups:A is held by ")
    assert rc.keys("A") == ["a1"]
    assert _backups_of(rc, "A") == [(made["id"], 1, 1)]


def test_bk1_a_backup_whose_location_lease_is_taken_over_during_its_census_stops_before_copying(
    rc: Replctl, monkeypatch: pytest.MonkeyPatch
) -> None:
    # BK1: the catalog read and the census (DR0) stand only if A's lease was held throughout. The read is a
    # snapshot that commits nothing, so giving the lease back is the check. Here, while the census runs, A's
    # lease runs out and another operator (an append) takes it over and gives it back: the backup must not
    # go on (it used to, the lease having been checked only when the read committed, before the census).
    rc.append("A", "a1")
    granted: list[int] = []

    def expire_take_over_then_census(*args: Any) -> None:
        with sqlite3.connect(rc.root / "catalog.db") as db:
            granted.extend(db.execute("SELECT token FROM leases WHERE resource = 'location:A'").fetchone())
            db.execute(
                "UPDATE leases SET expires_at = '2000-01-01 00:00:00.000000' WHERE resource = 'location:A'"
            )
        rc.append("A", "a2")
        refuse_damaged(*args)

    monkeypatch.setattr(backup_service, "refuse_damaged", expire_take_over_then_census)
    refused = rc.json("backup", "create", "A", expect=4)["error"]
    assert len(granted) == 1
    ops = rc.json("ops", "list", "--limit", "2")["operations"]
    assert [(op["command"], op["outcome"]) for op in ops] == [
        ("log append", "succeeded"),
        ("backup create", "refused"),
    ]
    with sqlite3.connect(rc.root / "catalog.db") as db:
        holder, since = db.execute(
            "SELECT holder, acquired_at FROM leases WHERE resource = 'location:A'"
        ).fetchone()
    at = datetime.fromisoformat(since).strftime("%Y-%m-%d %H:%M:%SZ")
    assert refused == {
        "code": "lock-held",
        "message": f"the lease on location:A (token {granted[0]}) was taken over by {holder} (operation "
        f"{ops[0]['id']}) at {at}; this operation may no longer change it",
        "hint": f"see: replctl ops show {ops[0]['id']}",
        "details": {
            "resource": "location:A",
            "token": granted[0],
            "holder": holder,
            "operation_id": ops[0]["id"],
            "since": datetime.fromisoformat(since).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        },
    }
    assert rc.json("backup", "list")["backups"] == []  # nothing copied, no manifest
    assert rc.keys("A") == ["a1", "a2"]
