"""Connections source→target with their run-time state and progress(target, source) (REP2)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.engine import Connection as SqlConnection
from sqlalchemy.engine import Row

from replctl.adapters.catalog.dialect import CONNECTIONS, LOCATIONS, insert
from replctl.core.model import Connection, ConnectionState, HistoryMode


class ConnectionQueries:
    """The `connections` table, mapped to `Connection`."""

    _conn: SqlConnection
    _clock: Callable[[], datetime]

    def connections(self) -> list[Connection]:
        """Every connection ever made, removed ones included, by (source, target)."""
        rows = self._conn.execute(select(CONNECTIONS).order_by(CONNECTIONS.c.source, CONNECTIONS.c.target))
        return [connection_from_row(row) for row in rows]

    def connection(self, source: str, target: str, *, for_update: bool = False) -> Connection | None:
        """The connection source→target, or None.

        `for_update` locks the row until the transaction ends (PostgreSQL; SQLite's writer already holds the
        whole database), so that a compare-and-set on it cannot interleave with another writer.
        """
        query = select(CONNECTIONS).where(CONNECTIONS.c.source == source, CONNECTIONS.c.target == target)
        row = self._conn.execute(query.with_for_update() if for_update else query).one_or_none()
        return None if row is None else connection_from_row(row)

    def clear_stale_removed_progress(self) -> list[tuple[str, str]]:
        """See the module function of the same name (a repair run by `db upgrade`)."""
        return clear_stale_removed_progress(self._conn)

    def put_connection(self, connection: Connection) -> None:
        """Insert the connection, or overwrite the state of the existing source→target.

        `created_at` stays as first written; `updated_at` is now.
        """
        now = self._clock()
        state = {
            "state": connection.state.value,
            "filter": connection.filter,
            "ever_filtered": connection.ever_filtered,
            "history": connection.history.value,
            "progress": connection.progress,
            "reason": connection.reason,
            "updated_at": now,
        }
        stmt = insert(self._conn, CONNECTIONS).values(
            source=connection.source, target=connection.target, created_at=now, **state
        )
        self._conn.execute(
            stmt.on_conflict_do_update(
                index_elements=[CONNECTIONS.c.source, CONNECTIONS.c.target],
                set_={key: stmt.excluded[key] for key in state},
            )
        )


def connection_from_row(row: Row[Any]) -> Connection:
    """A `connections` row as a `Connection`."""
    return Connection(
        source=row.source,
        target=row.target,
        state=ConnectionState(row.state),
        filter=row.filter,
        ever_filtered=bool(row.ever_filtered),
        history=HistoryMode(row.history),
        progress=int(row.progress),
        reason=row.reason,
    )


def clear_stale_removed_progress(conn: SqlConnection) -> list[tuple[str, str]]:
    """Repair of catalogs written before rules.md DR2 named removed connections: clear (to 0) the progress
    of every removed connection that points past its source's seq; returns the (source, target) cleared.

    A recovery used to reset only current connections, so a removed connection from a recovered location
    kept a progress beyond that location's log, which `log verify` reports as I5. The progress of a removed
    connection decides nothing any more (a reconnect starts at 0, ADD4), so clearing it loses nothing.
    Idempotent; meant to run once from `db upgrade`, in its transaction.
    """
    source_seq = select(LOCATIONS.c.seq).where(LOCATIONS.c.name == CONNECTIONS.c.source).scalar_subquery()
    stale = (CONNECTIONS.c.state == ConnectionState.REMOVED.value) & (CONNECTIONS.c.progress > source_seq)
    rows = conn.execute(
        select(CONNECTIONS.c.source, CONNECTIONS.c.target)
        .where(stale)
        .order_by(CONNECTIONS.c.source, CONNECTIONS.c.target)
    ).all()
    if rows:
        conn.execute(update(CONNECTIONS).where(stale).values(progress=0))
    return [(row.source, row.target) for row in rows]
