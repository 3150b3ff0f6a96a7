"""Alembic revisions against real catalogs: upgrade, drift check (`alembic check`), and the currency gate."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from replctl.adapters.catalog import migrate
from replctl.adapters.catalog.engine import make_engine
from replctl.adapters.catalog.repository import Catalog
from replctl.adapters.catalog.tables import metadata
from replctl.core.vectortime import VectorTime
from replctl.errors import CatalogOutdated, EnvironmentFailure


def _revision(url: str) -> str | None:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return migrate.current_revision(conn)
    finally:
        engine.dispose()


def test_upgrade_creates_every_table_and_records_the_head_revision(catalog_url: str) -> None:
    assert _revision(catalog_url) is None
    migrate.upgrade(catalog_url)
    engine = make_engine(catalog_url)
    try:
        with engine.connect() as conn:
            tables = set(inspect(conn).get_table_names())
    finally:
        engine.dispose()
    assert set(metadata.tables) | {migrate.VERSION_TABLE} == tables
    assert _revision(catalog_url) == migrate.head_revision()


def test_upgrading_a_current_catalog_changes_nothing(catalog_url: str) -> None:
    migrate.upgrade(catalog_url)
    migrate.upgrade(catalog_url)
    assert _revision(catalog_url) == migrate.head_revision()


def test_alembic_check_finds_no_drift_between_models_and_revisions(catalog_url: str) -> None:
    migrate.upgrade(catalog_url)
    assert migrate.check_drift(catalog_url) == []


def test_alembic_check_reports_a_catalog_that_differs_from_the_models(catalog_url: str) -> None:
    migrate.upgrade(catalog_url)
    engine = make_engine(catalog_url)
    try:
        with engine.begin() as conn:
            conn.execute(text("DROP INDEX ix_segments_location_seq"))
        diffs = migrate.check_drift(engine)
    finally:
        engine.dispose()
    assert [(diff[0], diff[1].name) for diff in diffs] == [("add_index", "ix_segments_location_seq")]


def test_the_code_expects_the_newest_revision_script() -> None:
    assert migrate.head_revision() == migrate.SCHEMA_HEAD


def test_a_catalog_at_head_passes_the_currency_check(catalog_url: str) -> None:
    migrate.upgrade(catalog_url)
    engine = make_engine(catalog_url)
    try:
        migrate.ensure_current(engine)
    finally:
        engine.dispose()


def test_a_catalog_downgraded_to_base_is_outdated_and_asks_for_db_upgrade(catalog_url: str) -> None:
    migrate.upgrade(catalog_url)
    migrate.downgrade(catalog_url, "base")
    engine = make_engine(catalog_url)
    try:
        with pytest.raises(CatalogOutdated) as caught:
            migrate.ensure_current(engine)
    finally:
        engine.dispose()
    assert caught.value.exit_code == 6
    assert caught.value.hint == "run: replctl db upgrade"


def test_a_catalog_stamped_at_an_older_revision_is_outdated(catalog_url: str) -> None:
    # Stands in for a catalog left behind by an older replctl: a version row naming a revision before head.
    migrate.upgrade(catalog_url)
    engine = make_engine(catalog_url)
    try:
        with engine.begin() as conn:
            conn.execute(text(f"DELETE FROM {migrate.VERSION_TABLE}"))
        with pytest.raises(CatalogOutdated, match=f"needs {migrate.SCHEMA_HEAD}"):
            migrate.ensure_current(engine)
        with pytest.raises(CatalogOutdated):
            migrate.check_drift(engine)
    finally:
        engine.dispose()


def test_a_catalog_from_a_newer_replctl_asks_to_upgrade_replctl_not_the_catalog(catalog_url: str) -> None:
    migrate.upgrade(catalog_url)
    engine = make_engine(catalog_url)
    try:
        with engine.begin() as conn:
            conn.execute(text(f"UPDATE {migrate.VERSION_TABLE} SET version_num = '9999'"))
        with pytest.raises(EnvironmentFailure) as caught:
            migrate.ensure_current(engine)
    finally:
        engine.dispose()
    assert not isinstance(caught.value, CatalogOutdated)
    assert caught.value.code == "catalog-newer"
    assert "9999" in caught.value.message


def test_an_empty_database_asks_for_replctl_init(catalog_url: str) -> None:
    engine = make_engine(catalog_url)
    try:
        with pytest.raises(EnvironmentFailure) as caught:
            migrate.ensure_current(engine)
    finally:
        engine.dispose()
    assert not isinstance(caught.value, CatalogOutdated)
    assert caught.value.exit_code == 6
    assert caught.value.hint == "run: replctl init"


def test_checking_and_using_a_current_catalog_does_not_import_alembic(sqlite_url: str) -> None:
    migrate.upgrade(sqlite_url)
    # A fresh interpreter: this one imported Alembic already.
    program = textwrap.dedent(
        f"""
        import sys
        from replctl.adapters.catalog.migrate import ensure_current
        from replctl.adapters.catalog.repository import Catalog

        with Catalog({sqlite_url!r}) as catalog:
            ensure_current(catalog.engine)
            with catalog.transaction() as tx:
                tx.locations()
        loaded = sorted(m for m in sys.modules if m == "alembic" or m.startswith("alembic."))
        assert not loaded, loaded
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        check=False,
        # The repository root, so replctl imports even where it is not installed.
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr


def _execute(url: str, sql: str, params: dict[str, str] | None = None) -> None:
    """One statement in its own transaction, on an engine of its own (the catalog's code is not the subject)."""
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text(sql), params or {})
    finally:
        engine.dispose()


def _insert_location(url: str, name: str, *, baseline: str) -> None:
    """A location row as the revisions before 0007 wrote it, CVV and DVV equal to its baseline."""
    _execute(
        url,
        "INSERT INTO locations (name, role, state, seq, cvv, dvv, baseline, deleted_upto, "
        "logical_deleted_upto, created_at) VALUES "
        "(:n, 'read-write', 'active', 3, :b, :b, :b, 0, 0, '2030-01-02 03:04:05+00:00')",
        {"n": name, "b": baseline},
    )


def _columns(url: str, table: str) -> list[str]:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return [c["name"] for c in inspect(conn).get_columns(table)]
    finally:
        engine.dispose()


def test_0006_keeps_the_deletions_waiting_at_0005_and_records_them_unguarded(catalog_url: str) -> None:
    # A catalog left by the previous revision, holding a deletion that waits (DEL4): the upgrade adds BK4's
    # flag without losing the request, which keeps false (its retries follow the policy, as at 0005).
    migrate.upgrade(catalog_url, "0005")
    _insert_location(catalog_url, "A", baseline="{}")
    _insert_location(catalog_url, "B", baseline="{}")
    _execute(
        catalog_url,
        "INSERT INTO pending_deletions (location, requested_upto, requested_at, blocked_by) "
        "VALUES ('A', 3, '2030-01-02 03:04:05+00:00', '[\"B\"]')",
    )
    assert "require_recoverable" not in _columns(catalog_url, "pending_deletions")
    migrate.upgrade(catalog_url)
    assert _revision(catalog_url) == migrate.SCHEMA_HEAD
    with Catalog(catalog_url) as catalog, catalog.transaction() as tx:
        found = tx.pending_deletion("A")
        assert found is not None
        assert (found.requested_upto, found.blocked_by, found.require_recoverable) == (3, ("B",), False)
        assert found.requested_at == datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
        tx.put_pending_deletion("B", 2, ["A"], require_recoverable=True)
    assert migrate.check_drift(catalog_url) == []
    # And back: the downgrade drops the flag and keeps both requests.
    migrate.downgrade(catalog_url, "0005")
    assert "require_recoverable" not in _columns(catalog_url, "pending_deletions")
    engine = make_engine(catalog_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                text("SELECT location, requested_upto FROM pending_deletions ORDER BY location")
            )
            assert [tuple(r) for r in rows] == [("A", 3), ("B", 2)]
    finally:
        engine.dispose()


def test_0007_keeps_the_baselines_of_0006_and_records_nothing_stored_under_them(catalog_url: str) -> None:
    # A location at 0006 with a baseline (an accepted loss, or ADD3): it keeps it, and `baseline_stored`
    # starts empty, so the entry counts in a later recovery as it did before (DR1).
    migrate.upgrade(catalog_url, "0006")
    _insert_location(catalog_url, "A", baseline='{"B": 4}')
    assert "baseline_stored" not in _columns(catalog_url, "locations")
    migrate.upgrade(catalog_url)
    assert _revision(catalog_url) == migrate.SCHEMA_HEAD
    with Catalog(catalog_url) as catalog, catalog.transaction() as tx:
        found = tx.location("A")
        assert found is not None
        assert (found.baseline.to_dict(), found.baseline_stored.to_dict()) == ({"B": 4}, {})
        tx.put_location(replace(found, baseline_stored=VectorTime({"B": 2})))
    with Catalog(catalog_url) as catalog, catalog.transaction() as tx:
        again = tx.location("A")
        assert again is not None and again.baseline_stored.to_dict() == {"B": 2}
    assert migrate.check_drift(catalog_url) == []
    migrate.downgrade(catalog_url, "0006")
    assert "baseline_stored" not in _columns(catalog_url, "locations")
    assert _revision(catalog_url) == "0006"


def _lineage(url: str) -> dict[int, str]:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT version, token FROM catalog_lineage"))
            return {int(version): str(token) for version, token in rows}
    finally:
        engine.dispose()


def test_0008_gives_the_version_a_catalog_of_0007_is_at_a_token_and_each_later_one_its_own(
    catalog_url: str,
) -> None:
    # A catalog at 0007 that changed a few times: its current version gets a token (a marker recording it later
    # compares like any other); the versions before it keep none (markers of then carry no token either).
    migrate.upgrade(catalog_url, "0007")
    _insert_location(catalog_url, "A", baseline="{}")
    _execute(catalog_url, "UPDATE catalog_state SET version = 5 WHERE id = 1")
    migrate.upgrade(catalog_url)
    assert _revision(catalog_url) == migrate.SCHEMA_HEAD
    seeded = _lineage(catalog_url)
    assert list(seeded) == [5] and len(seeded[5]) == 32
    with Catalog(catalog_url) as catalog:
        with catalog.transaction() as tx:
            found = tx.location("A")
            assert found is not None and found.seq == 3
            tx.put_location(replace(found, seq=4))
        with catalog.transaction(readonly=True) as tx:
            assert tx.catalog_version() == 6
            assert [tx.catalog_version_token(v) for v in (4, 5)] == [None, seeded[5]]
            assert tx.catalog_version_token(6) not in (None, seeded[5])
    assert migrate.check_drift(catalog_url) == []
    # And back: the lineage goes, the version and the location stay.
    migrate.downgrade(catalog_url, "0007")
    assert _revision(catalog_url) == "0007"
    engine = make_engine(catalog_url)
    try:
        with engine.connect() as conn:
            assert not engine.dialect.has_table(conn, "catalog_lineage")
            assert conn.execute(text("SELECT version FROM catalog_state")).scalar() == 6
            assert conn.execute(text("SELECT seq FROM locations WHERE name = 'A'")).scalar() == 4
    finally:
        engine.dispose()
