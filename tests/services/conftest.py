"""The service tier: the same stories through the services over two data planes (tests/services/test_*.py).

`plane` is the in-memory fake (tests/fakes, no JVM) or the real Spark adapter (`adapters.dataplane.Engine` on
the run's shared local session); `backups` the in-memory backup store of the fake plane's store, or the real
one (`adapters.logbackups.LogBackups` over a backup-store folder) of the real plane's; the catalog is the real
SQLite catalog in a temporary file for both. A dict catalog would be a second implementation of the catalog
schema and of its transaction rules (fencing, the catalog version), which the catalog contract suite already
checks against SQLite and PostgreSQL; SQLite needs no server and no JVM, so the fake tier stays fast with the
real catalog.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.backupstore import FakeBackupStore
from fakes.dataplane import FakeDataPlane, FakeStore
from shared_engine import SharedSessionEngine

from replctl.adapters.backupstore import BackupStore
from replctl.adapters.catalog import migrate
from replctl.adapters.catalog.repository import Catalog
from replctl.adapters.dataplane import Engine
from replctl.adapters.logbackups import LogBackups
from replctl.adapters.logstore import LogStore
from replctl.config import DEFAULT_LOCAL_LIMIT
from replctl.services import ports
from replctl.services.ports import DataPlane


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[Catalog]:
    """An empty catalog migrated to head, in a SQLite file of its own."""
    url = f"sqlite:///{tmp_path / 'catalog.db'}"
    migrate.upgrade(url)
    with Catalog(url) as opened:
        yield opened


@pytest.fixture(
    params=[
        "fake",
        pytest.param("spark", marks=pytest.mark.spark),
        pytest.param("local", marks=pytest.mark.spark),
    ]
)
def plane(request: pytest.FixtureRequest, tmp_path: Path) -> DataPlane:
    """The data plane a story runs on: the fake, or the real one (the contract side) with every job on Spark
    ("spark"), or with small work done without Spark as commands do by default ("local": the local pass and
    append writer, `config.DEFAULT_LOCAL_LIMIT`)."""
    if request.param == "fake":
        return FakeDataPlane()
    store = LogStore(tmp_path / "logs")
    store.create_root()
    limit = DEFAULT_LOCAL_LIMIT if request.param == "local" else 0
    return SharedSessionEngine(store, request.getfixturevalue("spark"), tmp_path / "home", local_limit=limit)


@pytest.fixture
def backups(plane: DataPlane, tmp_path: Path) -> ports.BackupStore:
    """The backup store of `plane`'s log store: the in-memory fake with the fake plane, else the real one, whose
    copies are read by a real data plane on the shared session."""
    if isinstance(plane, FakeDataPlane):
        assert isinstance(plane.store, FakeStore)
        return FakeBackupStore(plane.store)
    assert isinstance(plane, SharedSessionEngine)
    session, home = plane.spark(), tmp_path / "home"
    assert isinstance(plane.store, LogStore)

    def reader(copies: LogStore) -> Engine:
        return SharedSessionEngine(copies, session, home, local_limit=plane.settings.local_limit)

    return LogBackups(BackupStore(tmp_path / "backups"), plane.store, reader)
