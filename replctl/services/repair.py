"""Giving catalogs pruned before RET4 their identities back (run by `replctl db upgrade`).

An earlier replctl pruned a retired id Z from every CVV, DVV and baseline as well as from the vts, so a location
added later took Z's events for its causal past and never received them, and segment rows lost Z from their
LUBs. Rules RET2 and RET4 keep Z in every vector and ask coverage through the identity (origin, origin_time).

The repair finds those prunings in the journal (a `location retire --prune-clock` operation with the step
`prune-vectors`), reads the identity columns of every stored segment (names and two columns: cheap), restores
each segment row's LUB and each location's vectors (`core.retirement.restored_location`), and records Z as
pruned, all in one transaction under every lease. It is idempotent: a catalog with nothing to repair is left
untouched, without reading the store.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from replctl.core.model import Location
from replctl.core.retirement import LegacyPrune, restored_location
from replctl.errors import EnvironmentFailure
from replctl.services.operations import TOPOLOGY, OperationContext, location_resource, operation
from replctl.services.ports import Catalog, CatalogTransaction, LogStore

LEGACY_PRUNE_COMMAND = "location retire --prune-clock"
LEGACY_PRUNE_STEP = "prune-vectors"


@dataclass(frozen=True)
class IdentityRepair:
    """What `repair_pruned_identities` restored: the pruned ids given back, the locations whose vectors changed
    and how many segment rows got their LUB back (all empty when there was nothing to repair)."""

    repaired: tuple[str, ...] = ()
    locations: tuple[str, ...] = ()
    segments: int = 0


def legacy_prunes(tx: CatalogTransaction, locations: list[Location]) -> list[LegacyPrune]:
    """The prunings whose vectors lost Z (journalled `prune-vectors`) and that are not yet repaired."""
    found = []
    for loc in locations:
        if not loc.retired or loc.clock_pruned:
            continue
        for op in tx.find_operations(LEGACY_PRUNE_COMMAND, {"name": loc.name}):
            step = next((s for s in op.steps if s.name == LEGACY_PRUNE_STEP), None)
            if step is not None:
                spread = frozenset(str(n) for n in step.detail.get("locations", []))
                found.append(LegacyPrune(loc.name, int(op.plan.get("needed", 0)), spread))
                break
    return found


def repair_pruned_identities(catalog: Catalog, store: LogStore) -> IdentityRepair:
    """Restore what legacy prunings dropped (`IdentityRepair`)."""
    with catalog.transaction(readonly=True) as tx:
        locations = tx.locations()
        prunes = legacy_prunes(tx, locations)
    if not prunes:
        return IdentityRepair()
    if not store.is_local:
        raise EnvironmentFailure(
            f"the catalog holds clock prunings of {', '.join(p.name for p in prunes)} made before this release; "
            "giving them their identities back reads the log store, which is only done on a local store",
            code="store",
            hint="run `replctl db upgrade` where the store is a local path (or mounted as one)",
        )

    def body(ctx: OperationContext) -> IdentityRepair:
        origins = sorted(p.name for p in prunes)
        # The store is read first, from a read-only snapshot: reading every segment under the catalog's write
        # lock would hold every other operator's write off for as long. The leases keep the logs as read; the
        # writing transaction checks that they are.
        with ctx.transaction(readonly=True) as tx:
            read = {loc.name: [s.path for s in tx.segments(loc.name)] for loc in tx.locations()}
            segments = [s for loc in tx.locations() for s in tx.segments(loc.name)]
        extents = {seg.path: store.identity_extent(seg, origins) for seg in segments}
        changed_locations, changed_segments = [], 0
        with ctx.transaction() as tx:
            for loc in tx.locations():
                if [s.path for s in tx.segments(loc.name)] != read.get(loc.name, []):
                    raise EnvironmentFailure(
                        f"{loc.name}'s log changed while the repair read it; nothing was changed",
                        code="concurrent-change",
                        hint="re-run: replctl db upgrade",
                    )
                stored: dict[str, tuple[int, int]] = {}
                for seg in tx.segments(loc.name):
                    extent = extents[seg.path]
                    lub = seg.vt_lub.merge({z: hi for z, (_lo, hi) in extent.items()})
                    if lub != seg.vt_lub:
                        tx.set_segment_lub(seg.id, lub)
                        changed_segments += 1
                    for z, (lo, hi) in extent.items():
                        before = stored.get(z, (lo, hi))
                        stored[z] = (min(before[0], lo), max(before[1], hi))
                after = restored_location(loc, prunes, stored)
                if after.name in origins:
                    after = replace(after, clock_pruned=True)
                if after != loc:
                    tx.put_location(after)
                    changed_locations.append(loc.name)
            ctx.step(
                tx,
                "repair-identities",
                {"pruned": origins, "locations": changed_locations, "segments": changed_segments},
            )
        return IdentityRepair(tuple(origins), tuple(changed_locations), changed_segments)

    with catalog.transaction(readonly=True) as tx:
        everyone = [loc.name for loc in tx.locations()]
    return operation(
        catalog,
        command="db repair-identities",
        args={},
        reason="restore the vector entries of clock prunings made before RET4",
        resources=[TOPOLOGY, *(location_resource(n) for n in everyone)],
        dry_run=False,
        body=body,
    )
