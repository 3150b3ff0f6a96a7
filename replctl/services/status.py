"""`replctl status`: locations, connections with progress and lag, pending deletions, warnings."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from replctl.core import deletion as plan
from replctl.core.backups import Manifest, Recoverability, recoverability_all
from replctl.core.damage import SegmentDamage
from replctl.core.journal import PendingDeletion
from replctl.core.model import Connection, Location, LocationState, Segment, Violation
from replctl.core.outcomes import AllOrNothing
from replctl.core.topology_rules import validate as validate_state
from replctl.core.vectortime import VectorTime
from replctl.services.ports import Catalog, LogStore
from replctl.services.views import connection_json, location_json


def _lag(segments: list[Segment], progress: int, held: VectorTime | None = None) -> int:
    """Events stored at the source past the target's progress (from segment counts, no scan).

    A segment that the progress cuts through counts with the part above the cut estimated from its seq range;
    exact whenever progress sits on a segment boundary, which it does unless a pass blocked mid-segment. A
    segment whose LUB the target's CVV (`held`) covers is no lag: the pass skips all of it as held already (CF1),
    as it does with the events a recovery got back from that very target.
    """
    lag = 0
    for seg in segments:
        if held is not None and seg.vt_lub <= held:
            continue
        if seg.seq_lo > progress:
            lag += seg.count
        elif seg.seq_hi > progress:
            span = seg.seq_hi - seg.seq_lo + 1
            lag += round(seg.count * (seg.seq_hi - progress) / span)
    return lag


@dataclass(frozen=True)
class LocationStatus:
    """One location as `status` shows it: its state as the census sees it (DR0) and whether its newest backup
    restores it (BK3)."""

    location: Location
    damage: list[SegmentDamage] | None  # None: not looked for (no store given, or a retired location)
    recoverable: Recoverability | None  # None: no answer for it (only active locations have one)
    backups_read: bool  # False: the backup store could not be read, so the answer is `unknown`

    def to_json(self) -> dict[str, Any]:
        """The location's entry in `status --json`."""
        view = location_json(self.location, self.damage)
        if self.recoverable is None:
            view["recoverable"] = None
        elif not self.backups_read:
            view["recoverable"] = {"state": "unknown", "backup": None, "shortfall": {}}
        else:
            view["recoverable"] = self.recoverable.to_json()
        return view


@dataclass(frozen=True)
class ConnectionStatus:
    """One connection as `status` shows it, with how many stored events its target still lacks."""

    connection: Connection
    lag: int

    def to_json(self) -> dict[str, Any]:
        """The connection's entry in `status --json`: the `topology show` view plus progress, lag, reason."""
        c = self.connection
        return {**connection_json(c), "progress": c.progress, "lag": self.lag, "reason": c.reason}


@dataclass(frozen=True)
class StatusView(AllOrNothing):
    """`replctl status`: every location and connection, the pending deletions and the ROLE2 warnings."""

    locations: list[LocationStatus]
    connections: list[ConnectionStatus]
    pending: list[PendingDeletion]
    warnings: list[Violation]

    def to_json(self) -> dict[str, Any]:
        """The `status --json` document (cli.md)."""
        from replctl.services.topology_state import violation_json

        return {
            "ok": True,
            "locations": [loc.to_json() for loc in self.locations],
            "connections": [c.to_json() for c in self.connections],
            "pending_deletions": [
                {
                    "location": p.location,
                    "requested_upto": p.requested_upto,
                    # One shape for `blocked_by` in every document (issue 18): `delete --json`'s objects. Who
                    # holds the deletion back now (DEL4, `holders_now`), not from which seq: that needs the
                    # log, which status does not read, so `first_blocked_seq` is null here.
                    "blocked_by": [{"target": t, "first_blocked_seq": None} for t in p.blocked_by],
                }
                for p in self.pending
            ],
            "warnings": [violation_json(v) for v in self.warnings],
            "matrix": version_matrix([x.location for x in self.locations if not x.location.retired]),
        }


def status(
    catalog: Catalog,
    store: LogStore | None = None,
    *,
    manifests: Sequence[Manifest] | None = None,
    require_recoverable: bool = False,
) -> StatusView:
    """`status` with the ROLE2 warnings, and BK3 for every active location.

    With the `store`, every live location's log goes through the census (names and sizes, no data read) and
    a damaged one shows `damaged` (DR0) with the segments concerned. `manifests` are the backup store's
    backups; None when it could not be read, which makes every answer `unknown` rather than a guess.
    `require_recoverable`: the catalog policy (BK4), under which a retried deletion waits for what it would
    leave unrecoverable (`holders_now`).
    """
    from replctl.services.damage import find_damage
    from replctl.services.topology_state import load_state

    with catalog.transaction(readonly=True) as tx:
        locations = tx.locations()
        connections = tx.connections()
        segments = {loc.name: tx.segments(loc.name) for loc in locations}
        pending = tx.pending_deletions()
        state = load_state(tx)
    damage = {
        loc.name: find_damage(store, segments[loc.name]) if store and not loc.retired else None
        for loc in locations
    }
    recoverable = recoverability_all(
        state, locations, connections, manifests or (), lambda x: x.state is LocationState.ACTIVE
    )
    cvvs = {loc.name: loc.cvv for loc in locations}
    return StatusView(
        locations=[
            LocationStatus(
                loc,
                damage[loc.name],
                recoverable.get(loc.name),
                backups_read=manifests is not None,
            )
            for loc in locations
        ],
        connections=[
            ConnectionStatus(
                c, _lag(segments.get(c.source, []), c.progress, cvvs.get(c.target)) if c.current else 0
            )
            for c in connections
        ],
        pending=[
            holders_now(p, locations, connections, segments, damage, policy=require_recoverable)
            for p in pending
        ],
        warnings=[v for v in validate_state(state) if v.warning],
    )


def holders_now(
    pending: PendingDeletion,
    locations: list[Location],
    connections: list[Connection],
    segments: dict[str, list[Segment]],
    damage: dict[str, list[SegmentDamage] | None],
    *,
    policy: bool = False,
) -> PendingDeletion:
    """The pending deletion with the targets that hold it back now (DEL3/DEL4), from the catalog alone.

    The recorded `blocked_by` is who held it back when it was last decided; a topology change since (a
    `topology failover` or `remove` from the source, a target retired) may have removed those connections and
    added others, which the record never names. Now, a target holds it back unless DEL3 clears it from the
    catalog (its progress past the request, or its CVV covering every segment at stake), as `delete` decides
    before any scan; a damaged target holds back everything (DR0). Status reads no log, so a target only
    the scan would clear is named too: the report errs towards a target that may hold it back, never one
    that is gone. Under BK4's guard (the request's `require_recoverable`, or the catalog `policy`) a retry
    also waits for what it would leave unrecoverable, which status cannot decide without the deletion's
    plan: the recorded holders that are still targets (and, for a request asked under the guard, still
    active) are kept then, and only then: without the guard, a recorded target the catalog clears since is
    not named (the next replicate completes the deletion).
    """
    by_name = {loc.name: loc for loc in locations}
    loc = by_name.get(pending.location)
    if loc is None:
        return pending
    targets = plan.current_targets(loc.name, connections, by_name)
    cut_bound = plan.bound(loc, pending.requested_upto)
    unclear = {t.name for t in plan.targets_to_scan(targets, segments[loc.name], loc.deleted_upto, cut_bound)}
    holders = {t.name for t in targets if t.name in unclear or damage.get(t.name)}
    kept: set[str] = set()
    if pending.require_recoverable or policy:
        kept = {t.name for t in targets}
    if pending.require_recoverable:
        kept |= {x.name for x in locations if x.state is LocationState.ACTIVE}
    holders |= {h for h in pending.blocked_by if h in kept}
    return replace(pending, blocked_by=tuple(sorted(holders)))


def version_matrix(locations: list[Location]) -> dict[str, Any]:
    """The replication update vector view: per location and origin, the max seen and the deleted prefix.

    Everything of origin o up to DVV[o] is gone from that log (a stored event below a deleted one would precede
    it, EM3, and be deleted too), so `deleted` is where the log's own copy of o's events starts.
    """
    origins = sorted({k for loc in locations for k in loc.cvv})
    return {
        "origins": origins,
        "rows": {
            loc.name: {o: {"max": loc.cvv[o], "deleted": loc.dvv[o]} for o in origins} for loc in locations
        },
    }
