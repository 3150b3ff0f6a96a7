"""Backup and restore stories through the services (rules.md BK1–BK4), each on the in-memory data plane and
backup store and on Spark with the real backup store (conftest `plane`, `backups`): the contract that keeps the
fake backup store honest. Sizes differ between the two (the fake counts rows), so no story asserts bytes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from service_appends import append_keys
from sqlalchemy import event
from sqlalchemy.engine import Engine

from replctl.errors import EnvironmentFailure, Refused
from replctl.services import backups as backup_service
from replctl.services import replication, restore, topology
from replctl.services.ports import BackupStore, Catalog, DataPlane
from services.test_service_stories import _locations, _log, _state


def _segments(catalog: Catalog, name: str) -> list[str]:
    with catalog.transaction(readonly=True) as tx:
        return [s.path for s in tx.segments(name)]


@contextmanager
def _catalog_writes(engine: Engine) -> Iterator[list[list[str]]]:
    """The catalog writes committed on `engine` inside the block: per transaction that wrote, its statements
    as "INSERT table" / "UPDATE table" / "DELETE table", in order. Snapshots that wrote nothing are left out:
    a commit with nothing written flushes nothing to disk."""
    committed: list[list[str]] = []
    current: list[str] = []

    def executed(conn: Any, cursor: Any, sql: str, *args: Any) -> None:
        found = re.match(r"\s*(INSERT INTO|UPDATE|DELETE FROM)\s+(\w+)", sql)
        if found:
            current.append(f"{found[1].split()[0]} {found[2]}")

    def commit(conn: Any) -> None:
        if current:
            committed.append(current.copy())
        current.clear()

    def rollback(conn: Any) -> None:
        current.clear()

    listeners: list[tuple[str, Callable[..., None]]] = [
        ("before_cursor_execute", executed),
        ("commit", commit),
        ("rollback", rollback),
    ]
    for name, listener in listeners:
        event.listen(engine, name, listener)
    try:
        yield committed
    finally:
        for name, listener in listeners:
            event.remove(engine, name, listener)


def _made(doc: dict[str, Any]) -> list[tuple[Any, ...]]:
    """(location, seq, events, segments, reused, copied) of each backup a `backup create` made."""
    return [
        (b["location"], b["seq"], b["events"], b["segments"], b["segments_reused"], b["copied"])
        for b in doc["backups"]
    ]


def _a1_backed_up_then_lost(catalog: Catalog, plane: DataPlane, backups: BackupStore) -> tuple[str, str]:
    """A with a1 backed up, then the backup store loses that segment's copy: (its path, the backup's id)."""
    _locations(catalog, "A")
    append_keys(catalog, plane, "A", "a1")
    [path] = _segments(catalog, "A")
    [made] = backup_service.create(catalog, plane.store, backups, ["A"]).to_json()["backups"]
    backups.remove_segment(path)
    return path, str(made["id"])


def test_a_backup_copies_each_segment_once_and_the_next_reuses_it_bk1(
    catalog: Catalog, plane: DataPlane, backups: BackupStore
) -> None:
    _locations(catalog, "A")
    append_keys(catalog, plane, "A", "a1", "a2")
    [first] = _segments(catalog, "A")
    plan = backup_service.create(catalog, plane.store, backups, ["A"], dry_run=True).to_json()
    assert _made(plan) == [("A", 2, 2, 1, 0, [first])]
    assert backups.manifests() == []  # the dry run copied nothing and listed nothing
    assert _made(backup_service.create(catalog, plane.store, backups, ["A"]).to_json()) == [
        ("A", 2, 2, 1, 0, [first])
    ]
    append_keys(catalog, plane, "A", "a3")
    [_, second] = _segments(catalog, "A")
    doc = backup_service.create(catalog, plane.store, backups, ["A"]).to_json()
    # Incremental: the first segment is named by the earlier manifest, so only the new one is copied.
    assert _made(doc) == [("A", 3, 3, 2, 1, [second])]
    listed = backup_service.listing(catalog, backups, "A").to_json()["backups"]
    assert [(b["seq"], b["segments"], b["segments_reused"]) for b in listed] == [(2, 1, 0), (3, 2, 1)]
    checked = backup_service.verify(catalog, backups, []).to_json()["backups"]
    assert [(b["id"], b["ok"], b["problems"]) for b in checked] == [(b["id"], True, []) for b in listed]


def test_an_incremental_backup_writes_the_catalog_three_times_bk1_issue_16(
    catalog: Catalog, plane: DataPlane, backups: BackupStore
) -> None:
    # Each catalog commit that writes waits for the disk (SQLite's WAL, PostgreSQL's): an incremental backup
    # was six of them. Now: the journal row with both leases; the location's lease given back once the catalog
    # is read (BK1), the read a snapshot; the journal's step with the end of the operation and its last lease.
    _locations(catalog, "A")
    append_keys(catalog, plane, "A", "a1")
    backup_service.create(catalog, plane.store, backups, ["A"])
    append_keys(catalog, plane, "A", "a2")
    begun: list[object] = []
    began = begun.append  # one object: `event.remove` finds a listener by identity
    event.listen(catalog.engine, "begin", began)  # type: ignore[attr-defined]
    try:
        with _catalog_writes(catalog.engine) as writes:  # type: ignore[attr-defined]
            [made] = backup_service.create(catalog, plane.store, backups, ["A"]).to_json()["backups"]
    finally:
        event.remove(catalog.engine, "begin", began)  # type: ignore[attr-defined]
    # Each transaction, even a snapshot, costs a fixed share too: the plan's check of whose manifests the store
    # holds (`backup_owner`) opened one more only to read the catalog's id, which `_read` had just read. Now
    # five: the names checked, the begin, the read, the lease given back, the end.
    assert len(begun) == 5
    assert writes == [
        ["INSERT operations", "UPDATE leases", "UPDATE leases"],
        ["UPDATE leases"],
        ["INSERT operation_steps", "UPDATE leases", "UPDATE operations"],
    ]
    with catalog.transaction(readonly=True) as tx:
        [op] = tx.operations(limit=1)
    assert (op.command, op.outcome, [(s.name, s.detail) for s in op.steps]) == (
        "backup create",
        "succeeded",
        [("backup", {"id": made["id"], "segments": 2, "reused": 1, "recopied": 0})],
    )


def test_a_copy_the_backup_store_lost_is_copied_again_not_reused_dry_run_and_run_alike_bk1(
    catalog: Catalog, plane: DataPlane, backups: BackupStore
) -> None:
    # BK1: an earlier manifest names a1's copy, but the store lost it; reusing it made every later backup
    # unrestorable while BK3 counted it. The next backup checks the copy by its files' sizes and copies it
    # again, which makes the older backup whole too.
    first, older = _a1_backed_up_then_lost(catalog, plane, backups)
    append_keys(catalog, plane, "A", "a2")
    [_, second] = _segments(catalog, "A")
    plan = backup_service.create(catalog, plane.store, backups, ["A"], dry_run=True).to_json()
    doc = backup_service.create(catalog, plane.store, backups, ["A"]).to_json()
    for made in (plan, doc):  # the dry run says what the run does
        assert _made(made) == [("A", 2, 2, 2, 0, [first, second])]
        assert made["backups"][0]["segments_recopied"] == 1
    checked = backup_service.verify(catalog, backups, []).to_json()
    assert [(b["id"], b["ok"]) for b in checked["backups"]] == [
        (older, True),
        (doc["backups"][0]["id"], True),
    ]
    again = backup_service.create(catalog, plane.store, backups, ["A"]).to_json()
    assert (_made(again), again["backups"][0]["segments_recopied"]) == ([("A", 2, 2, 2, 2, [])], 0)


def test_verify_reports_a_missing_copy_and_a_restore_from_it_changes_nothing(
    catalog: Catalog, plane: DataPlane, backups: BackupStore
) -> None:
    path, backup = _a1_backed_up_then_lost(catalog, plane, backups)
    verified = backup_service.verify(
        catalog, backups, [backup], live=lambda: (catalog, plane.store)
    ).to_json()
    [checked] = verified["backups"]
    assert (checked["ok"], checked["problems"], checked["violations"]) == (False, [f"{path}: missing"], [])
    repair = "run `replctl backup create A`: it copies the damaged segments again from its log"
    assert verified["error"]["hint"] == repair
    with pytest.raises(EnvironmentFailure) as raised:
        restore.restore(catalog, plane, backups, "A", "latest")
    assert raised.value.code == "backup-damaged"
    assert raised.value.message == f"backup {backup} is damaged: {path}: missing"
    # A's log still holds the segment: a new backup is the way out, not `backup verify`, which says the same.
    assert raised.value.hint == repair
    assert _log(catalog, plane, "A") == [(1, "A", 1, {"A": 1}, "a1")]


def test_a_restore_refuses_to_discard_events_no_one_else_stores_dr0(
    catalog: Catalog, plane: DataPlane, backups: BackupStore
) -> None:
    _locations(catalog, "A")
    append_keys(catalog, plane, "A", "a1")
    backup_service.create(catalog, plane.store, backups, ["A"])
    append_keys(catalog, plane, "A", "a2")
    with pytest.raises(Refused) as raised:
        restore.restore(catalog, plane, backups, "A", "latest")
    assert raised.value.code == "DR0"
    assert _log(catalog, plane, "A") == [(1, "A", 1, {"A": 1}, "a1"), (2, "A", 2, {"A": 2}, "a2")]
    doc = restore.restore(catalog, plane, backups, "A", "latest", accept_loss=True).to_json()
    # BK2: A's log is exactly the backup's events; DR1: seq 2 is never given again.
    assert (doc["lost_from"], doc["survivors_upto"], doc["discarded"]) == (2, 1, {"A": [2, 2]})
    assert _log(catalog, plane, "A") == [(1, "A", 1, {"A": 1}, "a1")]
    append_keys(catalog, plane, "A", "a3")
    assert _log(catalog, plane, "A") == [(1, "A", 1, {"A": 1}, "a1"), (3, "A", 3, {"A": 3}, "a3")]


def test_a_restore_gets_back_from_a_neighbour_what_came_after_the_backup_bk2(
    catalog: Catalog, plane: DataPlane, backups: BackupStore
) -> None:
    _locations(catalog, "A", "B")
    topology.add_connection(catalog, "A", "B", both=True)
    append_keys(catalog, plane, "A", "a1")
    backup_service.create(catalog, plane.store, backups, ["A"])
    append_keys(catalog, plane, "A", "a2")
    replication.replicate_all(catalog, plane)
    plan = restore.restore(catalog, plane, backups, "A", "latest", dry_run=True).to_json()
    assert (plan["dry_run"], plan["lost_from"], plan["discarded"]) == (True, 2, {})
    doc = restore.restore(catalog, plane, backups, "A", "latest").to_json()
    assert (doc["lost_from"], doc["survivors_upto"], doc["lost"]) == (2, 1, {})
    # DR3: the restored log gets a2 back from B, which stored it, under A's identity.
    assert [(e[1], e[2], e[4]) for e in _log(catalog, plane, "A")] == [("A", 1, "a1"), ("A", 2, "a2")]
    assert _state(catalog, "A")[1] == {"A": 2}


def test_prune_keeps_the_newest_and_every_file_it_names(
    catalog: Catalog, plane: DataPlane, backups: BackupStore
) -> None:
    _locations(catalog, "A")
    append_keys(catalog, plane, "A", "a1")
    older = backup_service.create(catalog, plane.store, backups, ["A"]).to_json()["backups"][0]["id"]
    append_keys(catalog, plane, "A", "a2")
    newer = backup_service.create(catalog, plane.store, backups, ["A"]).to_json()["backups"][0]["id"]
    doc = backup_service.prune(catalog, backups, "A", keep_last=1, older_than=None).to_json()
    # The newer backup reuses the first segment's copy: no file goes, only the older manifest.
    assert (doc["removed"], doc["kept"], doc["files_removed"], doc["makes_unrecoverable"]) == (
        [older],
        [newer],
        [],
        [],
    )
    assert [m.id for m in backups.manifests("A")] == [newer]
    assert [c["ok"] for c in backup_service.verify(catalog, backups, []).to_json()["backups"]] == [True]
