"""The append-only topology history (rules.md H1)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.engine import Connection, Row

from replctl.adapters.catalog.dialect import CHANGES
from replctl.core.model import Change, ChangeKind, HistoryMode, Role

# Group changes name their members in a JSON list, which SQL cannot filter the same way on both backends.
_GROUP_KINDS = (ChangeKind.GROUP_DECLARED.value, ChangeKind.GROUP_REMOVED.value)


class HistoryQueries:
    """The `topology_changes` table, mapped to `Change`; rows are only ever added."""

    _conn: Connection
    _clock: Callable[[], datetime]

    def changes(self, location: str | None = None) -> list[Change]:
        """The recorded changes in the order they were recorded (by id).

        With `location`, only the changes that name it: as the location, a connection end, a fail-over
        end, or a member of a declared group.
        """
        query = select(CHANGES).order_by(CHANGES.c.id)
        if location is not None:
            query = query.where(
                or_(
                    CHANGES.c.location == location,
                    CHANGES.c.source == location,
                    CHANGES.c.target == location,
                    CHANGES.c.failover_from == location,
                    CHANGES.c.failover_to == location,
                    CHANGES.c.kind.in_(_GROUP_KINDS),
                )
            )
        found = [change_from_row(row) for row in self._conn.execute(query)]
        if location is None:
            return found
        return [change for change in found if location in _names(change)]

    def record_change(
        self, change: Change, *, actor: str | None, reason: str | None, operation_id: str | None
    ) -> Change:
        """Append `change`; returns it with its id, time (ISO 8601, UTC), actor, reason and operation."""
        at = self._clock()
        new_id = self._conn.execute(
            CHANGES.insert()
            .values(
                kind=change.kind.value,
                location=change.location,
                role=change.role.value if change.role is not None else None,
                source=change.source,
                target=change.target,
                filter=change.filter,
                history=change.history.value if change.history is not None else None,
                group_name=change.group,
                members=list(change.members),
                failover_from=change.failover_from,
                failover_to=change.failover_to,
                at=at,
                actor=actor,
                reason=reason,
                operation_id=operation_id,
            )
            .returning(CHANGES.c.id)
        ).scalar_one()
        return dataclasses.replace(
            change, id=int(new_id), at=at.isoformat(), actor=actor, reason=reason, operation=operation_id
        )


def _names(change: Change) -> set[str | None]:
    return {
        change.location,
        change.source,
        change.target,
        change.failover_from,
        change.failover_to,
        *change.members,
    }


def change_from_row(row: Row[Any]) -> Change:
    """A `topology_changes` row as a `Change`."""
    at: datetime = row.at
    return Change(
        kind=ChangeKind(row.kind),
        location=row.location,
        role=Role(row.role) if row.role is not None else None,
        source=row.source,
        target=row.target,
        filter=row.filter,
        history=HistoryMode(row.history) if row.history is not None else None,
        group=row.group_name,
        members=tuple(row.members or ()),
        failover_from=row.failover_from,
        failover_to=row.failover_to,
        id=int(row.id),
        at=at.isoformat(),
        actor=row.actor,
        reason=row.reason,
        operation=row.operation_id,
    )
