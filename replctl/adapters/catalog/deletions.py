"""Physical deletions that wait for targets (rules.md DEL4)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import case, select
from sqlalchemy.engine import Connection, Row

from replctl.adapters.catalog.dialect import PENDING_DELETIONS, insert
from replctl.core.journal import PendingDeletion


class DeletionQueries:
    """The `pending_deletions` table (at most one per location), mapped to `PendingDeletion`."""

    _conn: Connection
    _clock: Callable[[], datetime]

    def pending_deletions(self) -> list[PendingDeletion]:
        """Every waiting deletion, by location."""
        rows = self._conn.execute(select(PENDING_DELETIONS).order_by(PENDING_DELETIONS.c.location))
        return [pending_from_row(row) for row in rows]

    def pending_deletion(self, location: str) -> PendingDeletion | None:
        """The waiting deletion of `location`, or None."""
        row = self._conn.execute(
            select(PENDING_DELETIONS).where(PENDING_DELETIONS.c.location == location)
        ).one_or_none()
        return None if row is None else pending_from_row(row)

    def put_pending_deletion(
        self,
        location: str,
        requested_upto: int,
        blocked_by: Iterable[str],
        *,
        require_recoverable: bool = False,
    ) -> None:
        """Record (or update) the deletion of `location` up to `requested_upto` waiting for `blocked_by`, and
        whether its retries are held to BK4 (`require_recoverable`).

        A retry that still waits keeps the original `requested_at`; a new `requested_upto` is a new request.
        """
        table = PENDING_DELETIONS
        stmt = insert(self._conn, table).values(
            location=location,
            requested_upto=requested_upto,
            requested_at=self._clock(),
            blocked_by=sorted(set(blocked_by)),
            require_recoverable=require_recoverable,
        )
        requested_at = case(
            (table.c.requested_upto == stmt.excluded.requested_upto, table.c.requested_at),
            else_=stmt.excluded.requested_at,
        )
        self._conn.execute(
            stmt.on_conflict_do_update(
                index_elements=[table.c.location],
                set_={
                    "requested_upto": stmt.excluded.requested_upto,
                    "blocked_by": stmt.excluded.blocked_by,
                    "require_recoverable": stmt.excluded.require_recoverable,
                    "requested_at": requested_at,
                },
            )
        )

    def clear_pending_deletion(self, location: str) -> bool:
        """Drop the waiting deletion of `location`; False when there was none."""
        result = self._conn.execute(
            PENDING_DELETIONS.delete().where(PENDING_DELETIONS.c.location == location)
        )
        return result.rowcount > 0


def pending_from_row(row: Row[Any]) -> PendingDeletion:
    """A `pending_deletions` row as a `PendingDeletion`."""
    return PendingDeletion(
        location=row.location,
        requested_upto=int(row.requested_upto),
        blocked_by=tuple(row.blocked_by or ()),
        requested_at=row.requested_at,
        require_recoverable=bool(row.require_recoverable),
    )
