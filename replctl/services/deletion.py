"""Deletion use cases (rules.md DEL1–DEL4): logical at once, physical as far as every target allows.

Crash safety: the rewritten straddling segment is written first; the segment rows, deleted_upto, DVV and the
pending request then change in one transaction; the files of dropped segments are removed only after it
commits (a crash leaves unreferenced files, which are never read and are collected by `log compact --gc`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from replctl.core import deletion as plan
from replctl.core.journal import PendingDeletion
from replctl.core.model import Location, LocationState, Segment
from replctl.core.outcomes import Completion
from replctl.core.recovery import stored_after_deletion
from replctl.core.retirement import clocks
from replctl.core.vectortime import VectorTime, lub
from replctl.errors import InvalidInput
from replctl.failpoints import hit
from replctl.services.backups import DeletionGuard, check_deletion, withheld_text
from replctl.services.damage import find_damage, refuse_unwritable
from replctl.services.leftovers import remove_after_commit
from replctl.services.lookup import get_location
from replctl.services.operations import OperationContext, location_resource, operation
from replctl.services.ports import Catalog, DataPlane


@dataclass(frozen=True)
class Blocker:
    """A target that holds a physical deletion back (DEL3): it still needs `first_blocked_seq`."""

    target: str
    first_blocked_seq: int


@dataclass(frozen=True)
class DeletionOutcome:
    """`delete`: how far the log is deleted logically and physically, and what still waits (DEL1–DEL4).

    A dry run reports the state the run leaves, with `would_delete` the seqs it would cut physically.
    `makes_unrecoverable` (BK4) is None when the backups check did not run (a logical deletion, no cut).
    `none_older` says that `--older-than` found no stored event older than its cutoff and no earlier
    request waits, so the request changes nothing (its text says so; --json shows it as `requested_upto`).
    A logical request reports an earlier physical one that still waits as `pending` up to `pending_upto`.
    """

    location: str
    requested_upto: int
    logical: bool
    dry_run: bool
    logical_deleted_upto: int
    deleted_upto: int
    dvv: dict[str, int]
    pending: bool
    pending_upto: int | None
    blocked_by: tuple[Blocker, ...]
    would_delete: dict[str, int] | None
    makes_unrecoverable: tuple[dict[str, Any], ...] | None = None
    none_older: bool = False

    @classmethod
    def of(cls, doc: dict[str, Any]) -> DeletionOutcome:
        """The outcome of one request as `delete_in` reports it (also to the retries after replication)."""
        unknown = set(doc) - _DELETION_KEYS
        if unknown:  # a key `delete_in` added but the outcome would drop: a bug, never a silent --json change
            raise ValueError(f"deletion report keys without a place in DeletionOutcome: {sorted(unknown)}")
        hurt = doc.get("makes_unrecoverable")
        return cls(
            location=doc["location"],
            requested_upto=doc["requested_upto"],
            logical=doc["logical"],
            dry_run=doc["dry_run"],
            logical_deleted_upto=doc["logical_deleted_upto"],
            deleted_upto=doc["deleted_upto"],
            dvv=doc["dvv"],
            pending=doc["pending"],
            pending_upto=doc["pending_upto"],
            blocked_by=tuple(Blocker(b["target"], b["first_blocked_seq"]) for b in doc["blocked_by"]),
            would_delete=doc["would_delete"],
            makes_unrecoverable=None if hurt is None else tuple(hurt),
        )

    @property
    def completion(self) -> Completion:
        """Incomplete (exit 5) while the physical deletion this request asked waits for a target (DEL4 retries
        it). A logical request is complete at once (DEL1): an earlier physical request it reports as `pending`
        is not its own to finish."""
        waits = self.pending and not self.dry_run and not self.logical
        return Completion.INCOMPLETE if waits else Completion.COMPLETE

    def to_json(self) -> dict[str, Any]:
        """`delete --json` (cli.md)."""
        doc: dict[str, Any] = {
            "ok": True,
            "location": self.location,
            "requested_upto": self.requested_upto,
            "logical": self.logical,
            "dry_run": self.dry_run,
            "logical_deleted_upto": self.logical_deleted_upto,
            "deleted_upto": self.deleted_upto,
            "dvv": self.dvv,
            "pending": self.pending,
            "pending_upto": self.pending_upto,
            "blocked_by": [
                {"target": b.target, "first_blocked_seq": b.first_blocked_seq} for b in self.blocked_by
            ],
            "would_delete": self.would_delete,
        }
        if self.makes_unrecoverable is not None:
            doc["makes_unrecoverable"] = list(self.makes_unrecoverable)
        return doc


_DELETION_KEYS = frozenset(DeletionOutcome.__dataclass_fields__)


def _report_cut(doc: dict[str, Any], cut: plan.Cut, cut_bound: int, *, pending: bool) -> None:
    """What `delete --json` says of a decided cut: whether and up to where it waits, and for whom."""
    doc["pending"] = pending
    doc["pending_upto"] = cut_bound if pending else None
    doc["blocked_by"] = [{"target": t, "first_blocked_seq": s} for t, s in cut.blocked_by]


def delete_in(
    ctx: OperationContext,
    engine: DataPlane,
    name: str,
    requested_upto: int,
    *,
    logical: bool,
    retry: bool = False,
    guard: DeletionGuard | None = None,
    assume_progress: dict[str, int] | None = None,
) -> dict[str, Any]:
    """One deletion request inside an operation (also used to retry pending ones after replication).

    `guard` (the `delete` command's) reports and, if required, refuses a cut that hurts recoverability (BK4).
    `assume_progress` (a `replicate` dry run only, `retry_pending`): per target, the progress a planned pass
    reaches for sure before the run retries; the cut is decided as the run will decide it then (DEL3).
    """
    with ctx.transaction() as tx:
        loc = get_location(tx, name)
        locations = {x.name: x for x in tx.locations()}
        # A run decides on the progress it finds, never on a planned one.
        targets = plan.with_progress(
            plan.current_targets(name, tx.connections(), locations),
            assume_progress if ctx.dry_run else None,
        )
        segments = tx.segments(name)
        target_segments = {t.name: tx.segments(t.name) for t in targets}
        waiting = tx.pending_deletion(name)
    new_logical = plan.logical_upto(loc, requested_upto)
    target_upto = plan.pending_target(requested_upto, waiting.requested_upto if waiting else None)
    guard = _request_guard(guard, waiting)
    doc: dict[str, Any] = {
        "location": name,
        "requested_upto": requested_upto,
        "logical": logical,
        "dry_run": ctx.dry_run,
        "logical_deleted_upto": new_logical,
        "deleted_upto": loc.deleted_upto,
        "dvv": loc.dvv.to_dict(),
        "pending": False,
        "pending_upto": None,
        "blocked_by": [],
        "would_delete": None,
    }
    if retry and find_damage(engine.store, segments):
        # A retry after replication leaves a damaged log's deletion pending: it decides nothing from a
        # partial log (DR0) and does not stop the run that retries it.
        doc.update(pending=True, pending_upto=target_upto, damaged=True)
        return doc
    refuse_unwritable(engine.store, loc, segments)
    if logical:
        _delete_logically(ctx, loc, new_logical)
        return _with_waiting(doc, waiting)

    cut_bound = plan.bound(loc, target_upto)
    cut = _decide_cut(engine, loc, targets, segments, cut_bound, target_segments=target_segments)
    pending = cut.upto < cut_bound
    _report_cut(doc, cut, cut_bound, pending=pending)
    if guard is not None and _guard(
        ctx,
        guard,
        loc,
        segments,
        cut=cut,
        cut_bound=cut_bound,
        doc=doc,
        retry=retry,
        assume_progress=assume_progress,
    ):
        return doc
    if ctx.dry_run:
        if cut.upto > loc.deleted_upto:
            # Issue 14: the dry run reports the state the run leaves, not the state before it.
            doc["would_delete"] = {"from": loc.deleted_upto + 1, "upto": cut.upto}
            doc["deleted_upto"] = cut.upto
            doc["dvv"] = _planned_dvv(engine, loc, segments, cut.upto).to_dict()
        return doc
    try:
        updated = _apply_cut(
            ctx, engine, loc=loc, targets=targets, segments=segments, cut=cut, new_logical=new_logical
        )
    except TargetsChanged as changed:
        # DEL3: a target appeared while the cut was decided; nothing was cut, the request waits for it.
        updated, pending, deferred = loc, True, True
        cut = plan.Cut(loc.deleted_upto, tuple((t, loc.deleted_upto + 1) for t in changed.names))
        _report_cut(doc, cut, cut_bound, pending=True)
    else:
        deferred = False
    with ctx.transaction() as tx:
        if deferred:
            # The logical deletion is at once (DEL1) even when the physical one waits.
            current = get_location(tx, name)
            updated = replace(current, logical_deleted_upto=max(current.logical_deleted_upto, new_logical))
            if updated != current:
                tx.put_location(updated)
                ctx.step(tx, "logical-delete", {"upto": updated.logical_deleted_upto})
        if pending:
            # DEL1: the request covers the log as it is now; events appended later are never part of it.
            # BK4 as the request was asked (the option, or the policy then): a retry keeps what is recorded
            # and does not make a request guarded for good because the retrying run's policy is on.
            guarded = waiting is not None and waiting.require_recoverable
            tx.put_pending_deletion(
                name,
                cut_bound,
                [t for t, _ in cut.blocked_by],
                require_recoverable=guarded if retry else guard is not None and guard.require,
            )
        else:
            tx.clear_pending_deletion(name)
    if pending and not retry:  # a retry after replication leaves the replication's own outcome alone
        ctx.mark_incomplete()
    return {
        **doc,
        "logical_deleted_upto": updated.logical_deleted_upto,
        "deleted_upto": updated.deleted_upto,
        "dvv": updated.dvv.to_dict(),
    }


def _request_guard(guard: DeletionGuard | None, waiting: PendingDeletion | None) -> DeletionGuard | None:
    """BK4's guard for a request that joins (or retries) the waiting one: a request once asked under the guard
    (`--require-recoverable` or the policy, recorded with it) stays under it until it completes, whatever a
    later command or run asks; the stricter wins, so a plain `delete` that extends it is guarded too.

    A caller without a guard (no backups read) then judges BK3 from no backup at all, which errs towards
    holding the cut back, never towards cutting what the request promised to keep recoverable.
    """
    if waiting is None or not waiting.require_recoverable:
        return guard
    if guard is None:
        return DeletionGuard((), True)
    if guard.require:
        return guard
    joined = (
        f"; it joins the waiting deletion of {waiting.location} up to {waiting.requested_upto}, which was asked "
        "to keep every location recoverable"
    )
    return replace(guard, require=True, required_by=joined)


def _guard(
    ctx: OperationContext,
    guard: DeletionGuard,
    loc: Location,
    segments: list[Segment],
    *,
    cut: plan.Cut,
    cut_bound: int,
    doc: dict[str, Any],
    retry: bool,
    assume_progress: dict[str, int] | None,
) -> bool:
    """BK4 for one request (`delete_in`): report in `doc`, refuse the `delete` command's cut (exit 3), and
    tell whether a retried pending deletion must keep waiting (True) instead of cutting."""
    if retry:
        # A dry run decides BK4 on what its planned passes deliver first, as the run finds it after them.
        delivered = _delivered(segments, assume_progress) if ctx.dry_run and assume_progress else None
        hurt = check_deletion(
            ctx, guard, loc, segments, cut_upto=cut.upto, doc=doc, refuse=False, delivered=delivered
        )
        if hurt and guard.require:
            # BK4 under the policy: the retry cuts nothing and the request keeps waiting, as it was; the
            # replication run that retried it is not refused for it (a backup of those locations frees it).
            doc.update(pending=True, pending_upto=cut_bound, reason=withheld_text(loc, cut.upto, hurt))
            return True
    else:
        check_deletion(ctx, guard, loc, segments, cut_upto=cut.upto, doc=doc)
        if cut.upto < cut_bound:
            # BK4 judges the whole request as it completes (its waiting part runs at a later replicate, once
            # the blockers hold what it cuts), not only what runs now: reported, and refused when required,
            # so that `--require-recoverable` holds for the part that waits as well.
            waits_for = {t: cut_bound for t, _ in cut.blocked_by}
            now = doc["makes_unrecoverable"]
            check_deletion(
                ctx,
                guard,
                loc,
                segments,
                cut_upto=cut_bound,
                doc=doc,
                delivered=_delivered(segments, waits_for),
                deferred=True,
            )
            later = [
                h for h in doc["makes_unrecoverable"] if h["location"] not in {n["location"] for n in now}
            ]
            doc["makes_unrecoverable"] = sorted([*now, *later], key=lambda h: h["location"])
    return False


def _delivered(segments: list[Segment], reach: dict[str, int]) -> dict[str, VectorTime]:
    """Per target, the most it holds of the source's log once replicated up to `reach[target]`: the LUB of
    the segments it reaches (a straddling one whole), so that BK4 errs towards reporting, never silence."""
    return {t: lub(s.vt_lub for s in segments if s.seq_lo <= upto) for t, upto in reach.items()}


def _with_waiting(doc: dict[str, Any], waiting: PendingDeletion | None) -> dict[str, Any]:
    """A logical request's report (`doc`) saying whether an earlier physical request still waits (DEL4).

    The logical request neither joins nor clears it, but the operator is told it is there and up to where, as
    `status` lists it. It stays complete: this request did all it asked (`DeletionOutcome.completion`).
    """
    if waiting is None:
        return doc
    return {**doc, "pending": True, "pending_upto": waiting.requested_upto}


def _delete_logically(ctx: OperationContext, loc: Location, new_logical: int) -> None:
    """DEL1: hide the prefix from local reading at once (`--logical`); nothing else changes."""
    if ctx.dry_run or new_logical == loc.logical_deleted_upto:
        return
    with ctx.transaction() as tx:
        current = get_location(tx, loc.name)
        tx.put_location(replace(current, logical_deleted_upto=new_logical))
        ctx.step(tx, "logical-delete", {"upto": new_logical})


def _decide_cut(
    engine: DataPlane,
    loc: Location,
    targets: list[plan.Target],
    segments: list[Segment],
    cut_bound: int,
    *,
    target_segments: dict[str, list[Segment]],
) -> plan.Cut:
    """DEL3/DEL4: the catalog clears what it can; one scan answers for the remaining targets.

    DR0: a damaged target's CVV and progress claim events its store may have lost; until it is recovered
    (which recomputes both from what survived, DR1/DR2) it holds back everything not yet deleted.
    """
    damaged = {t.name for t in targets if find_damage(engine.store, target_segments[t.name])}
    if damaged:
        held = dict.fromkeys(damaged, loc.deleted_upto + 1)
        others = [t for t in targets if t.name not in damaged]
        cut = _decide_cut(engine, loc, others, segments, cut_bound, target_segments=target_segments)
        return plan.safe_prefix(loc.deleted_upto, cut_bound, {**dict(cut.blocked_by), **held})
    unclear = plan.targets_to_scan(targets, segments, loc.deleted_upto, cut_bound)
    first_needed: dict[str, int | None] = {}
    if unclear and cut_bound > loc.deleted_upto:
        at_stake = [s for s in segments if s.seq_hi > loc.deleted_upto and s.seq_lo <= cut_bound]
        first_needed = engine.first_needed(
            at_stake,
            upto=cut_bound,
            targets={t.name: (t.progress, t.cvv.to_dict()) for t in unclear},
        )
    return plan.safe_prefix(loc.deleted_upto, cut_bound, first_needed)


def _planned_dvv(engine: DataPlane, loc: Location, segments: list[Segment], upto: int) -> VectorTime:
    """DEL2 as the run will compute it for a cut at `upto`: the dropped segments' LUBs from their rows, and the
    straddling segment's dropped part by one scan of that segment (the run learns it from its rewrite)."""
    segment_cut = plan.cut_segments(segments, upto)
    dvv = loc.dvv | lub(s.vt_lub for s in segment_cut.drop)
    if segment_cut.straddle is not None:
        dvv = dvv | VectorTime(engine.dropped_lub(segment_cut.straddle, upto=upto))
    return dvv


class TargetsChanged(Exception):
    """The source's targets changed between a cut's decision and its commit (issue 19, DEL3)."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(", ".join(names))
        self.names = names


def _apply_cut(
    ctx: OperationContext,
    engine: DataPlane,
    *,
    loc: Location,
    targets: list[plan.Target],
    segments: list[Segment],
    cut: plan.Cut,
    new_logical: int,
) -> Location:
    """Drop whole segments below the cut, rewrite the straddling one, commit, then remove the files.

    The targets are read again inside the committing transaction: a connection added from the source after
    the cut was decided (`topology add`, which does not lease the source) raises `TargetsChanged` and
    nothing commits, so that no deletion drops what a target it never considered still needs (DEL3). The
    catalog serialises writing transactions (SQLite's write lock, PostgreSQL's advisory one), so an addition
    committing meanwhile either is seen here or, after this commit, sees the new DVV (ADD1).
    """
    segment_cut = plan.cut_segments(segments, cut.upto)
    dropped_lub = lub(s.vt_lub for s in segment_cut.drop)
    kept, out_rel = None, None
    if segment_cut.straddle is not None:
        out_rel = engine.store.new_segment_path(loc.name, cut.upto + 1)
        with ctx.transaction() as tx:
            clk = clocks(tx.locations())
        rewritten = engine.rewrite_from(
            segment_cut.straddle,
            cut.upto + 1,
            out_rel,
            keys=clk.vt_keys(loc.cvv),
            identity_origins=clk.identity_origins,
        )
        kept = rewritten.kept
        if rewritten.dropped is not None:
            dropped_lub = dropped_lub | VectorTime(rewritten.dropped.vt_lub)
    hit("delete.after-rewrite")
    # The survivors' inventory reads and hashes their files: before the write lock, not under it.
    files = engine.record_files(out_rel) if out_rel is not None else None
    gone = [*segment_cut.drop, *([segment_cut.straddle] if segment_cut.straddle else [])]
    try:
        with ctx.transaction() as tx:
            current = get_location(tx, loc.name)
            now = plan.current_targets(loc.name, tx.connections(), {x.name: x for x in tx.locations()})
            unforeseen = plan.unforeseen_targets(targets, now)
            if unforeseen:
                raise TargetsChanged(unforeseen)
            hit("delete.in-commit")
            tx.delete_segments([s.id for s in gone])
            if kept is not None and out_rel is not None:
                tx.add_written_segment(loc.name, out_rel, kept, ctx.id, files)
            # DEL2: DVV is the LUB of every physically deleted vt ⊔ identity (RET4).
            updated = replace(
                current,
                deleted_upto=max(current.deleted_upto, cut.upto),
                logical_deleted_upto=max(current.logical_deleted_upto, new_logical),
                dvv=current.dvv | dropped_lub,
                baseline_stored=stored_after_deletion(current, dropped_lub),
            )
            tx.put_location(updated)
            ctx.step(
                tx,
                "physical-delete",
                {"upto": updated.deleted_upto, "segments_dropped": len(gone), "rewritten": out_rel},
            )
    except TargetsChanged:
        # Never catalogued: removed at once where the store allows, else collected by `log compact --gc`.
        if out_rel is not None and engine.store.is_local:
            engine.store.remove(out_rel)
        raise
    hit("delete.after-commit")
    remove_after_commit(
        engine.store,
        loc.name,
        [seg.path for seg in gone],
        committed=f"delete {loc.name}: the deletion up to seq {updated.deleted_upto} is committed",
        consequence="the deleted events' bytes stay on the storage until those folders are removed",
    )
    return updated


def delete(
    catalog: Catalog,
    engine: DataPlane,
    name: str,
    *,
    upto: int | None,
    older_than: str | None = None,
    now: datetime | None = None,
    logical: bool = False,
    reason: str | None = None,
    dry_run: bool = False,
    guard: DeletionGuard | None = None,
) -> DeletionOutcome:
    """`delete LOC --upto SEQ [--logical]` or `--older-than 30d`; `guard` as for `delete_in` (BK4).

    `--older-than` counts back from `now`, the command's one instant (`AppContext.now`; None: the clock, read
    here, before the leases are taken): never from the clock when the run begins, which a wait for the leases
    would move past what the dry run or the applied plan showed.
    """
    if (upto is None) == (older_than is None):
        raise InvalidInput(
            "give exactly one of --upto SEQ or --older-than AGE",
            code="bad-option",
            hint=f"replctl delete {name} --upto 100",
        )
    if upto is not None and upto < 0:
        raise InvalidInput(f"--upto takes a seq ≥ 0, got {upto}", code="bad-number")
    instant = datetime.now(UTC) if now is None else now

    def body(ctx: OperationContext) -> DeletionOutcome:
        requested, none_older = upto, False
        if requested is None:
            assert older_than is not None
            age = plan.parse_age(older_than)
            with ctx.transaction() as tx:
                loc = get_location(tx, name)
                segments = tx.segments(name)
                waiting = tx.pending_deletion(name)
            found = engine.last_seq_emitted_before(segments, instant - age)
            requested = max(found or 0, loc.deleted_upto)
            # Nothing older and nothing waiting (DEL4 would retry it): the request below changes nothing.
            none_older = found is None and waiting is None
        out = DeletionOutcome.of(delete_in(ctx, engine, name, requested, logical=logical, guard=guard))
        return replace(out, none_older=True) if none_older else out

    return operation(
        catalog,
        command="delete",
        args={"location": name, "upto": upto, "older_than": older_than, "logical": logical},
        reason=reason,
        resources=[location_resource(name)],
        dry_run=dry_run,
        body=body,
    )


def retry_pending(
    ctx: OperationContext,
    engine: DataPlane,
    only: set[str] | None = None,
    outlook: plan.PassOutlook | None = None,
    guard: DeletionGuard | None = None,
) -> list[dict[str, Any]]:
    """DEL4: retry pending physical deletions after a replication run (at `only` locations, if given: the
    ones the operation leased).

    `guard` applies BK4 to each retry as the `delete` command does to its request: a retry that would make
    a location unrecoverable is reported, and under the policy it keeps waiting (`reason`), in the dry run
    as in the run.

    A dry run passes the `outlook` of its planned passes: each retry is decided, by the same `delete_in`, on
    the progress those passes reach for sure. It says which recorded blockers the passes satisfy
    (`satisfied_by`), and, when a target still holding it back has its log written by the run first, that
    the retry is decided only by running (`decided: false`, `depends_on`), as a pass reports `depends`.
    """
    with ctx.transaction() as tx:
        # DR0: a recovering location's deletion waits for the recovery's end, as every write to it does; the
        # replication run that retries the others is not refused for it.
        recovering = {loc.name for loc in tx.locations() if loc.state is LocationState.RECOVERING}
        pending = [
            p
            for p in tx.pending_deletions()
            if (only is None or p.location in only) and p.location not in recovering
        ]
    if outlook is None:
        return [
            delete_in(ctx, engine, p.location, p.requested_upto, logical=False, retry=True, guard=guard)
            for p in pending
        ]
    docs = []
    for p in pending:
        reach = outlook.assumed_progress(p.location)
        doc = delete_in(
            ctx,
            engine,
            p.location,
            p.requested_upto,
            logical=False,
            retry=True,
            guard=guard,
            assume_progress=reach,
        )
        blocking = [b["target"] for b in doc["blocked_by"]]
        depends = outlook.depends_on(blocking)
        doc["satisfied_by"] = [
            {"target": t, "pass": f"{p.location}→{t}", "progress": reach[t]}
            for t in sorted(set(p.blocked_by) - set(blocking))
            if t in reach
        ]
        doc["decided"] = not depends
        doc["depends_on"] = depends
        if depends and "reason" not in doc:  # a BK4 wait (`_guard`) is the reason that stands
            doc["reason"] = (
                f"decided once the run has written to {', '.join(depends)} (DEL4); at least what is shown"
            )
        docs.append(doc)
    return docs
