"""The catalog as the services use it: `Catalog` opens transactions; `CatalogTransaction` reads and writes.

Each query family lives in a module named after what it holds (locations, connections, history, segments,
deletions, journal, leases); `CatalogTransaction` combines them over one SQL transaction, so that one
operation step's state changes, its journal entry and its fencing check commit together or not at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from types import TracebackType

from sqlalchemy import Engine
from sqlalchemy.engine import URL, Connection

from replctl.adapters.catalog.connections import ConnectionQueries
from replctl.adapters.catalog.deletions import DeletionQueries
from replctl.adapters.catalog.engine import (
    SQLITE_DEFERRED,
    make_engine,
    safe_url,
    take_write_lock,
    translate_errors,
)
from replctl.adapters.catalog.history import HistoryQueries
from replctl.adapters.catalog.journal import JournalQueries
from replctl.adapters.catalog.leases import LeaseQueries, holder_name
from replctl.adapters.catalog.locations import LocationQueries
from replctl.adapters.catalog.segments import SegmentQueries
from replctl.adapters.catalog.version import VersionQueries, start_tracking, track_state_writes, wrote_state

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The current time, timezone-aware UTC (the catalog stores nothing else)."""
    return datetime.now(UTC)


class CatalogTransaction(
    LocationQueries,
    ConnectionQueries,
    HistoryQueries,
    SegmentQueries,
    DeletionQueries,
    JournalQueries,
    LeaseQueries,
    VersionQueries,
):
    """Typed reads and writes inside one SQL transaction (obtained from `Catalog.transaction`)."""

    def __init__(self, conn: Connection, clock: Clock) -> None:
        self._conn = conn
        self._clock = clock


class Catalog:
    """The catalog database at a URL (SQLite file or PostgreSQL); the only way services reach it."""

    def __init__(self, url: str | URL | Engine, *, clock: Clock = utc_now) -> None:
        """Open (lazily: nothing connects yet) the catalog at `url`, or wrap an existing engine.

        `clock` gives every time the catalog records; tests pass a controllable one.
        """
        if isinstance(url, Engine):
            self._engine, self._owned = url, False
        else:
            self._engine, self._owned = make_engine(url), True
        # The catalog version is kept here, for every writer at once (adapters.catalog.version).
        track_state_writes(self._engine)
        self._clock = clock

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (for migrations and `ensure_current`)."""
        return self._engine

    @property
    def clock(self) -> Clock:
        """The clock that gives every time this catalog records."""
        return self._clock

    @property
    def url(self) -> str:
        """The catalog's URL with the password masked, for messages."""
        return safe_url(self._engine.url)

    @contextmanager
    def transaction(self, *, readonly: bool = False) -> Iterator[CatalogTransaction]:
        """One SQL transaction: commits when the block ends normally, rolls back when it raises.

        Database errors inside the block become `EnvironmentFailure` (exit 6). `readonly` transactions see
        one consistent snapshot and never wait for a writer on SQLite; on PostgreSQL they run REPEATABLE
        READ, READ ONLY. Writing transactions are serialised on both (`engine.take_write_lock`). Do not open
        one writing transaction inside another: the outer one holds the catalog's write lock from its start,
        so the inner one would wait for it until the busy timeout and fail.

        A transaction that wrote to a state table raises the catalog version by one just before it commits
        (`CatalogTransaction.catalog_version`; see `adapters.catalog.version`).
        """
        with translate_errors(self._engine.url), self._engine.connect() as conn:
            if readonly:
                if conn.dialect.name == "postgresql":
                    conn.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
                else:
                    conn.execution_options(**{SQLITE_DEFERRED: True})
            start_tracking(conn)
            with conn.begin():
                if not readonly:
                    take_write_lock(conn)
                tx = CatalogTransaction(conn, self._clock)
                yield tx
                if wrote_state(conn):
                    tx.bump_catalog_version()

    def reopen(self) -> Catalog:
        """The same catalog on an engine of its own (a pooled SQLite connection may not move between
        threads); close it when done (it is a context manager)."""
        return Catalog(self._engine.url, clock=self._clock)

    def holder_name(self, user: str) -> str:
        """The lease holder string of this process for `user` (`adapters.catalog.leases.holder_name`)."""
        return holder_name(user)

    def close(self) -> None:
        """Close the pooled connections (of an engine this catalog created)."""
        if self._owned:
            self._engine.dispose()

    def __enter__(self) -> Catalog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Catalog({self.url!r})"
