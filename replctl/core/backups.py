"""Backups (rules.md BK1–BK3): manifests, incremental copies, choosing and pruning, recoverability. Pure.

A backup is a manifest plus the segment files it names. Segments are immutable, so a segment is stored once per
backup store under its log-store path and every manifest that lists it shares it (BK1, incremental by
construction). The manifest is written last: a backup without one does not exist.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from replctl.core import recovery as dr
from replctl.core.model import Connection, Location, LocationState, SegmentFile
from replctl.core.topology import TopologyState
from replctl.core.vectortime import EMPTY, VectorTime

MANIFEST_FORMAT = 1


@dataclass(frozen=True)
class BackupSegment:
    """One segment a backup holds: its log-store path (also its name in the backup store) and what it holds."""

    path: str
    seq_lo: int
    seq_hi: int
    count: int
    vt_lub: VectorTime
    bytes: int
    digest: str

    def to_json(self) -> dict[str, Any]:
        """The manifest's entry."""
        return {
            "path": self.path,
            "seq_lo": self.seq_lo,
            "seq_hi": self.seq_hi,
            "count": self.count,
            "vt_lub": self.vt_lub.to_dict(),
            "bytes": self.bytes,
            "digest": self.digest,
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> BackupSegment:
        """Read a manifest entry; KeyError/TypeError/ValueError on a malformed one."""
        return cls(
            str(doc["path"]),
            int(doc["seq_lo"]),
            int(doc["seq_hi"]),
            int(doc["count"]),
            VectorTime({str(k): int(v) for k, v in dict(doc["vt_lub"]).items()}),
            int(doc["bytes"]),
            str(doc["digest"]),
        )


def copy_damage(
    entry: BackupSegment, held: Mapping[str, int] | None, recorded: Sequence[SegmentFile] | None = None
) -> str | None:
    """Why the held copy of a manifest's segment entry is not whole, judged by file names and sizes only (no
    byte is read), or None when nothing shows: `held` is the copy's files as found (name -> size; None or
    empty: no copy), `recorded` the data files the segment's catalog row names, when it names them.

    What `backup create` checks before it reuses a copy (BK1: an incremental backup stays a stat per file),
    and what `backup verify` and a restore say before they compare digests: a lost file is "missing", not a
    digest that differs. A copy holds exactly the row's data files, so the manifest's `bytes` is their sum.
    """
    if not held:
        return "missing"
    for f in recorded or ():
        size = held.get(f.name)
        if size is None:
            return f"missing {f.name}"
        if size != f.size:
            return f"{f.name} holds {size} bytes, its catalog row {f.size}"
    total = sum(held.values())
    if total < entry.bytes:
        return f"missing files: the copy holds {total} of the {entry.bytes} bytes the manifest records"
    if total > entry.bytes:
        return f"the copy holds {total} bytes, the manifest records {entry.bytes}"
    return None


@dataclass(frozen=True)
class Manifest:
    """A backup of one location as of one catalog version (BK1)."""

    id: str
    location: str
    catalog_version: int
    seq: int
    cvv: VectorTime
    dvv: VectorTime
    deleted_upto: int
    logical_deleted_upto: int
    segments: tuple[BackupSegment, ...]
    replctl_version: str
    created_at: str  # ISO 8601, UTC
    who: str
    reason: str | None = None
    segments_reused: int = 0
    # Vectors merged into A's CVV without events (ADD3, --accept-loss): part of I3, so `backup verify` can
    # check the CVV against the stored events. None in a manifest written before it was recorded.
    baseline: VectorTime | None = None
    # The id of the catalog that made the backup (BK1): another catalog's backups share a backup store only by
    # mistake (a re-initialised home, a shared REPLCTL_BACKUP_STORE). None in a manifest written before it was
    # recorded (`of_catalog`).
    catalog_id: str | None = None

    @property
    def events(self) -> int:
        """Events the backup holds."""
        return sum(s.count for s in self.segments)

    @property
    def bytes(self) -> int:
        """Bytes of the segment files the backup names (shared ones included)."""
        return sum(s.bytes for s in self.segments)

    @property
    def last_seq(self) -> int:
        """The last seq the backup accounts for: A's last survivor once restored (DR2)."""
        return max([self.deleted_upto, *(s.seq_hi for s in self.segments)])

    @property
    def survivors_lub(self) -> VectorTime:
        """LUB of the vts of the events the backup holds (DR1's surviving events)."""
        return EMPTY.merge(*(s.vt_lub for s in self.segments))

    def summary(self) -> dict[str, Any]:
        """The `backup create|list --json` shape (cli.md)."""
        return {
            "id": self.id,
            "location": self.location,
            "created_at": self.created_at,
            "seq": self.seq,
            "events": self.events,
            "segments": len(self.segments),
            "segments_reused": self.segments_reused,
            "bytes": self.bytes,
            "cvv": self.cvv.to_dict(),
        }

    def to_json(self) -> dict[str, Any]:
        """The whole manifest as stored."""
        return {
            "format": MANIFEST_FORMAT,
            "id": self.id,
            "location": self.location,
            "catalog_version": self.catalog_version,
            "seq": self.seq,
            "cvv": self.cvv.to_dict(),
            "dvv": self.dvv.to_dict(),
            "deleted_upto": self.deleted_upto,
            "logical_deleted_upto": self.logical_deleted_upto,
            "segments": [s.to_json() for s in self.segments],
            "segments_reused": self.segments_reused,
            "replctl_version": self.replctl_version,
            "created_at": self.created_at,
            "who": self.who,
            "reason": self.reason,
            **({} if self.baseline is None else {"baseline": self.baseline.to_dict()}),
            **({} if self.catalog_id is None else {"catalog_id": self.catalog_id}),
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Manifest:
        """Read a stored manifest; KeyError/TypeError/ValueError on a malformed one."""
        if doc.get("format") != MANIFEST_FORMAT:
            raise ValueError(f"unknown manifest format {doc.get('format')!r}")

        def vector(value: Any) -> VectorTime:
            return VectorTime({str(k): int(v) for k, v in dict(value).items()})

        return cls(
            id=str(doc["id"]),
            location=str(doc["location"]),
            catalog_version=int(doc["catalog_version"]),
            seq=int(doc["seq"]),
            cvv=vector(doc["cvv"]),
            dvv=vector(doc["dvv"]),
            deleted_upto=int(doc["deleted_upto"]),
            logical_deleted_upto=int(doc["logical_deleted_upto"]),
            segments=tuple(BackupSegment.from_json(s) for s in doc["segments"]),
            replctl_version=str(doc["replctl_version"]),
            created_at=str(doc["created_at"]),
            who=str(doc["who"]),
            reason=None if doc.get("reason") is None else str(doc["reason"]),
            segments_reused=int(doc.get("segments_reused", 0)),
            baseline=vector(doc["baseline"]) if doc.get("baseline") is not None else None,
            catalog_id=None if doc.get("catalog_id") is None else str(doc["catalog_id"]),
        )


@dataclass(frozen=True)
class CatalogIdentity:
    """Which catalog is asking: its id, and the ids of the backups its journal says it made (read only when a
    manifest names no catalog)."""

    id: str
    journaled: frozenset[str] = frozenset()


def foreign_reason(manifest: Manifest, catalog: CatalogIdentity) -> str | None:
    """Why `manifest` is not a backup of `catalog`'s location of that name, or None when it is.

    A backup names the catalog that made it. A backup of another catalog describes another location, whose
    events hold identities this catalog gave to other events (M3): listed, counted by BK3 or restored (BK2), it
    passes another world's events off as this one's. A manifest written before backups named their catalog is
    this catalog's when its journal recorded making it (every `backup create` journals its backup's id); a copy
    of the catalog (`db backup`) keeps the journal, so it keeps its backups.
    """
    if manifest.catalog_id is not None:
        if manifest.catalog_id == catalog.id:
            return None
        return f"it was made by another catalog (id {manifest.catalog_id}; this catalog's is {catalog.id})"
    if manifest.id in catalog.journaled:
        return None
    return "it names no catalog, and this catalog's journal has no record of making it: another catalog's"


def of_catalog(manifests: Iterable[Manifest], catalog: CatalogIdentity) -> list[Manifest]:
    """The backups of `catalog` among `manifests` (`foreign_reason`), in the given order."""
    return [m for m in manifests if foreign_reason(m, catalog) is None]


def backup_id(location: str, created_at: datetime, suffix: str) -> str:
    """A backup's id: the location, the UTC time to the second and a random suffix; ids sort by time per location."""
    return f"{location}-{created_at.strftime('%Y%m%dT%H%M%SZ')}-{suffix}"


def age_order(manifest: Manifest) -> tuple[str, int, str]:
    """Backups from oldest to newest: by creation time, then by the catalog version they were taken at.

    The time has whole seconds and the id a random suffix: two backups of one location taken within one
    second are told apart by the catalog version (a later one has seen every change the earlier one saw),
    never by the suffix, which would make `latest` and `--keep-last` pick either of them.
    """
    return (manifest.created_at, manifest.catalog_version, manifest.id)


def holds_seqs(manifest: Manifest, runs: Iterable[tuple[int, int]]) -> bool:
    """Whether the backup's segments hold every seq of each run `(first, last)` of its location's log: a
    restore of it gives back the events those seqs named (BK2; DR1 never gives a seq to another event)."""
    held = sorted((s.seq_lo, s.seq_hi) for s in manifest.segments)
    for first, last in runs:
        wanted = first
        for lo, hi in held:
            if lo <= wanted <= hi:
                wanted = hi + 1
        if wanted <= last:
            return False
    return True


def newest(manifests: Iterable[Manifest], location: str) -> Manifest | None:
    """The newest backup of `location` (`age_order`), or None."""
    mine = [m for m in manifests if m.location == location]
    return max(mine, key=age_order) if mine else None


@dataclass(frozen=True)
class PruneDecision:
    """What `backup prune` removes: manifests, and the segment files no kept manifest names."""

    removed: tuple[Manifest, ...]
    kept: tuple[Manifest, ...]
    files: tuple[str, ...]


def prune(
    manifests: Iterable[Manifest],
    *,
    location: str | None,
    keep_last: int | None,
    older_than: timedelta | None,
    now: datetime,
    others: Iterable[Manifest] = (),
) -> PruneDecision:
    """Choose the backups to remove (per location: beyond the newest `keep_last`, or created before
    `now - older_than`) and the segment files only they name: a file a kept backup lists is never removed,
    nor one that `others` (backups this prune may not remove: another catalog's) list."""
    every = sorted(manifests, key=lambda m: (m.location, *age_order(m)))
    removed: list[Manifest] = []
    for loc in sorted({m.location for m in every}):
        if location is not None and loc != location:
            continue
        mine = [m for m in every if m.location == loc]
        if keep_last is not None:
            removed += mine[: max(0, len(mine) - keep_last)]
        if older_than is not None:
            cut = now - older_than
            removed += [m for m in mine if datetime.fromisoformat(m.created_at) < cut and m not in removed]
    kept = [m for m in every if m not in removed]
    used = {s.path for m in [*kept, *others] for s in m.segments}
    files = sorted({s.path for m in removed for s in m.segments} - used)
    return PruneDecision(tuple(removed), tuple(kept), tuple(files))


@dataclass(frozen=True)
class Recoverability:
    """BK3 for one location: `yes`, `no` with the shortfall, or `unknown` (a filtered terminal source, or a
    terminal location whose connection out was ever filtered)."""

    location: str
    state: str  # yes | no | unknown
    backup: str | None  # the newest backup the answer starts from
    shortfall: dict[str, tuple[int, int]] = field(default_factory=dict)  # origin -> (from, to) origin times
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The `status --json` shape (cli.md)."""
        return {
            "state": self.state,
            "backup": self.backup,
            "shortfall": {k: list(v) for k, v in sorted(self.shortfall.items())},
        }


def recoverability(
    state: TopologyState,
    location: Location,
    connections: Mapping[tuple[str, str], Connection],
    locations: Mapping[str, Location],
    backup: Manifest | None,
) -> Recoverability:
    """BK3: from V0 = CVV of the newest backup ⊔ A's baseline, DR4's rounds on paper over A's eligible
    sources (DR3) with their current DVVs and CVVs; recoverable iff the final vector ≥ CVV-A. A filtered
    terminal source, or own events after the backup behind a connection out that was ever filtered, make the
    answer depend on event contents: `unknown`, never a guess; but own events such a source certainly lacks
    make it `no`, with those as the shortfall."""
    name = location.name
    sources, _ = dr.eligible_sources(state, name, connections, dr.any_filter)
    backup_id_ = backup.id if backup else None
    # A loss keeps the baseline (permanent knowledge, e.g. ADD3 `current`'s history not held by design):
    # the recovery counts it as DR1 does (an entry over events A stored waits until they are back), so
    # it is part of V0 and of every round's vector; without it a source whose DVV the baseline covers
    # would fail DR4 on paper only.
    start = dr.with_baseline(location, backup.cvv if backup else EMPTY)
    if start[name] < location.cvv[name] and any((name, s.name) in state.ever_filtered for s in sources):
        # A terminal location's own events that A→N's filter ever left out are stored only at A (and in a
        # backup), yet CVV-N covers them once a later own event passes (EM1): whether the ones after the
        # backup are any depends on their contents.
        return Recoverability(name, "unknown", backup_id_, reason=f"{name}'s own events a filter kept (DR3)")
    vector = dr.plan_rounds(
        sources,
        {n: loc.dvv for n, loc in locations.items()},
        {n: loc.cvv for n, loc in locations.items()},
        start,
        name,
        counted=partial(dr.with_baseline, location),
    ).vector
    if any(s.filter is not None for s in sources):
        # What a filtered terminal source brings of other origins depends on their contents; its own part
        # (`origin = A`, every own event it stores, none filtered out above) is exact: a shortfall there is
        # certain, the rest unknown.
        own = shortfall(VectorTime({name: location.cvv[name]}), vector)
        if own:
            return Recoverability(name, "no", backup_id_, shortfall=own, reason="and other origins unknown")
        return Recoverability(name, "unknown", backup_id_, reason="a filtered terminal source (DR3)")
    if location.cvv <= vector:
        return Recoverability(name, "yes", backup_id_)
    return Recoverability(name, "no", backup_id_, shortfall=shortfall(location.cvv, vector))


def shortfall_text(shortfall: Mapping[str, Sequence[int]]) -> str:
    """A shortfall as operators read it: `A: 1..2, C: 4..4` (origin, first and last origin time lost)."""
    return ", ".join(f"{o}: {lo}..{hi}" for o, (lo, hi) in sorted(shortfall.items())) or "an unknown part"


def shortfall(cvv: VectorTime, reached: VectorTime) -> dict[str, tuple[int, int]]:
    """BK3's shortfall: per origin, the origin times after what `reached` covers, up to what `cvv` holds
    (also what a recovery reports as lost: the CVV before it against the one it reaches)."""
    return {k: (have + 1, want) for k, (want, have) in cvv.missing_from(reached).items()}


def recoverability_all(
    state: TopologyState,
    locations: Iterable[Location],
    connections: Iterable[Connection],
    manifests: Iterable[Manifest],
    active: Callable[[Location], bool],
) -> dict[str, Recoverability]:
    """BK3 for every active location, each from its newest backup."""
    by_name = {x.name: x for x in locations}
    conns = {c.key: c for c in connections}
    every = list(manifests)
    return {
        name: recoverability(state, loc, conns, by_name, newest(every, name))
        for name, loc in sorted(by_name.items())
        if active(loc)
    }


def made_unrecoverable(
    state: TopologyState,
    locations: Iterable[Location],
    connections: Iterable[Connection],
    manifests: Iterable[Manifest],
    *,
    deleting: str,
    dvv_after: VectorTime,
) -> list[Recoverability]:
    """BK4: the locations recoverable now that a physical deletion at `deleting`, leaving `dvv_after` as its
    DVV, would make not recoverable (or unknown), each with what it would then lack."""
    every, backups = list(locations), list(manifests)
    changed = [replace(x, dvv=x.dvv | dvv_after) if x.name == deleting else x for x in every]
    return _no_longer_recoverable(state, list(connections), (every, backups), (changed, backups))


def pruned_unrecoverable(
    state: TopologyState,
    locations: Iterable[Location],
    connections: Iterable[Connection],
    manifests: Iterable[Manifest],
    *,
    removing: Iterable[Manifest],
) -> list[Recoverability]:
    """BK3 for `backup prune`: the locations recoverable now that removing the backups `removing` would make
    not recoverable (or unknown), each with what it would then lack. BK3 starts from a location's newest
    backup, so only a prune that removes a newest backup can hurt."""
    every, backups = list(locations), list(manifests)
    gone = {m.id for m in removing}
    kept = [m for m in backups if m.id not in gone]
    return _no_longer_recoverable(state, list(connections), (every, backups), (every, kept))


def _no_longer_recoverable(
    state: TopologyState,
    connections: list[Connection],
    before: tuple[list[Location], list[Manifest]],
    after: tuple[list[Location], list[Manifest]],
) -> list[Recoverability]:
    """The active locations recoverable (BK3) in `before` (locations, backups) that are not in `after`."""

    def active(loc: Location) -> bool:
        return loc.state is LocationState.ACTIVE

    now = recoverability_all(state, before[0], connections, before[1], active)
    then = recoverability_all(state, after[0], connections, after[1], active)
    return [then[n] for n in sorted(then) if now[n].state == "yes" and then[n].state != "yes"]
