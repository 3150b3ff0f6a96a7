"""The catalog version (reviewed plans): one bump per committed transaction that changed state, on SQLite and
PostgreSQL alike, and none for the journal, leases, reads or transactions rolled back; and the lineage: each
version reached gets a token of its own, committed with it (store identity)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from sqlalchemy import text

from replctl.adapters.catalog import migrate
from replctl.adapters.catalog.engine import make_engine
from replctl.adapters.catalog.repository import Catalog
from replctl.adapters.catalog.version import CATALOG_LINEAGE, CATALOG_STATE
from replctl.core.model import Location
from replctl.errors import EnvironmentFailure


@pytest.fixture
def catalog(catalog_url: str) -> Iterator[Catalog]:
    migrate.upgrade(catalog_url)
    with Catalog(catalog_url) as opened:
        yield opened


def version(catalog: Catalog) -> int:
    with catalog.transaction(readonly=True) as tx:
        return tx.catalog_version()


def lineage(catalog: Catalog) -> dict[int, str]:
    """Every row of the catalog's lineage: version -> token."""
    with catalog.engine.connect() as conn:
        return {int(row.version): str(row.token) for row in conn.execute(CATALOG_LINEAGE.select())}


def test_a_new_catalog_is_at_version_0(catalog: Catalog) -> None:
    assert version(catalog) == 0


def test_every_version_reached_gets_a_token_of_its_own_and_only_a_state_change_reaches_one(
    catalog: Catalog,
) -> None:
    start = lineage(catalog)
    assert list(start) == [0]  # the new catalog's version, from its revision
    with catalog.transaction(readonly=True) as tx:
        assert tx.catalog_version_token(0) == start[0]
        assert tx.catalog_version_token(1) is None
    with catalog.transaction() as tx:
        tx.put_location(Location("A"))
        assert tx.catalog_version_token(1) is None  # written with the bump, the last statement
    with pytest.raises(RuntimeError), catalog.transaction() as tx:
        tx.put_location(Location("B"))
        raise RuntimeError("abort")
    with catalog.transaction() as tx:
        tx.begin_operation("x", {}, None, None, None)
    with catalog.transaction() as tx:
        tx.put_location(Location("C"))
    tokens = lineage(catalog)
    assert sorted(tokens) == [0, 1, 2]
    assert len(set(tokens.values())) == 3
    assert all(len(token) == 32 and int(token, 16) >= 0 for token in tokens.values())
    with catalog.transaction(readonly=True) as tx:
        assert [tx.catalog_version_token(v) for v in (0, 1, 2)] == [tokens[0], tokens[1], tokens[2]]


def test_a_transaction_that_writes_state_bumps_the_version_once_however_many_rows_it_writes(
    catalog: Catalog,
) -> None:
    with catalog.transaction() as tx:
        tx.put_location(Location("A"))
        tx.put_location(Location("B"))
        tx.put_pending_deletion("A", 3, ["B"])
        assert tx.catalog_version() == 0  # raised as the transaction's last statement
    assert version(catalog) == 1
    with catalog.transaction() as tx:
        tx.clear_pending_deletion("A")
    assert version(catalog) == 2


def test_journal_lease_and_read_only_transactions_leave_the_version_alone(catalog: Catalog) -> None:
    with catalog.transaction() as tx:
        op = tx.begin_operation("location add", {"name": "A"}, "alice", "host", None)
    with catalog.transaction() as tx:
        token = tx.acquire_lease("location:A", "alice@host pid 1", op, 300)
        tx.record_step(op, "step", {})
        tx.set_plan(op, {"x": 1})
    with catalog.transaction() as tx:
        tx.check_lease("location:A", token)
        tx.release_lease("location:A", token)
        tx.finish_operation(op, "succeeded")
    with catalog.transaction() as tx:
        tx.locations()
    with catalog.transaction(readonly=True) as tx:
        tx.operations()
    assert version(catalog) == 0


def test_a_statement_that_changes_no_row_is_no_state_change(catalog: Catalog) -> None:
    with catalog.transaction() as tx:
        assert tx.clear_pending_deletion("nowhere") is False
    assert version(catalog) == 0


def test_a_rolled_back_transaction_bumps_nothing_and_leaves_no_mark_for_the_next(catalog: Catalog) -> None:
    with pytest.raises(RuntimeError), catalog.transaction() as tx:
        tx.put_location(Location("A"))
        raise RuntimeError("abort")
    assert version(catalog) == 0
    # The same pooled connection serves the next transaction, which writes only the journal.
    with catalog.transaction() as tx:
        tx.begin_operation("x", {}, None, None, None)
    assert version(catalog) == 0
    with catalog.transaction() as tx:
        assert tx.locations() == []


def test_raw_sql_on_a_state_table_counts_as_a_state_change(catalog: Catalog) -> None:
    with catalog.transaction() as tx:
        tx.put_location(Location("A"))
    with catalog.engine.connect() as conn, conn.begin():
        # Outside Catalog.transaction nothing bumps: the mark is read only there (documented).
        conn.execute(text("UPDATE locations SET seq = 5 WHERE name = 'A'"))
    assert version(catalog) == 1
    with catalog.transaction() as tx:
        tx._conn.execute(text('UPDATE "locations" SET seq = 6 WHERE name = :n'), {"n": "A"})
    assert version(catalog) == 2


def test_concurrent_writers_each_bump_the_version(catalog_url: str, catalog: Catalog) -> None:
    writers, rounds = 4, 5
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            with Catalog(catalog_url) as own:
                for r in range(rounds):
                    with own.transaction() as tx:
                        tx.put_location(Location(f"L{n}-{r}"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert version(catalog) == writers * rounds
    # Every version reached once, each with its own token.
    assert sorted(lineage(catalog)) == list(range(writers * rounds + 1))
    assert len(set(lineage(catalog).values())) == writers * rounds + 1


def test_a_catalog_without_its_version_row_is_refused_rather_than_never_changing(catalog: Catalog) -> None:
    with catalog.engine.connect() as conn, conn.begin():
        conn.execute(CATALOG_STATE.delete())
    with pytest.raises(EnvironmentFailure, match="no version row"), catalog.transaction() as tx:
        tx.put_location(Location("A"))
    with catalog.transaction() as tx:
        assert tx.location("A") is None


def test_upgrading_a_catalog_made_at_0001_seeds_version_0_and_downgrading_drops_it(catalog_url: str) -> None:
    migrate.upgrade(catalog_url, "0001")
    engine = make_engine(catalog_url)
    try:
        # At 0001 the table is missing: the catalog is refused as outdated before anything reads it.
        with pytest.raises(EnvironmentFailure):
            migrate.ensure_current(engine)
        migrate.upgrade(engine)
        with Catalog(engine) as after:
            assert version(after) == 0
            with after.transaction() as tx:
                tx.put_location(Location("A"))
            assert version(after) == 1
        migrate.downgrade(engine, "0001")
        with engine.connect() as conn:
            assert migrate.current_revision(conn) == "0001"
            assert not engine.dialect.has_table(conn, CATALOG_STATE.name)
    finally:
        engine.dispose()
