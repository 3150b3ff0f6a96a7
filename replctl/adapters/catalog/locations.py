"""Locations and their per-location metadata (rules.md M1, M5) in the catalog."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import case, func, null, select
from sqlalchemy.engine import Connection, Row

from replctl.adapters.catalog.dialect import LOCATIONS, insert
from replctl.core.model import Location, LocationState, Role
from replctl.core.vectortime import VectorTime


class LocationQueries:
    """The `locations` table, mapped to `Location`."""

    _conn: Connection
    _clock: Callable[[], datetime]

    def locations(self) -> list[Location]:
        """Every location ever added, retired ones included (M1: ids are never reused), by name."""
        rows = self._conn.execute(select(LOCATIONS).order_by(LOCATIONS.c.name))
        return [location_from_row(row) for row in rows]

    def location(self, name: str) -> Location | None:
        """The location called `name`, or None."""
        row = self._conn.execute(select(LOCATIONS).where(LOCATIONS.c.name == name)).one_or_none()
        return None if row is None else location_from_row(row)

    def put_location(self, location: Location) -> None:
        """Insert the location, or overwrite the metadata of the one with its name.

        `created_at` stays as first written; `retired_at` is set the first time the state is `retired`.
        """
        now = self._clock()
        retired = location.state is LocationState.RETIRED
        stmt = insert(self._conn, LOCATIONS).values(
            name=location.name,
            created_at=now,
            retired_at=now if retired else None,
            **_metadata(location),
        )
        retired_at = case(
            (
                stmt.excluded.state == LocationState.RETIRED.value,
                func.coalesce(LOCATIONS.c.retired_at, stmt.excluded.retired_at),
            ),
            else_=null(),
        )
        self._conn.execute(
            stmt.on_conflict_do_update(
                index_elements=[LOCATIONS.c.name],
                set_={**{key: stmt.excluded[key] for key in _metadata(location)}, "retired_at": retired_at},
            )
        )


def _metadata(location: Location) -> dict[str, Any]:
    return {
        "role": location.role.value,
        "state": location.state.value,
        "seq": location.seq,
        "cvv": location.cvv.to_dict(),
        "dvv": location.dvv.to_dict(),
        "baseline": location.baseline.to_dict(),
        "baseline_stored": location.baseline_stored.to_dict(),
        "deleted_upto": location.deleted_upto,
        "logical_deleted_upto": location.logical_deleted_upto,
        "clock_pruned": location.clock_pruned,
    }


def location_from_row(row: Row[Any]) -> Location:
    """A `locations` row as a `Location`."""
    return Location(
        name=row.name,
        role=Role(row.role),
        state=LocationState(row.state),
        seq=int(row.seq),
        cvv=VectorTime.parse(row.cvv),
        dvv=VectorTime.parse(row.dvv),
        deleted_upto=int(row.deleted_upto),
        logical_deleted_upto=int(row.logical_deleted_upto),
        baseline=VectorTime.parse(row.baseline),
        baseline_stored=VectorTime.parse(row.baseline_stored),
        clock_pruned=bool(row.clock_pruned),
    )
