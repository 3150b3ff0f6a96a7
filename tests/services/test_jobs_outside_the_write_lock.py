"""No data-plane job and no read of the store's files runs while a writing catalog transaction is open.

A writing transaction holds the catalog's write lock from its start (SQLite BEGIN IMMEDIATE, PostgreSQL's
advisory lock, `adapters.catalog.engine.take_write_lock`); a job inside it holds every other operator's catalog
write off for the job's length, and on SQLite they give up after the 30 s busy timeout with exit 6. Each story
runs a command through the services on a plane that, at every job and every file read, asks the real SQLite
catalog file whether a writer holds it (BEGIN IMMEDIATE without waiting, on a connection of its own) and
records the call when one does.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any, cast

from service_appends import append_keys
from sqlalchemy.engine import make_url

from replctl.services import backups as backup_service
from replctl.services import (
    compaction,
    deletion,
    recovery,
    repair,
    replication,
    restore,
    retirement,
    topology,
)
from replctl.services.ports import BackupStore, Catalog, DataPlane
from services.test_service_stories import _locations, _log

# Store calls that only name a path or say what the store is: no file is read.
_PURE = frozenset({"new_segment_path", "uri", "local_path", "marker_uri", "root", "is_local"})


class WriteLockWatch:
    """A data plane (and its store) that records each call made while the catalog's write lock is held."""

    def __init__(self, plane: DataPlane, catalog: Catalog) -> None:
        database = make_url(catalog.url).database
        assert database, catalog.url
        self._database = database
        self.plane = cast(DataPlane, _Watched(plane, self, "plane"))
        self.under_lock: list[str] = []

    def held(self) -> bool:
        """Whether a writing transaction holds the catalog's write lock now."""
        probe = sqlite3.connect(self._database, timeout=0, isolation_level=None)
        try:
            probe.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc):
                return True
            raise
        else:
            probe.execute("ROLLBACK")
            return False
        finally:
            probe.close()


class _Watched:
    """`target` with each public method call first checked against the write lock."""

    def __init__(self, target: Any, watch: WriteLockWatch, label: str) -> None:
        self._target, self._watch, self._label = target, watch, label

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if name == "store":
            return _Watched(value, self._watch, "store")
        if name.startswith("_") or name in _PURE or not callable(value):
            return value
        return self._checked(f"{self._label}.{name}", value)

    def _checked(self, what: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def checked(*args: Any, **kwargs: Any) -> Any:
            if self._watch.held():
                self._watch.under_lock.append(what)
            return call(*args, **kwargs)

        return checked


def test_an_append_reads_its_new_files_before_the_write_lock(catalog: Catalog, plane: DataPlane) -> None:
    watch = WriteLockWatch(plane, catalog)
    _locations(catalog, "A")
    append_keys(catalog, watch.plane, "A", "a1", "a2")
    assert watch.under_lock == []
    assert _log(catalog, plane, "A") == [(1, "A", 1, {"A": 1}, "a1"), (2, "A", 2, {"A": 2}, "a2")]


def test_a_deletion_through_a_segment_reads_its_survivors_before_the_write_lock(
    catalog: Catalog, plane: DataPlane
) -> None:
    watch = WriteLockWatch(plane, catalog)
    _locations(catalog, "A", "B")
    topology.add_connection(catalog, "A", "B")
    append_keys(catalog, watch.plane, "A", "e1", "e2", "e3")
    replication.replicate_all(catalog, watch.plane)
    doc = deletion.delete(catalog, watch.plane, "A", upto=2).to_json()
    assert watch.under_lock == []
    assert (doc["deleted_upto"], doc["dvv"], doc["pending"]) == (2, {"A": 2}, False)
    assert _log(catalog, plane, "A") == [(3, "A", 3, {"A": 3}, "e3")]


def test_a_compaction_reads_its_merged_files_before_the_write_lock(
    catalog: Catalog, plane: DataPlane
) -> None:
    watch = WriteLockWatch(plane, catalog)
    _locations(catalog, "A")
    for key in ("a1", "a2", "a3"):
        append_keys(catalog, watch.plane, "A", key)
    doc = compaction.compact(catalog, watch.plane, "A").to_json()
    assert watch.under_lock == []
    assert (doc["segments_before"], doc["segments_after"]) == (3, 1)
    assert [e[4] for e in _log(catalog, plane, "A")] == ["a1", "a2", "a3"]


def test_a_recovery_and_its_dry_run_read_the_logs_outside_the_write_lock(
    catalog: Catalog, plane: DataPlane
) -> None:
    watch = WriteLockWatch(plane, catalog)
    _locations(catalog, "A", "B")
    topology.add_connection(catalog, "A", "B", both=True)
    append_keys(catalog, watch.plane, "A", "a1")
    replication.replicate_all(catalog, watch.plane)
    append_keys(catalog, watch.plane, "A", "a2", "a3")  # one segment; a3 never reaches B
    recovery.drill(catalog, watch.plane, "A", 3)  # cuts through it: a2 survives
    plan = recovery.recover(catalog, watch.plane, "A", dry_run=True).to_json()
    doc = recovery.recover(catalog, watch.plane, "A").to_json()
    assert watch.under_lock == []
    # DR0's report of what is lost for good reads the own origin times still stored, run and dry run alike.
    assert (plan["lost_from"], plan["lost"]) == (doc["lost_from"], doc["lost"]) == (3, {"A": [3, 3]})
    assert _log(catalog, plane, "A") == [(1, "A", 1, {"A": 1}, "a1"), (2, "A", 2, {"A": 2}, "a2")]


def test_a_restore_and_its_dry_run_read_the_logs_outside_the_write_lock(
    catalog: Catalog, plane: DataPlane, backups: BackupStore
) -> None:
    watch = WriteLockWatch(plane, catalog)
    _locations(catalog, "A", "B")
    topology.add_connection(catalog, "A", "B", both=True)
    append_keys(catalog, watch.plane, "A", "a1")
    backup_service.create(catalog, plane.store, backups, ["A"])
    append_keys(catalog, watch.plane, "A", "a2")
    replication.replicate_all(catalog, watch.plane)
    plan = restore.restore(catalog, watch.plane, backups, "A", "latest", dry_run=True).to_json()
    doc = restore.restore(catalog, watch.plane, backups, "A", "latest").to_json()
    assert watch.under_lock == []
    assert (plan["lost_from"], plan["lost"]) == (doc["lost_from"], doc["lost"]) == (2, {})
    assert [(e[1], e[2], e[4]) for e in _log(catalog, plane, "A")] == [("A", 1, "a1"), ("A", 2, "a2")]


def test_retiring_and_pruning_a_clock_read_the_logs_outside_the_write_lock(
    catalog: Catalog, plane: DataPlane
) -> None:
    watch = WriteLockWatch(plane, catalog)
    _locations(catalog, "A", "Z")
    topology.add_connection(catalog, "Z", "A", both=True)
    append_keys(catalog, watch.plane, "Z", "z1")
    replication.replicate_all(catalog, watch.plane)
    topology.remove_connection(catalog, "Z", "A", both=True)
    outcome = retirement.retire(catalog, watch.plane, "Z", prune_clock=True)
    assert watch.under_lock == []
    assert outcome.pruning is not None and outcome.pruning["recorded"] is True
    assert _log(catalog, plane, "A") == [(1, "Z", 1, {}, "z1")]


def test_the_repair_of_a_legacy_pruning_reads_the_store_outside_the_write_lock(
    catalog: Catalog, plane: DataPlane
) -> None:
    watch = WriteLockWatch(plane, catalog)
    _locations(catalog, "A", "Z")
    topology.add_connection(catalog, "Z", "A")
    append_keys(catalog, watch.plane, "Z", "z1")
    replication.replicate_all(catalog, watch.plane)
    topology.remove_connection(catalog, "Z", "A")
    retirement.retire(catalog, watch.plane, "Z", prune_clock=False)
    # What an earlier replctl journalled for a clock pruning that dropped Z from the vectors too (RET4's repair).
    with catalog.transaction() as tx:
        op = tx.begin_operation(repair.LEGACY_PRUNE_COMMAND, {"name": "Z"}, "operator", "host", None)
        tx.set_plan(op, {"needed": 1})
        tx.record_step(op, repair.LEGACY_PRUNE_STEP, {"locations": ["A"]})
        tx.finish_operation(op, "succeeded")
    done = repair.repair_pruned_identities(catalog, watch.plane.store)
    assert watch.under_lock == []
    assert done.repaired == ("Z",)
    with catalog.transaction(readonly=True) as tx:
        retired = tx.location("Z")
    assert retired is not None and retired.clock_pruned
