"""Reading locations for `replctl location list|show`: the catalog queries live here, not in the CLI."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from replctl.core.outcomes import AllOrNothing
from replctl.services.lookup import get_location
from replctl.services.views import location_json

if TYPE_CHECKING:
    from replctl.core.damage import SegmentDamage
    from replctl.core.model import Connection, Location, Segment
    from replctl.services.ports import Catalog, LogStore


@dataclass(frozen=True)
class AllLocations(AllOrNothing):
    """`location list`: every location, retired ones included."""

    locations: list[Location]

    def to_json(self) -> dict[str, Any]:
        """`location list --json` (cli.md): each location as `status --json` shows it, without the census."""
        return {"ok": True, "locations": [location_json(loc) for loc in self.locations]}


@dataclass(frozen=True)
class LocationDetail(AllOrNothing):
    """One location with the connections into and out of it, its segments and what the census found."""

    location: Location
    connections: list[Connection]
    segments: list[Segment]
    damage: list[SegmentDamage] | None  # None: not looked for (a retired location has no log to check)

    def to_json(self) -> dict[str, Any]:
        """`location show --json` (cli.md): the location as `status --json` shows it (`damaged` when the
        census found damage, DR0), its connections with their progress, and its segments."""
        return {
            "ok": True,
            **location_json(self.location, self.damage),
            "connections": [
                {
                    "source": c.source,
                    "target": c.target,
                    "state": c.state.value,
                    "filter": c.filter,
                    "progress": c.progress,
                }
                for c in self.connections
            ],
            "segments": [
                {"path": s.path, "seq_lo": s.seq_lo, "seq_hi": s.seq_hi, "count": s.count}
                for s in self.segments
            ],
        }


def all_locations(catalog: Catalog) -> AllLocations:
    """Every location, retired ones included (a read: no write lock)."""
    with catalog.transaction(readonly=True) as tx:
        return AllLocations(tx.locations())


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
