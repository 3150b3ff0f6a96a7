"""The ports: what the services need from the catalog and the data plane, as structural `Protocol`s.

architecture.md's "ports ◄── adapters": services are written against these types only and import no adapter
module, no pyspark and no `shutil` on store paths (the import-linter contracts in pyproject.toml hold them to
it). The composition root (`replctl.cli.context`) builds the real adapters, which satisfy these protocols
structurally: `adapters.catalog.repository.Catalog` / `CatalogTransaction` for the catalog,
`adapters.dataplane.Engine` (the log store plus the Spark jobs) for the data plane,
`adapters.logbackups.LogBackups` for the backup store of a log store, `adapters.eventfile` for the event
files an append reads, `adapters.installer.Installer` for what `init` and `db upgrade|current` do before
a catalog can be opened, and `adapters.spark.server.ManagedServer` for the managed Spark engine. The job
specs and results the data plane takes and returns are core values (`core.jobs`).

Each protocol lists the methods the services call today, no more: a method a service starts to use is added
here with the adapter's signature.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from replctl.core.backups import Manifest
from replctl.core.jobs import (
    InvariantViolation,
    PassResult,
    PassSpec,
    RewriteResult,
    SegmentRewrite,
    SegmentStats,
    WrittenStats,
)
from replctl.core.journal import Operation, OperationStep, Outcome, PendingDeletion
from replctl.core.model import Change, Connection, Location, Segment, SegmentFile, StoreMarker
from replctl.core.recovery import FileRead
from replctl.errors import LockHeld


class CatalogTransaction(Protocol):
    """One unit of work on the catalog: reads and writes that commit together or not at all (one operation
    step's state changes, its journal entry and its fencing check)."""

    def acquire_lease(self, resource: str, holder: str, operation_id: str, ttl_seconds: float) -> int:
        """Take the lease on `resource` for `ttl_seconds`; returns its fencing token."""
        ...

    def add_segment(  # noqa: PLR0917 (the adapter's signature, as services call it)
        self,
        location: str,
        path: str,
        seq_lo: int,
        seq_hi: int,
        count: int,
        vt_lub: Mapping[str, int],
        operation_id: str | None,
        *,
        files: Sequence[SegmentFile] | None = None,
    ) -> Segment:
        """Commit a written segment file (path relative to the store root) to `location`'s log."""
        ...

    def add_written_segment(
        self,
        location: str,
        path: str,
        stats: WrittenStats,
        operation_id: str | None,
        files: Sequence[SegmentFile] | None,
    ) -> Segment:
        """Commit a segment a job wrote (or a copy made) at `path` with its statistics (`add_segment`)."""
        ...

    def begin_operation(
        self,
        command: str,
        args: Mapping[str, Any],
        actor: str | None,
        host: str | None,
        reason: str | None,
    ) -> str:
        """Journal the start of an operation (outcome `running`); returns its new id (a UUID)."""
        ...

    def catalog_identity(self) -> tuple[str | None, datetime | None]:
        """The catalog's id and when its store was marked (None: no store marked yet)."""
        ...

    def catalog_version(self) -> int:
        """The catalog's version as this transaction sees it (0 on a catalog no state change has touched)."""
        ...

    def catalog_version_token(self, version: int) -> str | None:
        """The token `version` got when this catalog reached it; None when the catalog has no row for it (a
        version it never reached, or one from before its lineage was kept)."""
        ...

    def changes(self, location: str | None = None) -> list[Change]:
        """The recorded changes in the order they were recorded (by id)."""
        ...

    def check_lease(self, resource: str, token: int) -> None:
        """Raise `LockHeld` unless `token` is still the current, unreleased lease on `resource`."""
        ...

    def clear_pending_deletion(self, location: str) -> bool:
        """Drop the waiting deletion of `location`; False when there was none."""
        ...

    def clear_stale_removed_progress(self) -> list[tuple[str, str]]:
        """See the module function of the same name (a repair run by `db upgrade`)."""
        ...

    def complete_interrupted(self, operation_id: str, *, by: str) -> bool:
        """Mark an operation that was interrupted after its work committed as `succeeded`, on behalf of `by`."""
        ...

    def connection(self, source: str, target: str, *, for_update: bool = False) -> Connection | None:
        """The connection source→target, or None."""
        ...

    def connections(self) -> list[Connection]:
        """Every connection ever made, removed ones included, by (source, target)."""
        ...

    def delete_segments(self, ids: Iterable[int]) -> int:
        """Forget the given segments (their files become garbage); returns how many rows went."""
        ...

    def find_operations(self, command: str, args: Mapping[str, str]) -> list[Operation]:
        """Every operation of `command` whose args hold each of `args` (string values), newest first."""
        ...

    def finish_operation(
        self, operation_id: str, outcome: Outcome | str, error: Mapping[str, Any] | None = None
    ) -> None:
        """Record how the operation ended and when; `error` is the JSON `error` object, if any."""
        ...

    def lease_held(self, resource: str) -> LockHeld | None:
        """The `LockHeld` `acquire_lease` would raise for `resource` now (held by another live operation),
        None when it would grant it; reads only, takes nothing (a dry run's check)."""
        ...

    def location(self, name: str) -> Location | None:
        """The location called `name`, or None."""
        ...

    def locations(self) -> list[Location]:
        """Every location ever added, retired ones included (M1: ids are never reused), by name."""
        ...

    def operations(self, limit: int = 50) -> list[Operation]:
        """The latest `limit` operations, newest first, each with its steps."""
        ...

    def operation(self, operation_id: str) -> Operation | None:
        """The operation with exactly this id, with its steps, or None."""
        ...

    def operation_ids_starting(self, prefix: str, limit: int) -> list[str]:
        """Up to `limit` operation ids that start with `prefix` (taken literally), in id order."""
        ...

    def journaled_backups(self) -> set[str]:
        """The ids of the backups `backup create` made with this catalog, as its journal records them."""
        ...

    def pending_deletion(self, location: str) -> PendingDeletion | None:
        """The waiting deletion of `location`, or None."""
        ...

    def pending_deletions(self) -> list[PendingDeletion]:
        """Every waiting deletion, by location."""
        ...

    def put_connection(self, connection: Connection) -> None:
        """Insert the connection, or overwrite the state of the existing source→target."""
        ...

    def put_location(self, location: Location) -> None:
        """Insert the location, or overwrite the metadata of the one with its name."""
        ...

    def put_pending_deletion(
        self,
        location: str,
        requested_upto: int,
        blocked_by: Iterable[str],
        *,
        require_recoverable: bool = False,
    ) -> None:
        """Record (or update) the deletion of `location` up to `requested_upto` waiting for `blocked_by`, and
        whether its retries must keep every location recoverable (BK4); the values given replace the stored."""
        ...

    def record_change(
        self, change: Change, *, actor: str | None, reason: str | None, operation_id: str | None
    ) -> Change:
        """Append `change`; returns it with its id, time (ISO 8601, UTC), actor, reason and operation."""
        ...

    def record_step(self, operation_id: str, name: str, detail: Mapping[str, Any]) -> OperationStep:
        """Journal a completed step; commit it in the transaction that made its effect."""
        ...

    def record_store_marked(self, catalog_id: str, created_at: datetime) -> None:
        """Record that the store was marked with `catalog_id` at `created_at` (not a state change)."""
        ...

    def release_lease(self, resource: str, token: int) -> bool:
        """Give the lease back; False (and nothing changes) when `token` is no longer the current one."""
        ...

    def renew_lease(self, resource: str, token: int, ttl_seconds: float) -> None:
        """Extend the lease held with `token` to `ttl_seconds` from now; `LockHeld` if it was lost."""
        ...

    def segment_paths(self) -> set[str]:
        """Every path a committed segment points to; any other file in the store is garbage."""
        ...

    def segments(self, location: str) -> list[Segment]:
        """The committed segments of `location`'s log, in seq order."""
        ...

    def set_plan(self, operation_id: str, plan: Mapping[str, Any]) -> None:
        """Record the plan the operation is about to execute."""
        ...

    def set_segment_lub(self, segment_id: int, vt_lub: Mapping[str, int]) -> None:
        """Correct the recorded LUB of one segment (the repair of catalogs pruned before RET4)."""
        ...


class Catalog(Protocol):
    """The catalog: opens units of work, and gives the clock and the URL (password masked) it records with."""

    @property
    def clock(self) -> Callable[[], datetime]:
        """The clock that gives every time this catalog records."""
        ...

    @property
    def url(self) -> str:
        """The catalog's URL with the password masked, for messages."""
        ...

    def transaction(self, *, readonly: bool = False) -> AbstractContextManager[CatalogTransaction]:
        """One unit of work: commits when the block ends normally, rolls back when it raises."""
        ...

    def reopen(self) -> AbstractContextManager[Catalog]:
        """The same catalog on connections of its own (for another thread, e.g. the lease keeper)."""
        ...

    def holder_name(self, user: str) -> str:
        """The lease holder string of this process for `user` (who, host, pid), as leases record it."""
        ...


class LogStore(Protocol):
    """Where the logs' segment files live (paths are relative to the store root), and the marker naming the
    catalog the store belongs to."""

    @property
    def root(self) -> str:
        """The store's root, as messages name it."""
        ...

    def create_root(self, mode: int = 0o700) -> None:
        """Create the root folder (local stores) if it is not there."""
        ...

    def marker_uri(self) -> str:
        """Where the store's marker lives (for messages)."""
        ...

    def root_exists(self) -> bool:
        """Whether the root folder exists (remote roots are taken to exist: their marker decides)."""
        ...

    def read_marker(self) -> StoreMarker | None:
        """The store's marker, None when it has none."""
        ...

    def write_marker(self, marker: StoreMarker) -> None:
        """Write the store's marker atomically."""
        ...

    @property
    def is_local(self) -> bool:
        """True for a store on a local file system (the checks and clean-ups that list files need one)."""
        ...

    def new_segment_path(self, location: str, first_seq: int) -> str:
        """A fresh relative path for a segment of `location` starting at `first_seq`."""
        ...

    def local_path(self, relative: str) -> Path:
        """The local file-system path of `relative` (local stores only)."""
        ...

    def exists(self, relative: str) -> bool:
        """True when something is stored at `relative`."""
        ...

    def remove(self, relative: str) -> None:
        """Remove a segment (a file or a folder of files) at `relative`; nothing there is not an error."""
        ...

    def identity_extent(self, segment: Segment, origins: Sequence[str]) -> dict[str, tuple[int, int]]:
        """Per origin of `origins`, the smallest and largest origin_time stored in one segment (M3, RET4)."""
        ...

    def list_segment_dirs(self, location: str) -> list[str]:
        """The relative paths of every segment stored for `location` (catalogued or not)."""
        ...

    def segment_files(self, relative: str) -> dict[str, int] | None:
        """The data files of the segment at `relative` with their sizes, None when it is not there."""
        ...

    def file_sizes(self, relative: str, names: Sequence[str]) -> dict[str, int]:
        """Those of the data files `names` of the segment at `relative` that are there, with their sizes as
        `segment_files` gives them, found without listing the segment."""
        ...

    def copy_segment(self, src_rel: str, dst_rel: str, names: Sequence[str] | None = None) -> None:
        """Copy a segment within the store (only the files `names`, when given)."""
        ...

    def segment_digest(self, relative: str) -> str | None:
        """The digest of the segment at `relative` as a backup's manifest records it (BK1), read back from
        the store, local or remote; None when nothing is there."""
        ...

    def changed_files(self, segment: Segment) -> frozenset[str]:
        """The names of `segment`'s catalogued data files the store holds at their recorded size whose bytes
        are not the ones written: their SHA-256 differs from the one the row recorded (bit rot, an overwrite
        at the same size), whether or not they still parse. Reads each such file whole; none on a store that
        is not listed (remote) or for a row that records no digest."""
        ...


class DataPlane(Protocol):
    """The jobs over stored events (architecture.md: read → transform → write → report) and the store they
    write to. The services decide (core) and record (catalog); the data plane only reads and writes events."""

    @property
    def store(self) -> LogStore:
        """The log store the jobs read and write."""
        ...

    def record_files(self, relative: str) -> tuple[SegmentFile, ...] | None:
        """The inventory of a written segment (names and sizes) that its catalog row records (DR0)."""
        ...

    def append_events(
        self,
        location: str,
        *,
        events: list[dict[str, Any]] | None = None,
        parquet_path: str | None = None,
        generate: int | None = None,
        seed: int = 0,
        start_seq: int,
        cvv: Mapping[str, int],
        out_rel: str,
    ) -> SegmentStats:
        """Append new local events to `location` as one segment at `out_rel` (EM1): exactly one source, `events`
        (rows with type, key, tags, payload as JSON text), a Parquet file or folder, or `generate` events."""
        ...

    def read_log(
        self, segments: Sequence[Segment], *, from_seq: int = 0, limit: int | None = None
    ) -> Iterator[dict[str, Any]]:
        """The stored events with seq ≥ `from_seq` in seq order, at most `limit`; each segment is counted
        against its catalog row before its events are given (a mismatch raises DamagedLog, DR0)."""
        ...

    def verify_log(
        self,
        segments: Sequence[Segment],
        *,
        seq: int,
        cvv: Mapping[str, int],
        dvv: Mapping[str, int],
        baseline: Mapping[str, int],
        described_by: str = "the catalog",
    ) -> list[InvariantViolation]:
        """I1–I4 and I7 of one stored log (`segments` in seq order) against the metadata it should agree with."""
        ...

    def replicate_pass(self, spec: PassSpec) -> PassResult:
        """One replication pass X→Y (REP1): CF1, the filter, RFC2's admission check, renumbering."""
        ...

    def filter_failure(
        self,
        segments: Sequence[Segment],
        progress: int,
        filter_sql: str,
        target_cvv: Mapping[str, int] | None = None,
        *,
        admission: Sequence[str] = (),
    ) -> str | None:
        """The first line of the error when `filter_sql` fails on the events after `progress`, else None.

        With `target_cvv`, only on the events a pass into that target evaluates the filter on: those CF1 does
        not skip (REP1 (1) comes before (2)), and with the pass's RFC2 `admission` projection, only those up
        to the first event its check blocks (REP1 (3): the pass stops there).
        """
        ...

    def first_needed(
        self,
        segments: Sequence[Segment],
        *,
        upto: int,
        targets: Mapping[str, tuple[int, Mapping[str, int]]],
    ) -> dict[str, int | None]:
        """For each target (progress, CVV): the smallest seq ≤ `upto` after its progress it does not cover."""
        ...

    def dropped_lub(self, segment: Segment, *, upto: int) -> dict[str, int]:
        """DEL2 for a dry run: the LUB of `vt ⊔ identity` of the events seq ≤ `upto` of `segment`."""
        ...

    def rewrite_from(
        self,
        segment: Segment,
        keep_from_seq: int,
        out_rel: str,
        *,
        keys: Sequence[str] | None = None,
        identity_origins: Sequence[str] = (),
    ) -> RewriteResult:
        """Rewrite the segment that straddles a deletion cut (DEL1), keeping the events seq ≥ `keep_from_seq`."""
        ...

    def last_seq_emitted_before(self, segments: Sequence[Segment], cutoff: datetime) -> int | None:
        """The last seq of the longest prefix of events all emitted before `cutoff` (a retention cut)."""
        ...

    def prune_log(
        self,
        rewrites: Sequence[SegmentRewrite],
        *,
        key: str,
        keys: Sequence[str],
        identity_origins: Sequence[str] = (),
    ) -> list[SegmentStats | None]:
        """RET2: rewrite each segment without `key` in its vts; each new segment's statistics (None: empty)."""
        ...

    def census(self, segments: Sequence[Segment]) -> dict[str, dict[str, FileRead]]:
        """DR0: per segment path, per data file the store still holds, its rows and seq range."""
        ...

    def truncate_below(
        self,
        segment: Segment,
        keep_below: int,
        out_rel: str,
        *,
        keys: Sequence[str],
        identity_origins: Sequence[str] = (),
    ) -> SegmentStats | None:
        """DR1: the events of a damaged segment with seq < `keep_below` as a new segment (None: none survive)."""
        ...

    def survivors_below(self, segment: Segment, keep_below: int) -> SegmentStats | None:
        """DR1 for a dry run: the statistics `truncate_below` would return, with nothing written."""
        ...

    def unheld(
        self,
        segments: Sequence[Segment],
        *,
        seq_from: int,
        seq_below: int | None,
        elsewhere: Sequence[Segment],
        origin: str | None = None,
    ) -> dict[str, list[int]]:
        """DR0, RET1: per origin, the sorted origin times of the events of `segments` with seq in
        [`seq_from`, `seq_below`) (of `origin` only, when given) that no segment of `elsewhere` stores: an
        anti-join on the identity (origin, origin_time), M3. Only the files the store still holds are read."""
        ...

    def origin_times(
        self, segments: Sequence[Segment], origin: str, *, above: int, upto: int, seq_below: int | None = None
    ) -> set[int]:
        """DR0's report: the origin times in (`above`, `upto`] of the events of `origin` that `segments`
        store with seq < `seq_below` when given (only the files the store still holds are read)."""
        ...

    def cut_files(self, segment: Segment, from_seq: int) -> None:
        """`drill disaster`: destroy the events seq ≥ `from_seq` of one segment in place, as a torn disk would."""
        ...

    def stored_from(self, segment: Segment, from_seq: int) -> bool:
        """`drill disaster`: whether the store still holds events seq ≥ `from_seq` of one segment, what
        `cut_files` would destroy (a drill or a disaster may have taken them; the catalog does not say)."""
        ...

    def compact(
        self,
        segments: Sequence[Segment],
        out_rel: str,
        *,
        keys: Sequence[str] | None = None,
        identity_origins: Sequence[str] = (),
    ) -> SegmentStats:
        """Merge segments into one at `out_rel` with the same rows, sorted by seq."""
        ...


class BackupStore(Protocol):
    """The backup store (rules.md BK1) of one log store: manifests, and the segment copies it makes from that
    log store and copies back into it (BK2). Paths are the log store's relative segment paths."""

    def roots(self) -> tuple[str, str]:
        """Where the backup store and the log store it backs up are, as `replctl.storeroots.root_of` takes
        them: (backup store, log store)."""
        ...

    def not_a_folder(self) -> str | None:
        """What the backup store's root is when something other than a folder is there (`"a file"`...);
        None when it is a folder, not there yet, or remote."""
        ...

    def manifests(self, location: str | None = None) -> list[Manifest]:
        """Every complete backup (one with a manifest), oldest first; only `location`'s when given."""
        ...

    def manifest(self, backup_id: str) -> Manifest | None:
        """One backup's manifest, None when there is none; a damaged manifest is an environment failure."""
        ...

    def put_manifest(self, manifest: Manifest) -> None:
        """Write a manifest last and atomically: from then on the backup exists."""
        ...

    def remove_manifest(self, backup_id: str) -> None:
        """Remove a manifest: the backup stops existing (its files are removed after, by the caller)."""
        ...

    def has_segment(self, path: str) -> bool:
        """Whether a complete copy of the segment at `path` is held (a store that cannot tell says False)."""
        ...

    def segment_bytes(self, path: str) -> int:
        """The bytes of a held segment copy's files."""
        ...

    def segment_digest(self, path: str) -> str | None:
        """The digest of a held segment copy (as `copy_in` returns it), None when it is missing."""
        ...

    def segment_digests(self, path: str) -> tuple[str, dict[str, str]] | None:
        """The digest of a held segment copy (as `segment_digest`) and the sha256 of each of its files
        (relative name -> hex), from one read of every byte; None when it is missing."""
        ...

    def segment_sizes(self, path: str) -> dict[str, int] | None:
        """The files of a held segment copy (relative name -> size), from a listing: no byte is read; None
        when the copy is missing. What `backup create` checks a copy by before it reuses it (BK1)."""
        ...

    def remove_segment(self, path: str) -> None:
        """Remove a segment copy; removing what is absent is not an error."""
        ...

    def remove_set_aside(self, location: str) -> list[str]:
        """Remove what a recopy (`copy_in` over a damaged copy) that died left of the damaged copy it was
        replacing under `location`: no copy of anything, never listed or counted; returns what it removed.
        Best effort: what cannot be removed stays for the next call, and nothing is raised."""
        ...

    def copy_in(
        self, path: str, names: Sequence[str] | None, *, recorded: Sequence[SegmentFile] | None
    ) -> tuple[int, str]:
        """Copy the data files `names` (None: every data file) of the log store's segment `path` in as
        `path`; (bytes, digest) of the copy, which appears only when whole. `recorded` is the segment row's
        file inventory (DR0), which a copy may stand on instead of reading the file again."""
        ...

    def copy_out(self, path: str, relative: str) -> None:
        """Copy a held segment into the log store as `relative` (BK2's restore); the caller checks the copy's
        digest against the manifest and removes it on any failure."""
        ...

    def copies(self) -> DataPlane:
        """The segment copies seen through a data plane (same relative paths), to read a backup's events
        with the code that reads live logs, never touching the live log (`backup verify`, a restore's dry
        run). Only its reading jobs are used."""
        ...


class EventFiles(Protocol):
    """The event files an append reads (a Parquet file or folder), checked before any job reads them."""

    def check_parquet_events(self, path: Path, max_payload_bytes: int) -> None:
        """Refuse (exit 2) a Parquet source whose columns or payloads an append would not take (issue 19)."""
        ...


class Installer(Protocol):
    """What `init` and `db upgrade|current` do to a catalog and a store before either can be opened as a port:
    creating the catalog file and the store root, migrating the schema, and opening both once done."""

    @property
    def printable_db(self) -> str:
        """The catalog's URL with the password masked, for the documents."""
        ...

    @property
    def printable_store(self) -> str:
        """The store's root with any password masked, for the documents."""
        ...

    def create_catalog_file(self) -> None:
        """Create a file catalog's folder and empty file with the configured modes (nothing for a server)."""
        ...

    def undone_on_failure(self) -> AbstractContextManager[None]:
        """Within the block, what it creates (the catalog file, the store's root and marker) is removed again
        when it fails; what existed before is left alone."""
        ...

    def check_catalog_exists(self) -> None:
        """Refuse (exit 6) a catalog that is not there, before anything would create an empty one."""
        ...

    def migrate(self) -> tuple[str | None, str | None]:
        """Upgrade the catalog to head; (revision before, revision after)."""
        ...

    def current_revision(self) -> str | None:
        """The catalog's schema revision (None: not migrated at all)."""
        ...

    def head_revision(self) -> str:
        """The schema revision this replctl writes."""
        ...

    def create_store_root(self) -> None:
        """Create the store's root folder (a local store) with the configured mode."""
        ...

    def opened(self) -> AbstractContextManager[tuple[Catalog, LogStore]]:
        """The catalog and the log store, opened for the repairs and the store marker; closed after."""
        ...

    def copy_catalog(self, file: Path) -> tuple[Path, int]:
        """Copy a file catalog, in use, to the new file `file`; the copy's absolute path and size in bytes
        (exit 2 for a server catalog or an existing file)."""
        ...


class EngineRecord(Protocol):
    """What `engine start` recorded about the server it started."""

    @property
    def address(self) -> str:
        """Its Spark Connect address, sc://HOST:PORT."""
        ...

    @property
    def pid(self) -> int:
        """Its process id."""
        ...

    @property
    def version(self) -> str:
        """The Spark version it runs."""
        ...

    @property
    def started_at(self) -> str:
        """When it was started, ISO 8601 with its UTC offset."""
        ...

    @property
    def master(self) -> str:
        """Its Spark master."""
        ...

    @property
    def log(self) -> str:
        """The file its output goes to."""
        ...


class EngineState(Protocol):
    """The managed engine as found now."""

    @property
    def record(self) -> EngineRecord | None:
        """What was recorded, None when no engine was started (or the record is unreadable)."""
        ...

    @property
    def up(self) -> bool:
        """True when its process is the server and its port answers, so commands can use it."""
        ...


class ManagedEngine(Protocol):
    """The managed Spark engine of one replctl home (`replctl engine start|status|stop`)."""

    @property
    def log(self) -> Path:
        """Where an engine started from this home writes its output."""
        ...

    def state(self) -> EngineState:
        """The recorded engine and whether it is up."""
        ...

    def start(
        self, *, master: str, port: int, conf: tuple[tuple[str, str], ...]
    ) -> tuple[EngineRecord, bool]:
        """Start the engine unless one is up; its record and whether this call started it (exit 6 if it fails)."""
        ...

    def stop(self) -> EngineRecord | None:
        """Stop the recorded engine if it still runs and forget it; the record that was stopped, if any."""
        ...


class SparkChoice(Protocol):
    """Which Spark a command would use and why (`config show`)."""

    @property
    def master(self) -> str:
        """The Spark master of a classic session."""
        ...

    @property
    def remote(self) -> str | None:
        """The Spark Connect address, when one is used instead (unmasked)."""
        ...

    @property
    def why(self) -> str:
        """Where the choice came from: a flag, the environment, the config file, the managed engine or local."""
        ...
