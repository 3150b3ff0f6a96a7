"""The catalog repository's contract, run against a real SQLite file and a real PostgreSQL database.

Every test gets an empty database migrated to head and a clock it controls, so times are exact and lease
expiry needs no sleeping.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.exc import OperationalError

from replctl.adapters.catalog import migrate
from replctl.adapters.catalog.connections import clear_stale_removed_progress
from replctl.adapters.catalog.dialect import LOCATIONS
from replctl.adapters.catalog.engine import make_engine
from replctl.adapters.catalog.repository import Catalog, CatalogTransaction
from replctl.core.jobs import SegmentStats
from replctl.core.journal import Outcome
from replctl.core.model import (
    Change,
    ChangeKind,
    Connection,
    ConnectionState,
    HistoryMode,
    Location,
    LocationState,
    Role,
    SegmentFile,
)
from replctl.core.vectortime import VectorTime
from replctl.errors import EnvironmentFailure, LockHeld, UnknownName

START = datetime(2030, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)


class ManualClock:
    """A clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def catalog(catalog_url: str, clock: ManualClock) -> Iterator[Catalog]:
    migrate.upgrade(catalog_url)
    with Catalog(catalog_url, clock=clock) as opened:
        yield opened


def _add_locations(catalog: Catalog, *names: str) -> None:
    with catalog.transaction() as tx:
        for name in names:
            tx.put_location(Location(name))


# Locations


def test_a_location_round_trips_with_its_vectors_and_counters(catalog: Catalog) -> None:
    location = Location(
        "A",
        role=Role.HUB,
        state=LocationState.RECOVERING,
        seq=7,
        cvv=VectorTime({"A": 7, "B": 3}),
        dvv=VectorTime({"A": 2}),
        deleted_upto=2,
        logical_deleted_upto=4,
        baseline=VectorTime({"C": 1}),
    )
    with catalog.transaction() as tx:
        tx.put_location(location)
    with catalog.transaction() as tx:
        assert tx.location("A") == location
        assert tx.locations() == [location]


def test_putting_a_known_location_overwrites_its_metadata(catalog: Catalog) -> None:
    _add_locations(catalog, "B", "A")
    updated = Location("A", seq=3, cvv=VectorTime({"A": 3}))
    with catalog.transaction() as tx:
        tx.put_location(updated)
    with catalog.transaction() as tx:
        assert [loc.name for loc in tx.locations()] == ["A", "B"]
        assert tx.location("A") == updated


def test_an_unknown_location_reads_as_none(catalog: Catalog) -> None:
    with catalog.transaction() as tx:
        assert tx.location("nowhere") is None


def test_retiring_stamps_retired_at_once_and_keeps_created_at(catalog: Catalog, clock: ManualClock) -> None:
    _add_locations(catalog, "A")
    clock.advance(60)
    with catalog.transaction() as tx:
        tx.put_location(Location("A", state=LocationState.RETIRED))
    clock.advance(60)
    with catalog.transaction() as tx:
        tx.put_location(Location("A", state=LocationState.RETIRED, seq=1))
    with catalog.engine.connect() as conn:
        created, retired = conn.execute(select(LOCATIONS.c.created_at, LOCATIONS.c.retired_at)).one()
    assert (created, retired) == (START, START + timedelta(seconds=60))


# Connections


def test_a_connection_round_trips_with_filter_history_and_progress(catalog: Catalog) -> None:
    _add_locations(catalog, "A", "B")
    connection = Connection(
        "A",
        "B",
        state=ConnectionState.BLOCKED,
        filter="key = 'e3'",
        ever_filtered=True,
        history=HistoryMode.CURRENT,
        progress=12,
        reason="DR5: would recover events",
    )
    with catalog.transaction() as tx:
        tx.put_connection(connection)
    with catalog.transaction() as tx:
        assert tx.connection("A", "B") == connection
        assert tx.connection("B", "A") is None
        assert tx.connections() == [connection]


def test_putting_a_known_connection_updates_its_state(catalog: Catalog) -> None:
    _add_locations(catalog, "A", "B", "C")
    with catalog.transaction() as tx:
        tx.put_connection(Connection("B", "C"))
        tx.put_connection(Connection("A", "B"))
        tx.put_connection(Connection("A", "B", state=ConnectionState.ACTIVE, progress=5))
    with catalog.transaction() as tx:
        assert [c.key for c in tx.connections()] == [("A", "B"), ("B", "C")]
        assert tx.connection("A", "B") == Connection("A", "B", state=ConnectionState.ACTIVE, progress=5)


def test_a_connection_to_an_unknown_location_is_refused_by_foreign_keys(catalog: Catalog) -> None:
    _add_locations(catalog, "A")
    with pytest.raises(EnvironmentFailure) as caught, catalog.transaction() as tx:
        tx.put_connection(Connection("A", "ghost"))
    assert caught.value.exit_code == 6
    assert caught.value.__cause__ is not None


# Topology history


def test_recording_a_change_fills_its_id_time_and_provenance(catalog: Catalog) -> None:
    with catalog.transaction() as tx:
        recorded = tx.record_change(
            Change(ChangeKind.LOCATION_ADDED, location="A", role=Role.READ_ONLY),
            actor="ops",
            reason="new site",
            operation_id="op-1",
        )
    assert recorded.id is not None
    assert recorded.at == START.isoformat()
    assert (recorded.actor, recorded.reason, recorded.operation) == ("ops", "new site", "op-1")
    with catalog.transaction() as tx:
        assert tx.changes() == [recorded]


def test_changes_come_back_in_the_order_they_were_recorded(catalog: Catalog) -> None:
    kinds = [
        Change(ChangeKind.LOCATION_ADDED, location="B", role=Role.READ_WRITE),
        Change(ChangeKind.LOCATION_ADDED, location="A", role=Role.READ_WRITE),
        Change(
            ChangeKind.CONNECTION_ADDED, source="A", target="B", filter="key = 'x'", history=HistoryMode.NONE
        ),
        Change(ChangeKind.FILTER_CLEARED, source="A", target="B"),
        Change(ChangeKind.GROUP_DECLARED, group="g", members=("A", "B")),
    ]
    with catalog.transaction() as tx:
        recorded = [tx.record_change(c, actor=None, reason=None, operation_id=None) for c in kinds]
    with catalog.transaction() as tx:
        assert tx.changes() == recorded
    ids = [c.id for c in recorded if c.id is not None]
    assert len(ids) == len(recorded)
    assert ids == sorted(ids)
    assert [c.members for c in recorded][-1] == ("A", "B")


def test_changes_of_a_location_include_every_change_that_names_it(catalog: Catalog) -> None:
    with catalog.transaction() as tx:
        record = [
            tx.record_change(c, actor=None, reason=None, operation_id=None)
            for c in [
                Change(ChangeKind.LOCATION_ADDED, location="A", role=Role.READ_WRITE),
                Change(ChangeKind.LOCATION_ADDED, location="B", role=Role.READ_WRITE),
                Change(ChangeKind.CONNECTION_ADDED, source="B", target="A", history=HistoryMode.COMPLETE),
                Change(ChangeKind.GROUP_DECLARED, group="g", members=("A", "C")),
                Change(ChangeKind.GROUP_DECLARED, group="h", members=("B", "C")),
                Change(ChangeKind.FAILOVER, location="X", failover_from="B", failover_to="A"),
            ]
        ]
    with catalog.transaction() as tx:
        assert tx.changes("A") == [record[0], record[2], record[3], record[5]]
        assert tx.changes("nowhere") == []


# Segments


def test_segments_come_back_in_seq_order_with_their_lub(catalog: Catalog) -> None:
    _add_locations(catalog, "A", "B")
    with catalog.transaction() as tx:
        later = tx.add_segment("A", "A/00002.parquet", 11, 20, 9, {"A": 20, "B": 4}, "op-2")
        first = tx.add_segment("A", "A/00001.parquet", 1, 10, 10, {"A": 10}, "op-1")
        other = tx.add_segment("B", "B/00001.parquet", 1, 1, 1, {"B": 1}, None)
    assert later.vt_lub == VectorTime({"A": 20, "B": 4})
    assert len({first.id, later.id, other.id}) == 3
    with catalog.transaction() as tx:
        assert tx.segments("A") == [first, later]
        assert tx.segments("B") == [other]
        assert tx.segments("C") == []


def test_a_written_segment_is_committed_from_its_statistics_as_add_segment_commits_it(
    catalog: Catalog,
) -> None:
    # The one helper every writing service uses: the row takes seq range, count and LUB from the job's
    # statistics (here a SegmentStats with a plain dict LUB) and keeps the files as written.
    _add_locations(catalog, "A")
    files = (SegmentFile("part-0.parquet", 120, rows=10, seq_lo=1, seq_hi=10, sha256="ab" * 32),)
    with catalog.transaction() as tx:
        written = tx.add_written_segment(
            "A", "A/00001.parquet", SegmentStats(10, 1, 10, {"A": 10, "B": 2}), "op-1", files
        )
        plain = tx.add_segment("A", "A/00002.parquet", 11, 12, 2, {"A": 12}, "op-2", files=None)
    assert (written.seq_lo, written.seq_hi, written.count) == (1, 10, 10)
    assert written.vt_lub == VectorTime({"A": 10, "B": 2})
    with catalog.transaction() as tx:
        assert tx.segments("A") == [written, plain]
        assert tx.segments("A")[0].files == files


def test_deleted_segments_are_gone_and_their_paths_no_longer_referenced(catalog: Catalog) -> None:
    _add_locations(catalog, "A")
    with catalog.transaction() as tx:
        first = tx.add_segment("A", "A/1.parquet", 1, 10, 10, {"A": 10}, None)
        second = tx.add_segment("A", "A/2.parquet", 11, 20, 10, {"A": 20}, None)
    with catalog.transaction() as tx:
        assert tx.segment_paths() == {"A/1.parquet", "A/2.parquet"}
        assert tx.delete_segments([first.id, first.id]) == 1
        assert tx.delete_segments([]) == 0
    with catalog.transaction() as tx:
        assert tx.segments("A") == [second]
        assert tx.segment_paths() == {"A/2.parquet"}


def test_a_segment_with_an_inverted_range_is_rejected(catalog: Catalog) -> None:
    _add_locations(catalog, "A")
    with pytest.raises(ValueError, match="bad segment range"), catalog.transaction() as tx:
        tx.add_segment("A", "A/x.parquet", 5, 4, 0, {}, None)


# Pending deletions


def test_a_pending_deletion_round_trips_and_a_retry_keeps_its_request_time(
    catalog: Catalog, clock: ManualClock
) -> None:
    _add_locations(catalog, "A", "B")
    with catalog.transaction() as tx:
        tx.put_pending_deletion("B", 3, [])
        tx.put_pending_deletion("A", 5, ["C", "B"])
    clock.advance(30)
    with catalog.transaction() as tx:
        tx.put_pending_deletion("A", 5, ["C"])
    with catalog.transaction() as tx:
        pending = tx.pending_deletions()
    assert [(p.location, p.requested_upto, p.blocked_by) for p in pending] == [("A", 5, ("C",)), ("B", 3, ())]
    assert pending[0].requested_at == START


def test_a_new_upto_is_a_new_request_and_clearing_removes_it(catalog: Catalog, clock: ManualClock) -> None:
    _add_locations(catalog, "A")
    with catalog.transaction() as tx:
        tx.put_pending_deletion("A", 5, ["B"])
    clock.advance(30)
    with catalog.transaction() as tx:
        tx.put_pending_deletion("A", 8, ["B"])
    with catalog.transaction() as tx:
        (pending,) = tx.pending_deletions()
        assert (pending.requested_upto, pending.requested_at) == (8, START + timedelta(seconds=30))
        assert tx.clear_pending_deletion("A") is True
        assert tx.clear_pending_deletion("A") is False
        assert tx.pending_deletions() == []


def test_the_pending_deletion_of_one_location_is_read_alone(catalog: Catalog) -> None:
    _add_locations(catalog, "A", "B")
    with catalog.transaction() as tx:
        tx.put_pending_deletion("A", 5, ["B"])
    with catalog.transaction() as tx:
        found = tx.pending_deletion("A")
        assert found is not None
        assert (found.location, found.requested_upto, found.blocked_by) == ("A", 5, ("B",))
        assert tx.pending_deletion("B") is None


def test_a_pending_deletion_records_whether_its_retries_are_held_to_bk4(
    catalog: Catalog, clock: ManualClock
) -> None:
    _add_locations(catalog, "A", "B")
    with catalog.transaction() as tx:
        tx.put_pending_deletion("A", 5, ["C"], require_recoverable=True)
        tx.put_pending_deletion("B", 3, ["C"])
    with catalog.transaction() as tx:
        assert [(p.location, p.require_recoverable) for p in tx.pending_deletions()] == [
            ("A", True),
            ("B", False),
        ]
    # A retry that still waits writes the flag again (the service keeps it, BK4); what it gives is stored.
    clock.advance(30)
    with catalog.transaction() as tx:
        tx.put_pending_deletion("A", 5, ["C"], require_recoverable=True)
        tx.put_pending_deletion("B", 8, ["C"], require_recoverable=True)
    with catalog.transaction() as tx:
        found = tx.pending_deletion("A")
        assert found is not None and (found.require_recoverable, found.requested_at) == (True, START)
        assert [(p.location, p.requested_upto, p.require_recoverable) for p in tx.pending_deletions()] == [
            ("A", 5, True),
            ("B", 8, True),
        ]
        tx.put_pending_deletion("A", 5, ["C"], require_recoverable=False)
    with catalog.transaction() as tx:
        found = tx.pending_deletion("A")
        assert found is not None and found.require_recoverable is False
        # Cleared and asked again without the guard: a new request, not held to the old one's.
        assert tx.clear_pending_deletion("B") is True
        tx.put_pending_deletion("B", 9, ["C"])
    with catalog.transaction() as tx:
        found = tx.pending_deletion("B")
        assert found is not None and (found.requested_upto, found.require_recoverable) == (9, False)


def test_the_repair_clears_only_removed_progress_past_the_source_seq_dr2(catalog: Catalog) -> None:
    with catalog.transaction() as tx:
        tx.put_location(Location("A", seq=1))
        tx.put_location(Location("B", seq=3))
        tx.put_location(Location("C"))
        tx.put_connection(Connection("A", "B", ConnectionState.REMOVED, progress=3))  # past A.seq: stale
        tx.put_connection(Connection("B", "A", ConnectionState.REMOVED, progress=3))  # within B.seq
        tx.put_connection(Connection("A", "C", ConnectionState.ACTIVE, progress=2))  # current: DR2's own
    with catalog.engine.begin() as conn:
        assert clear_stale_removed_progress(conn) == [("A", "B")]
    with catalog.engine.begin() as conn:
        assert clear_stale_removed_progress(conn) == []  # idempotent
    with catalog.transaction() as tx:
        assert {c.key: c.progress for c in tx.connections()} == {("A", "B"): 0, ("A", "C"): 2, ("B", "A"): 3}


# Journal


def test_an_operation_is_journalled_with_plan_steps_and_outcome(catalog: Catalog, clock: ManualClock) -> None:
    with catalog.transaction() as tx:
        op_id = tx.begin_operation("delete", {"location": "A", "upto": 3}, "ops", "host-1", "GDPR request")
    with catalog.transaction() as tx:
        running = tx.operation(op_id)
    assert running is not None
    assert (running.outcome, running.finished, running.steps, running.ended_at) == (
        Outcome.RUNNING,
        False,
        (),
        None,
    )
    assert running.started_at == START
    with catalog.transaction() as tx:
        tx.set_plan(op_id, {"steps": ["logical", "physical"]})
        clock.advance(1)
        first = tx.record_step(op_id, "logical", {"upto": 3})
        second = tx.record_step(op_id, "physical", {})
        clock.advance(1)
        tx.finish_operation(op_id, "incomplete", {"code": "incomplete", "message": "B lags", "hint": None})
    with catalog.transaction() as tx:
        done = tx.operation(op_id)
    assert done is not None
    assert (first.index, second.index) == (1, 2)
    assert done.steps == (first, second)
    assert done.steps[0].at == START + timedelta(seconds=1)
    assert done.plan == {"steps": ["logical", "physical"]}
    assert done.args == {"location": "A", "upto": 3}
    assert (done.command, done.actor, done.host, done.reason) == ("delete", "ops", "host-1", "GDPR request")
    assert done.outcome is Outcome.INCOMPLETE
    assert done.error == {"code": "incomplete", "message": "B lags", "hint": None}
    assert done.ended_at == START + timedelta(seconds=2)
    assert done.ended_at.tzinfo is UTC


def test_operations_list_newest_first_up_to_the_limit(catalog: Catalog, clock: ManualClock) -> None:
    ids = []
    for n in range(3):
        with catalog.transaction() as tx:
            ids.append(tx.begin_operation(f"cmd {n}", {}, None, None, None))
            tx.record_step(ids[-1], "only", {"n": n})
        clock.advance(1)
    with catalog.transaction() as tx:
        listed = tx.operations(limit=2)
        unknown = tx.operation("00000000-0000-0000-0000-000000000000")
    assert [op.id for op in listed] == [ids[2], ids[1]]
    assert [op.steps[0].detail for op in listed] == [{"n": 2}, {"n": 1}]
    assert unknown is None


def test_journalling_an_unknown_operation_is_refused(catalog: Catalog) -> None:
    writes: list[Callable[[CatalogTransaction], object]] = [
        lambda tx: tx.record_step("nope", "x", {}),
        lambda tx: tx.set_plan("nope", {}),
        lambda tx: tx.finish_operation("nope", Outcome.FAILED),
    ]
    for write in writes:
        with pytest.raises(UnknownName, match="nope"), catalog.transaction() as tx:
            write(tx)


def test_an_operation_cannot_finish_as_running(catalog: Catalog) -> None:
    with catalog.transaction() as tx:
        op_id = tx.begin_operation("x", {}, None, None, None)
        with pytest.raises(ValueError, match="running"):
            tx.finish_operation(op_id, Outcome.RUNNING)


# Leases


def test_a_second_acquire_is_refused_naming_holder_operation_and_since(
    catalog: Catalog, clock: ManualClock
) -> None:
    with catalog.transaction() as tx:
        assert tx.acquire_lease("location:A", "alice@h1", "op-1", 300) == 1
    clock.advance(10)
    with pytest.raises(LockHeld) as caught, catalog.transaction() as tx:
        tx.acquire_lease("location:A", "bob@h2", "op-2", 300)
    error = caught.value
    assert error.exit_code == 4
    assert "alice@h1" in error.message
    assert "op-1" in error.message
    assert "2030-01-02 03:04:05Z" in error.message
    assert error.details["since"] == START.isoformat()
    assert error.hint is not None
    assert "replctl ops show op-1" in error.hint


def test_leases_on_different_resources_are_independent(catalog: Catalog) -> None:
    with catalog.transaction() as tx:
        assert tx.acquire_lease("location:A", "alice", "op-1", 60) == 1
        assert tx.acquire_lease("location:B", "bob", "op-2", 60) == 1
        tx.check_lease("location:A", 1)
        tx.check_lease("location:B", 1)


def test_an_expired_lease_is_taken_over_and_the_old_token_then_fails(
    catalog: Catalog, clock: ManualClock
) -> None:
    with catalog.transaction() as tx:
        old = tx.acquire_lease("topology", "alice", "op-1", 60)
    clock.advance(61)
    with catalog.transaction() as tx:
        new = tx.acquire_lease("topology", "bob", "op-2", 60)
    assert new > old
    with catalog.transaction() as tx:
        tx.check_lease("topology", new)
    with pytest.raises(LockHeld, match="taken over by bob") as caught, catalog.transaction() as tx:
        tx.check_lease("topology", old)
    assert caught.value.details["operation_id"] == "op-2"
    with catalog.transaction() as tx:
        assert tx.release_lease("topology", old) is False
        tx.check_lease("topology", new)


def test_an_expired_lease_nobody_took_over_still_passes_its_check(
    catalog: Catalog, clock: ManualClock
) -> None:
    with catalog.transaction() as tx:
        token = tx.acquire_lease("topology", "alice", "op-1", 60)
    clock.advance(120)
    with catalog.transaction() as tx:
        tx.check_lease("topology", token)


def test_tokens_keep_increasing_across_release_and_reacquire(catalog: Catalog) -> None:
    tokens = []
    for n in range(3):
        with catalog.transaction() as tx:
            tokens.append(tx.acquire_lease("location:A", "alice", f"op-{n}", 60))
            assert tx.release_lease("location:A", tokens[-1]) is True
    assert tokens == [1, 2, 3]
    with pytest.raises(LockHeld, match="released"), catalog.transaction() as tx:
        tx.check_lease("location:A", tokens[-1])


def test_a_renewed_lease_outlives_its_first_expiry(catalog: Catalog, clock: ManualClock) -> None:
    with catalog.transaction() as tx:
        token = tx.acquire_lease("topology", "alice", "op-1", 60)
    clock.advance(50)
    with catalog.transaction() as tx:
        tx.renew_lease("topology", token, 60)
    clock.advance(50)
    with pytest.raises(LockHeld, match="alice"), catalog.transaction() as tx:
        tx.acquire_lease("topology", "bob", "op-2", 60)


def test_checking_a_lease_that_never_existed_fails(catalog: Catalog) -> None:
    with pytest.raises(LockHeld, match="does not exist"), catalog.transaction() as tx:
        tx.check_lease("location:Z", 1)


def test_lease_held_reads_the_refusal_acquire_would_raise_and_takes_nothing(
    catalog: Catalog, clock: ManualClock
) -> None:
    with catalog.transaction(readonly=True) as tx:
        assert tx.lease_held("location:A") is None  # never leased
    with catalog.transaction() as tx:
        token = tx.acquire_lease("location:A", "alice@h1", "op-1", 60)
    clock.advance(10)
    with catalog.transaction(readonly=True) as tx:
        held = tx.lease_held("location:A")
        assert tx.lease_held("location:B") is None
    with pytest.raises(LockHeld) as caught, catalog.transaction() as tx:
        tx.acquire_lease("location:A", "bob@h2", "op-2", 60)
    assert held is not None
    assert held.to_json() == caught.value.to_json()
    assert (held.exit_code, held.details) == (4, caught.value.details)
    # Reading took nothing: the holder's token is still the current one.
    with catalog.transaction() as tx:
        tx.check_lease("location:A", token)
    clock.advance(51)  # expired: acquire would take it over
    with catalog.transaction(readonly=True) as tx:
        assert tx.lease_held("location:A") is None


def test_a_released_lease_is_not_held(catalog: Catalog) -> None:
    with catalog.transaction() as tx:
        token = tx.acquire_lease("topology", "alice@h1", "op-1", 60)
        assert tx.release_lease("topology", token)
    with catalog.transaction(readonly=True) as tx:
        assert tx.lease_held("topology") is None


def test_concurrent_acquires_grant_the_lease_exactly_once(catalog_url: str, catalog: Catalog) -> None:
    contenders = 6
    barrier = threading.Barrier(contenders)
    granted: list[int] = []
    refused: list[LockHeld] = []
    unexpected: list[BaseException] = []

    def contend(n: int) -> None:
        # Each contender has its own engine, as separate processes would.
        with Catalog(catalog_url) as own:
            try:
                barrier.wait(timeout=30)
                with own.transaction() as tx:
                    granted.append(tx.acquire_lease("topology", f"op{n}@host", f"op-{n}", 60))
            except LockHeld as exc:
                refused.append(exc)
            except BaseException as exc:
                unexpected.append(exc)

    threads = [threading.Thread(target=contend, args=(n,)) for n in range(contenders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert unexpected == []
    assert granted == [1]
    assert len(refused) == contenders - 1


# Transactions and the engine


def test_a_transaction_that_raises_writes_nothing(catalog: Catalog) -> None:
    with pytest.raises(RuntimeError), catalog.transaction() as tx:
        tx.put_location(Location("A"))
        tx.begin_operation("x", {}, None, None, None)
        raise RuntimeError("boom")
    with catalog.transaction(readonly=True) as tx:
        assert tx.locations() == []
        assert tx.operations() == []


def test_a_readonly_transaction_reads_what_was_committed(catalog: Catalog) -> None:
    _add_locations(catalog, "A")
    with catalog.transaction(readonly=True) as tx:
        assert [loc.name for loc in tx.locations()] == ["A"]


def test_an_unreachable_postgresql_server_is_an_environment_failure_without_password() -> None:
    unreachable = Catalog("postgresql://replctl:s3cret@127.0.0.1:1/catalog?connect_timeout=2")
    with pytest.raises(EnvironmentFailure) as caught, unreachable.transaction() as tx:
        tx.locations()
    unreachable.close()
    error = caught.value
    assert error.exit_code == 6
    assert "s3cret" not in error.message
    assert "127.0.0.1:1/catalog" in error.message
    assert isinstance(error.__cause__, OperationalError)


def test_a_sqlite_catalog_gets_its_folder_foreign_keys_wal_and_a_busy_timeout(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert (conn.exec_driver_sql("PRAGMA busy_timeout").scalar() or 0) >= 1000
    finally:
        engine.dispose()
    assert engine.url.database is not None
    assert engine.url.database.endswith("catalog/catalog.db")


def test_a_sqlite_catalog_whose_folder_cannot_be_created_is_an_environment_failure(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(EnvironmentFailure, match="cannot create the folder"):
        make_engine(f"sqlite:///{blocker}/catalog.db")
