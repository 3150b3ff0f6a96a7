"""Leases are renewed while an operation runs (issue 15 item 6).

An operation that outlives its leases' time to live keeps them: a thread renews them a few times per time to
live, so another operator is still refused with exit 4 instead of taking them over and making the first one
fail at its commit. The time to live is made short; the first operation is paused (in-process failpoint)
until its lease has outlived the time it was first granted for. No Spark is involved.
"""

from __future__ import annotations

import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from clitool import Replctl

from replctl import failpoints
from replctl.adapters.catalog import engine as catalog_engine
from replctl.adapters.catalog import migrate
from replctl.adapters.catalog.repository import Catalog
from replctl.services import operations
from replctl.services.lease_keeper import LeaseKeeper

TTL_SECONDS = 0.6


def _expiry(rc: Replctl, resource: str) -> datetime:
    with sqlite3.connect(rc.root / "catalog.db") as db:
        (value,) = db.execute("SELECT expires_at FROM leases WHERE resource = ?", (resource,)).fetchone()
    return datetime.fromisoformat(str(value)).replace(tzinfo=None)


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


@pytest.mark.timeout(120)
def test_issue15_6_a_job_outliving_its_lease_ttl_keeps_the_lease_and_another_operator_gets_exit_4(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rc = Replctl(tmp_path)
    rc("init")
    for name in "ABC":
        rc("location", "add", name)
    monkeypatch.setattr(operations, "LEASE_TTL_SECONDS", TTL_SECONDS)
    refusals: list[dict[str, object]] = []

    def outlive_the_lease_then_compete() -> None:
        granted_until = _expiry(rc, "topology")
        # Wait (bounded) until the first grant has run out by the clock and the lease was renewed past it.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (
            _now() > granted_until and _expiry(rc, "topology") > _now()
        ):
            time.sleep(TTL_SECONDS / 10)
        refusals.append(rc.json("topology", "add", "A", "C", expect=4))

    failpoints.reset()
    with failpoints.calling("operation.after-lease", outlive_the_lease_then_compete) as ran:
        rc("topology", "add", "A", "B")
    assert ran == ["operation.after-lease"]
    (refused,) = refusals
    error = refused["error"]
    assert isinstance(error, dict)
    assert error["code"] == "lock-held"
    assert error["message"].startswith("topology is held by ")
    # The first operation kept its lease to the end: it committed, the second changed nothing.
    changes = [
        (c["kind"], c.get("source"), c.get("target")) for c in rc.json("topology", "history")["changes"]
    ]
    assert ("connection-added", "A", "B") in changes
    assert ("connection-added", "A", "C") not in changes
    ops = rc.json("ops", "list", "--limit", "2")["operations"]
    assert sorted(op["outcome"] for op in ops) == ["refused", "succeeded"]


def test_an_operation_that_ends_before_a_renewal_is_due_opens_no_second_catalog_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 16: the keeper's engine of its own is opened only when a renewal is due; opening it for every
    # operation cost each one ~2 ms of CPU beside its own work, for renewals nearly none of them makes.
    url = f"sqlite:///{tmp_path / 'catalog.db'}"
    migrate.upgrade(url)
    opened: list[str] = []
    reopen = Catalog.reopen

    def recording_reopen(self: Catalog) -> Catalog:
        opened.append(self.url)
        return reopen(self)

    monkeypatch.setattr(Catalog, "reopen", recording_reopen)
    with Catalog(url) as catalog:
        keeper = LeaseKeeper(catalog, {}, ttl_seconds=60)
        keeper.start()
        keeper.stop()
        assert opened == []
        keeper = LeaseKeeper(catalog, {}, ttl_seconds=0.03)
        keeper.start()
        deadline = time.monotonic() + 20
        while not opened and time.monotonic() < deadline:
            time.sleep(0.01)
        keeper.stop()
    assert opened == [catalog.url]  # once a renewal is due, and only once


def test_a_renewal_that_finds_the_catalog_busy_is_tried_again_at_the_next_tick(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another writer holding SQLite's write lock past the busy timeout is a passing condition, not a lost
    # lease: the keeper must renew at its next tick, or the lease runs out under a live operation.
    path = tmp_path / "catalog.db"
    url = f"sqlite:///{path}"
    migrate.upgrade(url)
    monkeypatch.setattr(catalog_engine, "SQLITE_BUSY_TIMEOUT_MS", 100)
    lost: list[str] = []
    with Catalog(url) as catalog:
        with catalog.transaction() as tx:
            token = tx.acquire_lease("topology", "operator@host", "op-1", 60)
        keeper = LeaseKeeper(catalog, {"topology": token}, ttl_seconds=600)
        granted = _lease_expiry(path)
        blocker = sqlite3.connect(path, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        keeper.renew(catalog, on_lost=lost.append)  # busy past the timeout: nothing renewed
        blocker.execute("ROLLBACK")
        blocker.close()
        assert _lease_expiry(path) == granted
        keeper.renew(catalog, on_lost=lost.append)
    assert lost == []
    assert _lease_expiry(path) > granted  # renewed at the next tick (600 s from now, past the 60 s grant)


def test_a_renewal_that_finds_the_lease_taken_over_stops_renewing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "catalog.db"
    url = f"sqlite:///{path}"
    migrate.upgrade(url)
    lost: list[str] = []
    with Catalog(url) as catalog:
        with catalog.transaction() as tx:
            token = tx.acquire_lease("topology", "operator@host", "op-1", 60)
            tx.release_lease("topology", token)
            tx.acquire_lease("topology", "other@host", "op-2", 60)
        keeper = LeaseKeeper(catalog, {"topology": token}, ttl_seconds=600)
        taken = _lease_expiry(path)
        keeper.renew(catalog, on_lost=lost.append)
        keeper.renew(catalog, on_lost=lost.append)
    assert lost == ["topology"]  # reported once, then left alone
    assert _lease_expiry(path) == taken  # the other holder's lease is not extended


def _lease_expiry(path: Path) -> datetime:
    with sqlite3.connect(path) as db:
        (value,) = db.execute("SELECT expires_at FROM leases WHERE resource = 'topology'").fetchone()
    return datetime.fromisoformat(str(value)).replace(tzinfo=None)
