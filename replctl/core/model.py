"""Domain types shared by the core, the services and the adapters (rules.md §1).

All are frozen dataclasses: the core computes new values, it never mutates a snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from replctl.core.vectortime import EMPTY, VectorTime


class Role(StrEnum):
    """M1 roles (from the Kanidm design)."""

    READ_WRITE = "read-write"
    HUB = "hub"
    READ_ONLY = "read-only"


class LocationState(StrEnum):
    """Lifecycle of a location; `recovering` refuses appends (DR0)."""

    ACTIVE = "active"
    RETIRED = "retired"
    RECOVERING = "recovering"


class ConnectionState(StrEnum):
    """Run-time state of a connection X→Y."""

    PENDING = "pending"  # ADD1: waits until DVV-X ≤ CVV-Y
    ACTIVE = "active"
    BLOCKED = "blocked"  # DR5: would be event recovery in disguise
    FAILED = "failed"  # its filter failed when a pass ran it; the next pass or a new filter retries it
    REMOVED = "removed"


class HistoryMode(StrEnum):
    """ADD3 history modes of a connection into a location."""

    COMPLETE = "complete"
    CURRENT = "current"
    NONE = "none"


@dataclass(frozen=True)
class Location:
    """A location and its per-location metadata (M5)."""

    name: str
    role: Role = Role.READ_WRITE
    state: LocationState = LocationState.ACTIVE
    seq: int = 0
    cvv: VectorTime = EMPTY
    dvv: VectorTime = EMPTY
    deleted_upto: int = 0
    logical_deleted_upto: int = 0
    # Vectors merged into CVV without events (ADD3 modes, --accept-loss); part of invariant I3.
    baseline: VectorTime = EMPTY
    # Per origin, what the location stored of it when a baseline entry was merged (`--accept-loss`, a parked
    # clock entry): such an entry covers those events by its number alone, so a later loss holds it back
    # until they are back (core.recovery.with_baseline).
    baseline_stored: VectorTime = EMPTY
    # RET2: this (retired) location's id was pruned from every vt; new vts leave it out (EM1).
    clock_pruned: bool = False

    @property
    def retired(self) -> bool:
        """True once retired (RET1); its id is never reused (M1)."""
        return self.state is LocationState.RETIRED


@dataclass(frozen=True)
class Connection:
    """A uni-directional replication connection source→target with its run-time state."""

    source: str
    target: str
    state: ConnectionState = ConnectionState.PENDING
    filter: str | None = None  # normalised filter expression, None = unfiltered
    ever_filtered: bool = False  # H3
    history: HistoryMode = HistoryMode.COMPLETE
    progress: int = 0  # progress(target, source): last examined seq of the source (REP2)
    reason: str | None = None  # why it waits or is blocked

    @property
    def key(self) -> tuple[str, str]:
        """(source, target)."""
        return (self.source, self.target)

    @property
    def current(self) -> bool:
        """Not removed: active, pending or blocked (DEL3's "current target")."""
        return self.state is not ConnectionState.REMOVED


@dataclass(frozen=True)
class SegmentFile:
    """One data file of a segment as it was written: what readers read and compare with (issue 19).

    `size` is checked by the census (core.damage) without reading; `rows` and the seq range let a read, a
    recovery and `log verify` compare what they read with the row and place a lost file exactly (DR0);
    `sha256` is compared where the bytes are read anyway (`log verify`, a copy). Rows made before these were
    recorded carry only the size (None for the rest).
    """

    name: str
    size: int
    rows: int | None = None
    seq_lo: int | None = None
    seq_hi: int | None = None
    sha256: str | None = None


@dataclass(frozen=True)
class Segment:
    """One immutable Parquet segment of a location's log (architecture.md, EventQL design)."""

    id: int
    location: str
    path: str  # relative to the store root, so a store can be moved
    seq_lo: int
    seq_hi: int
    count: int
    # The LUB over its events of vt(e) ⊔ {origin(e): origin_time(e)} (RET4): after a clock pruning the vts
    # lack the pruned id but the identities still carry it, so "does V cover every event here" stays
    # `vt_lub ≤ V`. Before any pruning it is the plain LUB of the vts.
    vt_lub: VectorTime = EMPTY
    # The data files the segment was written with, sorted by name; None for a segment committed before
    # rows recorded them (checked for presence only, core.damage, and read as a folder).
    files: tuple[SegmentFile, ...] | None = None

    @property
    def file_names(self) -> tuple[str, ...] | None:
        """The names of the data files readers read (never a folder listing), None: read the folder."""
        return None if self.files is None else tuple(f.name for f in self.files)


class ChangeKind(StrEnum):
    """The kinds of recorded topology change (H1)."""

    LOCATION_ADDED = "location-added"
    LOCATION_RETIRED = "location-retired"
    CONNECTION_ADDED = "connection-added"
    CONNECTION_REMOVED = "connection-removed"
    FILTER_SET = "filter-set"
    FILTER_CLEARED = "filter-cleared"
    GROUP_DECLARED = "group-declared"
    GROUP_REMOVED = "group-removed"
    FAILOVER = "failover"


@dataclass(frozen=True)
class Change:
    """One recorded topology change (H1). Only the fields of its kind are set.

    A fail-over is recorded as a FAILOVER marker plus the connection changes it implies, so the projection
    (H2) is a fold over plain connection changes.
    """

    kind: ChangeKind
    location: str | None = None  # location-added/retired, failover (the location that moves)
    role: Role | None = None  # location-added
    source: str | None = None  # connection and filter changes
    target: str | None = None
    filter: str | None = None  # connection-added (optional), filter-set
    history: HistoryMode | None = None  # connection-added
    group: str | None = None  # group-declared/removed
    members: tuple[str, ...] = ()  # group-declared
    failover_from: str | None = None
    failover_to: str | None = None
    # Recorded metadata (who, when, why); never used by the rules.
    id: int | None = None
    at: str | None = None
    actor: str | None = None
    reason: str | None = None
    operation: str | None = None


@dataclass(frozen=True)
class Violation:
    """A rule refusal or warning: the rule id, what is wrong, and the next command to run."""

    code: str
    message: str
    hint: str | None = None
    cycle: tuple[str, ...] | None = None
    warning: bool = False
    details: dict[str, Any] = field(default_factory=dict)

    def render_cycle(self) -> str | None:
        """The cycle as operators read it: `A–B–C`."""
        return "–".join(self.cycle) if self.cycle else None


@dataclass(frozen=True)
class StoreMarker:
    """What a store's marker says: the owning catalog's id and when the store was marked (a store belongs to
    exactly one catalog, `services.store_identity`), and how far that catalog had got when a command last
    changed it through this store: its version and each location's seq (0 and none on older markers), and the
    token that version got in the catalog's lineage (None on markers written before lineages were kept)."""

    catalog_id: str
    created_at: datetime
    catalog_version: int = 0
    seqs: Mapping[str, int] = field(default_factory=dict)
    version_token: str | None = None
