"""Backups (rules.md BK1, BK3): `backup create|list|show|verify|prune`, and the recoverability `status` shows.

A backup copies a location's catalogued segments as of one catalog version into the backup store and writes the
manifest last (the backup-store port, `services.ports.BackupStore`). Segments are immutable, so a segment some
earlier backup of this catalog already lists is not copied again (`segments_reused`), provided its copy is still
there and whole by its files' names and sizes; one that is not is copied again from the live log
(`segments_recopied`).
Each location's backup is one journalled operation.
"""

from __future__ import annotations

import getpass
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, suppress
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from typing import Any

from replctl import __version__
from replctl.core import backups as bk
from replctl.core import recovery as dr
from replctl.core.deletion import parse_age
from replctl.core.model import Location, LocationState, Segment
from replctl.core.vectortime import VectorTime
from replctl.errors import EnvironmentFailure, InvalidInput, LockHeld, Refused, UnknownName
from replctl.failpoints import hit
from replctl.services import interruption
from replctl.services.backup_outcomes import (
    BackupCheck,
    BackupChecks,
    BackupList,
    BackupShown,
    BackupsMade,
    PruneOutcome,
)
from replctl.services.backup_repair import damaged_copies, way_out
from replctl.services.damage import refuse_damaged
from replctl.services.logs import log_invariants
from replctl.services.lookup import get_location
from replctl.services.operations import OperationContext, backup_resource, location_resource, operation
from replctl.services.ports import BackupStore, Catalog, DataPlane, LogStore
from replctl.services.store_identity import backup_owner
from replctl.services.topology_state import load_state
from replctl.storeroots import apart_from, overlap, root_of

# The journal's name of one location's backup (`_one`).
CREATE_COMMAND = "backup create"

# Segment copies made side by side. Four whatever the cores: a copy is a kernel copy and an fsync (BK1), so it
# mostly waits for the disk, which takes several flushes at once; beyond four the disk, not the CPU, is the limit.
_COPIERS = 4


def create(
    catalog: Catalog,
    store: LogStore,
    backups: BackupStore,
    names: list[str],
    *,
    reason: str | None = None,
    dry_run: bool = False,
    again: str = "replctl backup create",
) -> BackupsMade:
    """`backup create [LOC...] [--dry-run]`: one backup per location (default: every active one), incremental
    (BK1). The dry run plans each backup as the run does (`_plan`) and writes nothing. `again`: the command,
    with the options given, that backs up the locations named after it: a Ctrl-C says it for those left.

    Each location's backup is its own operation: one that cannot be made now (its log is damaged, DR0, or
    another operation holds it) is listed under `refused` with its error while the others are made, and the
    outcome is marked `incomplete` (exit 5). When no backup could be made, that one location's error stands
    (exit 4 for a damaged log), as for a single named location. A backup store that overlaps the log store
    is refused before all that (exit 2, `check_apart`).
    """
    retyped = " ".join(["replctl backup create", *names])
    check_apart(
        backups,
        "BK1",
        "nothing was written",
        lambda other: (
            f"back up apart from the log store: {retyped} --to {other}; set backup_store there to keep it"
        ),
    )
    _check_folder(backups)
    with catalog.transaction(readonly=True) as tx:
        for name in names:
            get_location(tx, name)
        # A recovering location's log is not yet what it will be: the default leaves it out (BK1: active ones).
        chosen = names or [loc.name for loc in tx.locations() if loc.state is LocationState.ACTIVE]
    made: list[dict[str, Any]] = []
    refused: list[tuple[str, LockHeld]] = []
    # Each backup its own operation: a Ctrl-C after one of them names those not made, to make (issue 18).
    labels = {interruption.what(CREATE_COMMAND, {"location": name}): name for name in dict.fromkeys(chosen)}
    with ExitStack() as scope:
        if not dry_run:
            scope.enter_context(
                interruption.in_turn(list(labels), lambda left: " ".join([again, *(labels[x] for x in left)]))
            )
        for name in labels.values():
            try:
                made.append(_one(catalog, store, backups, name, reason, dry_run=dry_run))
            except LockHeld as exc:
                # Finding 6: one damaged log stopped the command after the backups before it were made, and
                # the document listed none of them; the others are still worth having, so each is listed.
                refused.append((name, exc))
    if refused and not made:
        raise refused[0][1]
    return BackupsMade(
        dry_run, tuple(made), tuple({"location": name, "error": exc.to_json()} for name, exc in refused)
    )


def _check_folder(backups: BackupStore) -> None:
    """Refuse (exit 2, `not-a-folder`) a backup store root that is there but is no folder (an existing file
    named by `--to`): the copies would fail half-way on it as an environment failure. Nothing is written."""
    kind = backups.not_a_folder()
    if kind is not None:
        raise InvalidInput(
            f"invalid backup store [BK1]: {backups.roots()[0]} is {kind}, not a folder; nothing was written",
            code="not-a-folder",
            hint="name a folder, or one that does not exist yet, with --to (or backup_store)",
        )


def check_apart(
    backups: BackupStore, rule: str, unchanged: str, fix: Callable[[str], str] | None = None
) -> None:
    """Refuse (exit 2, `store-overlap`) a backup store that overlaps the log store it backs up: the same
    folder, one inside it, or one holding it (`replctl.storeroots`).

    Every command that writes to the backup store or restores from it calls this first, so that a refusal
    reads, writes and journals nothing, and a dry run refuses as the run does. `rule` is the rule the command
    serves (BK1 for a backup or a prune, BK2 for a restore), `unchanged` what the message says was left
    alone, `fix` the hint given a folder apart from the log store (default: move the backups there).
    """
    backup_root, log_root = backups.roots()
    ours, logs = root_of(backup_root), root_of(log_root)
    how = overlap(ours, logs)
    if how is None:
        return
    beside = apart_from(logs)
    other = str(beside) if beside is not None else f"a folder outside {logs}"
    raise InvalidInput(
        f"invalid backup store [{rule}]: the backup store {ours} {how.value} the log store {logs}; backups "
        f"must lie apart from the logs, where recovery, compaction and drills cannot remove or misread them; "
        f"{unchanged}",
        code="store-overlap",
        hint=(fix or _move_backups)(other),
    )


def _move_backups(other: str) -> str:
    # No command takes a backup store but `backup create --to`: a restore or a prune reads backup_store.
    return (
        f"move the backups to {other}, apart from the log store, and set backup_store "
        "(or REPLCTL_BACKUP_STORE) there"
    )


def _one(
    catalog: Catalog, store: LogStore, backups: BackupStore, name: str, reason: str | None, *, dry_run: bool
) -> dict[str, Any]:
    def body(ctx: OperationContext) -> dict[str, Any]:
        return _backup(ctx, store, backups, name, reason)

    return operation(
        catalog,
        command=CREATE_COMMAND,
        args={"location": name},
        reason=reason,
        # The location's lease only while the catalog is read (BK1, released in `_read`); the backups' lease
        # throughout, so that no prune removes a file this backup reuses before its manifest names it.
        resources=[location_resource(name), backup_resource(name)],
        dry_run=dry_run,
        body=body,
    )


# Where a segment's copy in the backup store comes from (`_plan`).
REUSED = "reused"  # an earlier manifest names it, whole by size: neither copied nor read (incremental)
HELD = "held"  # a whole copy left by a backup that died before its manifest: kept
COPY = "copy"  # copied now
RECOPY = "recopy"  # an earlier manifest names it, but its copy is missing or a file of it is: copied again
_COPIED = (COPY, RECOPY)


@dataclass(frozen=True)
class _PlannedSegment:
    """One segment of a planned backup: where its copy comes from, its size, and its digest when known."""

    segment: Segment
    source: str
    bytes: int
    digest: str | None = None


def _plan(
    catalog: Catalog,
    store: LogStore,
    backups: BackupStore,
    name: str,
    segments: list[Segment],
    *,
    catalog_id: str | None,
) -> list[_PlannedSegment]:
    """BK1, for the dry run and the run alike: per segment, which copy the backup uses, and its bytes.
    `catalog_id` is the catalog's id as `_read` read it (None: read again, and refused, by `mine`)."""
    # What this catalog's earlier manifests of this location say of a segment stands for it once its copy is
    # there with the files and sizes they and the segment's row record: a listing, never a read (incremental).
    # A copy that lost a file made every later backup unrestorable while BK3 counted it. A segment path starts
    # with its location, so no other location's manifest can list it. Nor does another catalog's manifest
    # count (`mine`): that catalog prunes its backups without this catalog's lease, and a backup that reused
    # a copy on its word lost it to such a prune.
    known = {s.path: s for m in mine(catalog, backups, name, known_id=catalog_id) for s in m.segments}
    planned = []
    for seg in segments:
        entry = known.get(seg.path)
        if entry is not None:
            if bk.copy_damage(entry, backups.segment_sizes(seg.path), seg.files) is None:
                planned.append(_PlannedSegment(seg, REUSED, entry.bytes, entry.digest))
            else:
                planned.append(_PlannedSegment(seg, RECOPY, _data_bytes(store, seg)))
        elif backups.has_segment(seg.path):
            # No backup of this catalog lists the copy: one that died before its manifest left it, or another
            # catalog's backup lists it (segment names are random per segment, so the same name is the very
            # segment file, from a log store both catalogs' logs came from). Kept when whole by the segment's
            # own row, its sizes and, read now, each file's sha256 where the row records it: no manifest of
            # this catalog vouches for its bytes, and one whose bytes rotted at its size was kept under its own
            # digest, vouched for. The dry run reads it as the run does (a held copy is rare: a crash, another
            # catalog). Once this backup's manifest names it, neither catalog's prune removes it
            # (`core.backups.prune`'s `others`). Copied again when it is not whole: then it serves no backup
            # whole, and the whole segment file repairs it for the other catalog too.
            expected = _data_bytes(store, seg)
            row = bk.BackupSegment(seg.path, seg.seq_lo, seg.seq_hi, seg.count, seg.vt_lub, expected, "")
            whole = bk.copy_damage(row, backups.segment_sizes(seg.path), seg.files) is None
            held = _held(backups, seg) if whole else None
            if held is None:
                planned.append(_PlannedSegment(seg, RECOPY, expected))
            else:
                planned.append(_PlannedSegment(seg, HELD, *held))
        else:
            planned.append(_PlannedSegment(seg, COPY, _data_bytes(store, seg)))
    return planned


def _data_bytes(store: LogStore, seg: Segment) -> int:
    """The bytes a copy of the segment's data files takes: the row's record, else the folder's data files."""
    if seg.files is not None:
        return sum(f.size for f in seg.files)
    return sum((store.segment_files(seg.path) or {}).values())


def _summary(loc: Location, planned: list[_PlannedSegment], manifest: bk.Manifest | None) -> dict[str, Any]:
    """The `backup create --json` entry; a dry run's (no `manifest`) has no id or time, only the run gives them."""
    copied = [p for p in planned if p.source in _COPIED]
    shared = {
        "location": loc.name,
        "seq": loc.seq,
        "events": sum(p.segment.count for p in planned),
        "segments": len(planned),
        "segments_reused": sum(1 for p in planned if p.source == REUSED),
        "bytes": sum(p.bytes for p in planned),
        "cvv": loc.cvv.to_dict(),
    }
    fresh = {
        "copied": [p.segment.path for p in copied],
        "bytes_copied": sum(p.bytes for p in copied),
        # Of `copied`, those whose earlier copy was missing, of another size, or (a held copy) of other bytes.
        "segments_recopied": sum(1 for p in copied if p.source == RECOPY),
    }
    if manifest is None:
        return {"id": None, "created_at": None, **shared, **fresh}
    return {**manifest.summary(), **fresh}


# How many times a backup reads the catalog again when the live log changed under its copy (a compaction or
# deletion at the location removed a segment file it was copying, BK1); each attempt keeps the copies made.
_ATTEMPTS = 3


def _backup(
    ctx: OperationContext, store: LogStore, backups: BackupStore, name: str, reason: str | None
) -> dict[str, Any]:
    if not ctx.dry_run:
        # What a recopy that died left set aside (`BackupStore.remove_set_aside`): this backup's lease keeps
        # any other recopy of this catalog's out of the location meanwhile.
        backups.remove_set_aside(name)
    for _attempt in range(_ATTEMPTS):
        loc, segments, version, catalog_id = _read(ctx, store, name)
        planned = _plan(ctx.catalog, store, backups, name, segments, catalog_id=catalog_id)
        if ctx.dry_run:
            return _summary(loc, planned, None)
        try:
            done = _copy(backups, planned)
        except EnvironmentFailure:
            if not _vanished(ctx, name, planned):
                raise
            continue  # a segment went from the live log while it was copied: read the catalog again
        if _held_gone(backups, done):
            # A copy no backup of this catalog listed, read whole when planned, is gone since: another
            # catalog's prune (it takes no lease of this catalog's) removed it. Planned again, it is copied.
            continue
        manifest = replace(_manifest(loc, version, done, reason), catalog_id=catalog_id)
        backups.put_manifest(manifest)
        # The manifest made the backup (BK1); the catalog only journals it, with the operation's end.
        ctx.closing_step(
            "backup",
            {
                "id": manifest.id,
                "segments": len(done),
                "reused": manifest.segments_reused,
                "recopied": sum(1 for p in done if p.source == RECOPY),
            },
        )
        return _summary(loc, done, manifest)
    raise LockHeld(
        f"{name}'s log changed under each of {_ATTEMPTS} attempts to back it up (compactions or deletions "
        "removed segments while they were copied); no backup was listed",
        code="busy",
        hint=f"run it again when {name} is quieter: replctl backup create {name}",
    )


def _read(
    ctx: OperationContext, store: LogStore, name: str
) -> tuple[Location, list[Segment], int, str | None]:
    """A's row, segments, the catalog version and the catalog's id (the manifest names it), read holding A's
    lease, which is given back right after (BK1): appends and replication into A go on while its segments are
    copied, since segments are immutable.

    The read is a snapshot that commits nothing; giving the lease back checks that it was held throughout
    (`OperationContext.release`), the census of A's files (DR0) included."""
    resource = location_resource(name)
    ctx.lease(resource)  # held already on the first attempt; taken again on a later one
    with ctx.transaction(readonly=True) as tx:
        loc = get_location(tx, name)
        segments = tx.segments(name)
        version = tx.catalog_version()
        catalog_id, _ = tx.catalog_identity()
    if loc.retired:
        raise InvalidInput(f"{name} is retired; there is nothing to back up", code="retired")
    # DR0: a backup of a damaged log would hold fewer events than its manifest says it does.
    refuse_damaged(store, name, segments)
    ctx.release(resource)
    return loc, segments, version, catalog_id


def _copy(backups: BackupStore, planned: list[_PlannedSegment]) -> list[_PlannedSegment]:
    """Copy what the plan says into the backup store; each planned segment with its copy's bytes and digest."""

    def copy(p: _PlannedSegment) -> tuple[int, str]:
        if p.source in _COPIED:
            return backups.copy_in(p.segment.path, p.segment.file_names, recorded=p.segment.files)
        return p.bytes, p.digest or ""  # reused, or held: read when planned

    with ThreadPoolExecutor(max_workers=_COPIERS) as pool:
        # Copying, digesting and fsyncing release the GIL: segments are copied side by side (`_COPIERS`). An
        # incremental backup usually copies one segment or none: it starts no thread (threads start on submit).
        copying = sum(1 for p in planned if p.source in _COPIED)
        results = pool.map(copy, planned) if copying > 1 else map(copy, planned)
        done: list[_PlannedSegment] = []
        for p, (size, sha) in zip(planned, results, strict=True):
            done.append(replace(p, bytes=size, digest=sha))
            hit("backup.after-copy")
    return done


def _held_gone(backups: BackupStore, done: list[_PlannedSegment]) -> bool:
    """Whether a HELD copy the manifest is about to list is no longer in the backup store (a listing each,
    no read: HELD copies are rare, left by a crashed backup or listed by another catalog's)."""
    return any(backups.segment_sizes(p.segment.path) is None for p in done if p.source == HELD)


def _vanished(ctx: OperationContext, name: str, planned: list[_PlannedSegment]) -> bool:
    """Whether a segment the backup was copying is no longer A's (a compaction or deletion committed since)."""
    with ctx.catalog.transaction(readonly=True) as tx:
        now = {s.path for s in tx.segments(name)}
    return any(p.segment.path not in now for p in planned if p.source in _COPIED)


def _manifest(loc: Location, version: int, done: list[_PlannedSegment], reason: str | None) -> bk.Manifest:
    """BK1's manifest of the copies in `done`, as of catalog `version`."""
    # created_at keeps microseconds: two backups taken within one second still sort (latest, prune).
    now = datetime.now(UTC)
    # What its CVV counts (I3, I4), also while A recovers with an entry held back (DR1).
    dvv, baseline = dr.counted_now(loc)
    return bk.Manifest(
        id=bk.backup_id(loc.name, now, uuid.uuid4().hex[:6]),
        location=loc.name,
        catalog_version=version,
        seq=loc.seq,
        cvv=loc.cvv,
        dvv=dvv,
        deleted_upto=loc.deleted_upto,
        logical_deleted_upto=loc.logical_deleted_upto,
        segments=tuple(
            bk.BackupSegment(
                p.segment.path,
                p.segment.seq_lo,
                p.segment.seq_hi,
                p.segment.count,
                p.segment.vt_lub,
                p.bytes,
                p.digest or "",
            )
            for p in done
        ),
        replctl_version=__version__,
        created_at=now.isoformat(),
        who=_who(),
        reason=reason,
        segments_reused=sum(1 for p in done if p.source == REUSED),
        baseline=baseline,
    )


def _held(backups: BackupStore, seg: Segment) -> tuple[int, str] | None:
    """The bytes and digest of a held copy of `seg` whose files hold the sha256 its row records, where it
    records one (BK1); None when one differs, or the copy went meanwhile: it is copied again."""
    read = backups.segment_digests(seg.path)
    if read is None:
        return None
    sha, files = read
    if any(f.sha256 is not None and files.get(f.name) != f.sha256 for f in seg.files or ()):
        return None
    return backups.segment_bytes(seg.path), sha


def _who() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def mine(
    catalog: Catalog, backups: BackupStore, location: str | None = None, *, known_id: str | None = None
) -> list[bk.Manifest]:
    """This catalog's complete backups in the backup store (`core.backups.of_catalog`), oldest first; only
    `location`'s when given. Another catalog's backups in the same store are left out of every listing, choice,
    prune and BK3 answer. `known_id`: the catalog's id as the caller already read it (`backup_owner`)."""
    every = backups.manifests(location)
    return bk.of_catalog(every, backup_owner(catalog, every, known_id=known_id))


def listing(catalog: Catalog, backups: BackupStore, location: str | None) -> BackupList:
    """`backup list [LOC]`: this catalog's complete backups, oldest first."""
    return BackupList(tuple(m.summary() for m in mine(catalog, backups, location)))


def find(catalog: Catalog, backups: BackupStore, ref: str, location: str | None = None) -> bk.Manifest:
    """A backup of this catalog by id, or `latest` of `location`.

    An id the backup store does not hold is an unknown name (exit 2, cli.md), like an unknown location, and so
    is another catalog's backup (`core.backups.foreign_reason`: its events are another world's); a store that
    cannot be read still fails as the environment (exit 6); `latest` of a location the store holds no backup
    of is refused (exit 3, BK2).
    """
    if ref == "latest":
        if location is None:
            raise InvalidInput("`latest` needs a location", code="usage")
        found = bk.newest(mine(catalog, backups, location), location)
        if found is None:
            # Not an environment failure: the store answered, and it holds no backup of this location. BK2
            # restores from a backup of A only, as it refuses another location's; plain event recovery from
            # A's neighbours (DR3-DR5) needs none.
            raise Refused(
                f"refused [BK2]: the backup store {backups.roots()[0]} holds no backup of {location}; nothing was "
                "changed",
                code="BK2",
                hint=f"replctl recover location {location}",
            )
        return found
    manifest = backups.manifest(ref)
    if manifest is None:
        raise UnknownName(
            # The store named (masked as every error is, replctl.masking): a wrong --to or backup_store is the
            # likely cause, and "the backup store" alone does not say which one was read.
            f"unknown backup {ref!r}: the backup store {backups.roots()[0]} holds no backup of that id",
            code="unknown-backup",
            hint="list them with: replctl backup list",
        )
    foreign = bk.foreign_reason(manifest, backup_owner(catalog, [manifest]))
    if foreign is not None:
        raise UnknownName(
            f"backup {ref!r} is not a backup of this catalog: {foreign}; its events are another world's, under "
            "identities this catalog gave to others (M3), so it is neither shown, verified nor restored (BK2)",
            code="foreign-backup",
            hint="list this catalog's backups with: replctl backup list",
        )
    return manifest


def show(catalog: Catalog, backups: BackupStore, ref: str) -> BackupShown:
    """`backup show ID`: the whole manifest."""
    return BackupShown(find(catalog, backups, ref))


def verify(
    catalog: Catalog,
    backups: BackupStore,
    refs: list[str],
    *,
    live: Callable[[], tuple[Catalog, LogStore]] | None = None,
) -> BackupChecks:
    """`backup verify [ID...]` (default: every backup): each segment copy against the manifest's sizes and
    digest, then the invariants of rules.md §9 on the backup's own events against its manifest.

    `live` opens the catalog and the log store, only once a backup's files are found damaged: the error's hint
    then says how to repair it (`services.backup_repair.way_out`); without it, a new backup.

    The events are read through the backup store's data plane over its segment copies
    (`BackupStore.copies`): from the backup only, never from the live log. The checks are `log verify`'s
    (`services.logs.log_invariants`): I1, I2, I3, I4, I7 and each segment against its manifest entry. I5 and
    I6 concern progress and topology, which live in the catalog, not in a backup. A backup whose files fail
    their digests is not read further: its events are not the ones the manifest describes.
    """
    chosen = [find(catalog, backups, r) for r in refs] if refs else mine(catalog, backups)
    results = []
    repair = None
    for m in chosen:
        damaged = damaged_copies(backups, m)
        problems = [f"{path}: {why}" for path, why in damaged.items()]
        violations = [] if problems else _invariants(backups.copies(), m)
        for v in violations:
            at = f" at seq {v['seq']}" if v["seq"] is not None else ""
            problems.append(f"violation [{v['invariant']}]{at}: {v['message']}")
        if problems and repair is None and damaged and live is not None:
            # The first damaged backup is the one the error names (`BackupChecks.error`). Without a catalog or
            # log store to read (a lost store), the generic hint: a new backup.
            with suppress(EnvironmentFailure):
                repair = way_out(
                    *live(), m.location, damaged, backups, others=partial(other_backups, catalog, backups, m)
                )
        results.append(BackupCheck(m.id, m.location, tuple(problems), tuple(violations)))
    return BackupChecks(tuple(results), repair)


def other_backups(catalog: Catalog, backups: BackupStore, manifest: bk.Manifest) -> list[bk.Manifest]:
    """This catalog's backups of `manifest`'s location but that one (`backup_repair.way_out` looks among them
    for a whole one that holds what the damaged copies held)."""
    return [m for m in mine(catalog, backups, manifest.location) if m.id != manifest.id]


def _invariants(engine: DataPlane, manifest: bk.Manifest) -> list[dict[str, Any]]:
    segments = [
        Segment(0, manifest.location, s.path, s.seq_lo, s.seq_hi, s.count, s.vt_lub)
        for s in manifest.segments
    ]
    # A manifest written before baselines were recorded: any CVV entry may be one, so I3 can only ask that
    # the stored events and the DVV stay within the CVV (expected = LUB ⊔ DVV ⊔ CVV = CVV).
    baseline = manifest.cvv if manifest.baseline is None else manifest.baseline
    return log_invariants(
        engine,
        segments,
        seq=manifest.seq,
        cvv=manifest.cvv,
        dvv=manifest.dvv,
        baseline=baseline,
        described_by="the manifest",
    )


def prune(
    catalog: Catalog,
    backups: BackupStore,
    location: str | None,
    *,
    keep_last: int | None,
    older_than: str | None,
    now: datetime | None = None,
    require_recoverable: bool = False,
    reason: str | None = None,
    dry_run: bool = False,
) -> PruneOutcome:
    """`backup prune [LOC] (--keep-last N | --older-than DURATION) [--require-recoverable]`: manifests first,
    then the files only they named, so a crash in between leaves unreferenced files, never a backup missing one.

    Before anything is removed, the locations the prune would make unrecoverable (BK3: their newest backup
    goes) are reported in `makes_unrecoverable`, as `delete` does (BK4); with `require_recoverable` (the
    option or the catalog policy) such a prune is refused (exit 3, BK4), in the dry run as in the run.

    One journalled operation holding the backups' lease of every location it may touch (BK1): a backup being
    made reuses files that only its earlier manifests name until its own manifest is written, and a restore
    reads its backup's files; neither may lose one to a prune meanwhile. A backup store that overlaps the log
    store is refused first (exit 2, `check_apart`): its files may be the logs'.

    `--older-than` counts back from `now`, the command's one instant (`AppContext.now`; None: the clock, read
    here, before the leases): a run that waits for its leases removes no backup the dry run or the applied
    plan kept."""
    if (keep_last is None) == (older_than is None):
        raise InvalidInput("give exactly one of --keep-last N or --older-than DURATION", code="usage")
    if keep_last is not None and keep_last < 0:
        raise InvalidInput(f"--keep-last takes N ≥ 0, got {keep_last}", code="bad-number")
    check_apart(backups, "BK1", "nothing was removed")
    age = parse_age(older_than) if older_than is not None else None
    instant = datetime.now(UTC) if now is None else now
    touched = sorted({m.location for m in mine(catalog, backups, location)})

    def body(ctx: OperationContext) -> PruneOutcome:
        # Read again under the leases: what was listed before them may have changed.
        every = backups.manifests()
        ours = bk.of_catalog(every, backup_owner(catalog, every))
        decision = bk.prune(
            [m for m in ours if m.location in touched],
            location=location,
            keep_last=keep_last,
            older_than=age,
            now=instant,
            # Another catalog's backups are never removed, nor a file one of them lists.
            others=[m for m in every if m not in ours],
        )
        with ctx.transaction() as tx:
            state, locations, connections = load_state(tx), tx.locations(), tx.connections()
        hurt = bk.pruned_unrecoverable(state, locations, connections, ours, removing=decision.removed)
        outcome = PruneOutcome(
            dry_run=ctx.dry_run,
            removed=tuple(m.id for m in decision.removed),
            kept=tuple(m.id for m in decision.kept),
            files_removed=tuple(decision.files),
            makes_unrecoverable=tuple(
                {**r.to_json(), "location": r.location, "fix": _keep_newest(r.location)} for r in hurt
            ),
        )
        if hurt and require_recoverable:
            what = "removing the newest backup of " + ", ".join(_names(hurt))
            raise Refused(
                f"refused [BK4]: {_hurt_text(what, hurt)}",
                code="BK4",
                hint=" && ".join(_keep_newest(name) for name in _names(hurt)),
            )
        if not ctx.dry_run:
            for m in decision.removed:
                backups.remove_manifest(m.id)
            for path in decision.files:
                backups.remove_segment(path)
            for name in touched:
                # Under the backups' lease of each, as `backup create` removes them (`remove_set_aside`).
                backups.remove_set_aside(name)
            with ctx.transaction() as tx:
                ctx.step(
                    tx,
                    "prune",
                    {
                        "removed": [m.id for m in decision.removed],
                        "files": len(decision.files),
                        "made_unrecoverable": _names(hurt),
                    },
                )
        return outcome

    return operation(
        catalog,
        command="backup prune",
        args={
            "location": location,
            "keep_last": keep_last,
            "older_than": older_than,
            "require_recoverable": require_recoverable,
        },
        reason=reason,
        resources=[backup_resource(n) for n in touched],
        dry_run=dry_run,
        body=body,
    )


def _names(hurt: list[bk.Recoverability]) -> list[str]:
    return [r.location for r in hurt]


def _hurt_text(what: str, hurt: list[bk.Recoverability]) -> str:
    """BK4's refusal text: what would make which locations unrecoverable, and what each would lose."""
    lost = "; ".join(f"{r.location} would lose {bk.shortfall_text(r.shortfall)}" for r in hurt)
    return f"{what} would make {', '.join(_names(hurt))} unrecoverable ({lost})"


def _keep_newest(name: str) -> str:
    """The prune that keeps `name` recoverable: BK3 starts from its newest backup, and a prune that hurts
    removes it (with --older-than, every older one too), so keeping only that one removes the same others."""
    return f"replctl backup prune {name} --keep-last 1"


def check_location(catalog: Catalog, name: str) -> None:
    """Refuse an unknown location name (exit 2) before reading any backup."""
    with catalog.transaction(readonly=True) as tx:
        get_location(tx, name)


@dataclass(frozen=True)
class DeletionGuard:
    """BK4 for one `delete`: the backups BK3 starts from, and whether a deletion that hurts is refused.

    `required_by` says why it is required when the command itself did not ask (a waiting request that did):
    the refusal names it, so that an operator who gave no option learns where the requirement comes from.
    """

    manifests: tuple[bk.Manifest, ...]
    require: bool
    required_by: str = ""


def check_deletion(
    ctx: OperationContext,
    guard: DeletionGuard,
    loc: Location,
    segments: list[Segment],
    *,
    cut_upto: int,
    doc: dict[str, Any],
    refuse: bool = True,
    delivered: dict[str, VectorTime] | None = None,
    deferred: bool = False,
) -> list[bk.Recoverability]:
    """BK4: report (in `doc["makes_unrecoverable"]`) the locations the cut would make unrecoverable; refuse
    (exit 3) when the guard requires it and `refuse` is on, before anything changed. Returns those locations:
    a retried pending deletion (`refuse=False`) waits instead of failing the run that retries it.

    The DVV after the cut is taken from the segments' LUBs (identities included, RET4), so a straddling
    segment counts whole: the answer errs towards reporting, never towards silence. Dry run and run agree.
    `delivered` (per target, a CVV raise) is what replication has delivered by the time the cut is made: a
    dry run's planned passes, or the targets a deferred cut waits for; the run decides on what it finds.
    `deferred`: the cut is the part of a request that waits for those targets (DEL4); what it would hurt is
    fixed by a backup taken once they hold what it cuts, after a replication.
    """
    hurt: list[bk.Recoverability] = []
    if cut_upto > loc.deleted_upto:
        dropped = [s.vt_lub for s in segments if s.seq_lo <= cut_upto and s.seq_hi > loc.deleted_upto]
        with ctx.transaction() as tx:
            state, locations, connections = load_state(tx), tx.locations(), tx.connections()
        if delivered:
            locations = [
                replace(x, cvv=x.cvv | delivered[x.name]) if x.name in delivered else x for x in locations
            ]
        hurt = bk.made_unrecoverable(
            state,
            locations,
            connections,
            guard.manifests,
            deleting=loc.name,
            dvv_after=loc.dvv.merge(*dropped),
        )
    first = "replctl replicate && " if deferred else ""
    doc["makes_unrecoverable"] = [
        {**r.to_json(), "location": r.location, "fix": f"{first}replctl backup create {r.location}"}
        for r in hurt
    ]
    if hurt and guard.require and refuse:
        what = f"deleting {loc.name} up to {cut_upto}"
        if deferred:
            what += f" (the part that waits for {', '.join(sorted(delivered or {}))}, DEL4)"
        raise Refused(
            f"refused [BK4]: {_hurt_text(what, hurt)}{guard.required_by}",
            code="BK4",
            hint=first + " && ".join(f"replctl backup create {r.location}" for r in hurt),
        )
    return hurt


def withheld_text(loc: Location, cut_upto: int, hurt: list[bk.Recoverability]) -> str:
    """Why a retried pending deletion still waits under BK4, and the backups that let it complete."""
    fix = " && ".join(f"replctl backup create {r.location}" for r in hurt)
    return f"waits [BK4]: {_hurt_text(f'deleting {loc.name} up to {cut_upto}', hurt)}; run: {fix}"
