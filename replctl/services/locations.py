"""Reading locations for `replctl location list|show`: the catalog queries live here, not in the CLI."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from replctl.services.lookup import get_location

if TYPE_CHECKING:
    from replctl.core.damage import SegmentDamage
    from replctl.core.model import Connection, Location, Segment
    from replctl.services.ports import Catalog, LogStore


@dataclass(frozen=True)
class LocationDetail:
    """One location with the connections into and out of it, its segments and what the census found."""

    location: Location
    connections: list[Connection]
    segments: list[Segment]
    damage: list[SegmentDamage] | None  # None: not looked for (a retired location has no log to check)


def all_locations(catalog: Catalog) -> list[Location]:
    """Every location, retired ones included (a read: no write lock)."""
    with catalog.transaction(readonly=True) as tx:
        return tx.locations()


def location_detail(catalog: Catalog, name: str, store: Callable[[], LogStore]) -> LocationDetail:
    """The location `name` (exit 2 if unknown) and its damage as the census sees it (DR0).

    `store` is called only for a location that is not retired, so showing a retired one needs no log store.
    """
    from replctl.services.damage import find_damage

    with catalog.transaction(readonly=True) as tx:
        loc = get_location(tx, name)
        conns = [c for c in tx.connections() if name in (c.source, c.target)]
        segments = tx.segments(name)
    damage = None if loc.retired else find_damage(store(), segments)
    return LocationDetail(loc, conns, segments, damage)
