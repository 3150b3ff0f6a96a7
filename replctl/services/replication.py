"""Replication use cases: one pass X→Y, or every connection until nothing changes (REP1–REP3).

Crash safety (REP3): the job writes the new segment files first; the catalog row, the target's seq and CVV and
the progress then commit in one transaction. A crash in between leaves an unreferenced segment that is never
read; the re-run starts from the old progress and CF1 makes it converge to the same logs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from replctl.core.damage import copy_differs
from replctl.core.deletion import PassOutlook, changed_logs
from replctl.core.jobs import PassResult, PassSpec, SegmentStats
from replctl.core.model import Connection, ConnectionState, Location, LocationState, Segment, SegmentFile
from replctl.core.outcomes import Completion
from replctl.core.planned_rounds import PlannedRounds
from replctl.core.recovery import counted_after_write
from replctl.core.replication import PassAction, PassPlan, admission_refuses, admission_to_check, plan_pass
from replctl.core.retirement import clocks
from replctl.core.topology_rules import admission_projection
from replctl.core.vectortime import VectorTime
from replctl.errors import BadFilter, DamagedLog, EnvironmentFailure, LockHeld, UnknownName
from replctl.failpoints import hit
from replctl.filterexpr import check_stored
from replctl.services.backups import DeletionGuard
from replctl.services.damage import find_damage, refuse_damaged, refuse_unwritable
from replctl.services.deletion import retry_pending
from replctl.services.lookup import get_location
from replctl.services.operations import OperationContext, location_resource, operation
from replctl.services.ports import Catalog, CatalogTransaction, DataPlane
from replctl.services.topology_state import load_state

MAX_ROUNDS = 1000


# The action of a pass that waits because its source or target log is damaged (DR0, `services.damage`).
DAMAGED = "damaged"


@dataclass(frozen=True)
class PassReport:
    """One pass, as `replicate --json` reports it.

    A dry run's pass that would read events (`would-run`) or waits for an earlier one (`depends`) has its
    counts as None (JSON null): they are known only by running the causality filter (CF1) and the connection
    filter, and a 0 there was a promise the run broke (finding 5). Its `progress` is the one the run reaches
    when the plan tells (REP2), else None too.
    """

    source: str
    target: str
    state: str
    action: str
    examined: int | None = 0
    written: int | None = 0
    skipped_causal: int | None = 0
    skipped_filter: int | None = 0
    blocked_at: int | None = None
    progress: int | None = 0
    reason: str | None = None
    # Not in the JSON: the progress the run's pass reaches for sure, as far as the plan tells (a dry run's
    # deletion retries are decided on it, DEL4); None when only running tells.
    reaches: int | None = None
    # Not in the JSON: the pass waits for its target's recovery to end (DR0), as one at a damaged log does; the
    # run is incomplete (exit 5) until `recover location` finishes it.
    awaits_recovery: bool = False

    @property
    def changed(self) -> bool:
        """Whether the pass changed anything (progress, events or state)."""
        return bool(self.written) or self.action in ("activated", "advanced")

    def to_json(self, round_number: int = 1) -> dict[str, Any]:
        """The cli.md shape; `round_number` is the round of a full `replicate` the pass ran in (1 for one
        connection), so that a connection seen again in a later round is told apart (issue 18)."""
        return {
            "round": round_number,
            "source": self.source,
            "target": self.target,
            "state": self.state,
            "action": self.action,
            "examined": self.examined,
            "written": self.written,
            "skipped_causal": self.skipped_causal,
            "skipped_filter": self.skipped_filter,
            "blocked_at": self.blocked_at,
            "progress": self.progress,
            "reason": self.reason,
        }


# Issue 14: a connection whose filter failed is marked failed, or waits at a damaged log (DR0), while the others
# ran. Issue 19: so is a pass a concurrent topology change discarded, or one whose locations another operation
# holds. Each leaves the run incomplete (exit 5): a re-run finishes it. A pass into a recovering location waits
# for `recover location` as one at a damaged log does (`PassReport.awaits_recovery`), and is incomplete too.
UNFINISHED = frozenset({"failed", DAMAGED, "discarded", "skipped"})


@dataclass(frozen=True)
class ReplicationOutcome:
    """`replicate`: its passes, each with the round it ran in (1 for one connection), and the pending
    deletions retried after them (DEL4, each as `delete --json` reports it plus the retry's own keys)."""

    dry_run: bool
    passes: tuple[tuple[int, PassReport], ...]
    deletions: tuple[dict[str, Any], ...]

    @property
    def completion(self) -> Completion:
        """Incomplete when a pass did not finish (`UNFINISHED`); a dry run leaves nothing unfinished."""
        unfinished = any(report.action in UNFINISHED or report.awaits_recovery for _, report in self.passes)
        return Completion.INCOMPLETE if unfinished and not self.dry_run else Completion.COMPLETE

    def to_json(self) -> dict[str, Any]:
        """`replicate --json` (cli.md)."""
        return {
            "ok": True,
            "dry_run": self.dry_run,
            "passes": [report.to_json(number) for number, report in self.passes],
            "deletions": list(self.deletions),
        }


class ConnectionChanged(Exception):
    """The connection row changed between a pass's plan and its commit: a concurrent topology change won."""

    def __init__(self, current: Connection | None) -> None:
        super().__init__("connection changed")
        self.current = current


def run_pass(
    ctx: OperationContext,
    engine: DataPlane,
    source_name: str,
    target_name: str,
    *,
    recovery_filter: str | None = None,
    recovery: bool = False,
    damage_waits: bool = True,
) -> PassReport:
    """Plan and, unless dry, execute one pass; commits in one transaction.

    Damage the pass's read finds (DamagedLog) makes it wait like damage the census finds (action
    `damaged`), or, without `damage_waits`, is raised.

    A recovery pass (DR4) reads with `recovery_filter` (DR3: none, or the filter OR-ed with `origin = A`)
    whatever the connection's state, and leaves the connection active. A pass whose connection was changed
    or removed meanwhile is discarded (issue 19): the operation is incomplete (exit 5) and a re-run replans.
    """
    try:
        return _run_pass(
            ctx, engine, source_name, target_name, recovery_filter=recovery_filter, recovery=recovery
        )
    except DamagedLog as damaged:
        if not damage_waits:
            raise
        # Found by the pass's own read (issue 19: a file lost or changed after the census): nothing was
        # written or committed; the pass waits for the recovery as one the census stopped does (DR0).
        with ctx.transaction() as tx:
            conn = tx.connection(source_name, target_name)
        return PassReport(
            source_name,
            target_name,
            conn.state.value if conn is not None else ConnectionState.REMOVED.value,
            DAMAGED,
            progress=conn.progress if conn is not None else 0,
            reason=f"waits: {damaged.message}; run: replctl recover location {damaged.location}",
        )
    except ConnectionChanged as changed:
        ctx.mark_incomplete(again=f"replctl replicate {source_name} {target_name}")
        now = changed.current
        return PassReport(
            source_name,
            target_name,
            now.state.value if now is not None else ConnectionState.REMOVED.value,
            "discarded",
            progress=now.progress if now is not None else 0,
            reason=(
                f"{source_name}→{target_name} was changed by another operation during the pass (a filter "
                f"change or removal wins); the pass's result was discarded; re-run: "
                f"replctl replicate {source_name} {target_name}"
            ),
        )


def _compare_and_set(tx: CatalogTransaction, planned: Connection) -> None:
    """Issue 19: a pass commits only over the connection row it planned with.

    The row is read again, locked, inside the committing transaction and compared with the one read at plan
    time; any difference (a filter set or cleared, the connection removed or re-added) means another
    operation changed it after the pass read it, and that change must not be overwritten by the pass's stale
    copy. Comparing the content needs no version column.
    """
    current = tx.connection(planned.source, planned.target, for_update=True)
    if current != planned:
        raise ConnectionChanged(current)
    hit("replicate.in-commit")


def _discard(engine: DataPlane, paths: list[str]) -> None:
    """Remove files a discarded pass wrote (never catalogued); elsewhere `log compact --gc` collects them."""
    if engine.store.is_local:
        for path in paths:
            engine.store.remove(path)


def _run_pass(
    ctx: OperationContext,
    engine: DataPlane,
    source_name: str,
    target_name: str,
    *,
    recovery_filter: str | None,
    recovery: bool,
) -> PassReport:
    with ctx.transaction() as tx:
        conn = tx.connection(source_name, target_name)
        if conn is None or not conn.current:
            raise UnknownName(
                f"no current connection {source_name}→{target_name}",
                code="unknown-connection",
                hint=f"add it: replctl topology add {source_name} {target_name}",
            )
        source, target = get_location(tx, source_name), get_location(tx, target_name)
        clk = clocks(tx.locations())
        segments = tx.segments(source_name)
        target_segments = tx.segments(target_name)
        projection = sorted(admission_projection(load_state(tx), source_name, target_name))
        # RFC2: only a projection that some event the pass reads can exceed costs a scan (and rules out the copy).
        admission = list(admission_to_check(projection, segments, conn, target.cvv))
    # A failed connection was active, or had just met ADD1, when its filter failed (`_fail`): it is planned as
    # active and stays failed until a pass runs its filter without failing, or the filter is changed.
    was_failed = conn.state is ConnectionState.FAILED and not recovery
    damaged = _damaged_end(engine, source_name, segments, target_name, None if recovery else target_segments)
    if damaged is not None:
        # DR0: a pass neither reads a damaged log (its CVV and progress would rest on a partial read) nor
        # writes into one (the next recovery would drop what it wrote); it waits for `recover location`.
        reason = f"waits: {damaged}'s log is damaged (DR0); run: replctl recover location {damaged}"
        plan = PassPlan(PassAction.WAIT, False, (), conn.progress, reason)
    else:
        target_empty = not recovery and not target_segments and engine.store.is_local
        plan = plan_pass(
            source,
            target,
            replace(conn, state=ConnectionState.ACTIVE) if was_failed else conn,
            segments,
            recovery=recovery,
            admission=bool(admission),
            target_empty=target_empty,
            first_stored=_first_stored(engine, source, target, segments) if target_empty else None,
        )
    state = ConnectionState.ACTIVE.value if plan.activate else conn.state.value
    base = PassReport(source_name, target_name, state, "", progress=conn.progress)
    if plan.action in (PassAction.WAIT, PassAction.BLOCKED):
        if not ctx.dry_run and plan.reason != conn.reason:
            with ctx.transaction() as tx:
                _compare_and_set(tx, conn)
                tx.put_connection(replace(conn, reason=plan.reason))
        action = DAMAGED if damaged is not None else plan.action.value
        return replace(
            base,
            action=action,
            progress=conn.progress,
            reason=plan.reason,
            awaits_recovery=not recovery and target.state is LocationState.RECOVERING,
        )
    if plan.action in (PassAction.NOTHING_NEW, PassAction.ALL_KNOWN):
        advanced = plan.new_progress != conn.progress
        # A pass that ran clears the reason an earlier waiting pass stored (it no longer waits).
        if not ctx.dry_run and (advanced or plan.activate or conn.reason is not None):
            with ctx.transaction() as tx:
                _commit(ctx, tx, conn, plan.activate, plan.new_progress)
        action = "advanced" if advanced else ("activated" if plan.activate else plan.action.value)
        # REP1 (1): the events past the progress are examined and skipped as held, although no job reads them.
        return replace(
            base,
            action=action,
            examined=plan.skipped,
            skipped_causal=plan.skipped,
            progress=plan.new_progress,
            reaches=plan.new_progress,
        )
    failure = _known_filter_failure(
        ctx, engine, conn, plan, target, recovery=bool(recovery), admission=admission
    )
    if failure is None and ctx.dry_run:
        return _planned(base, plan, blockable=bool(admission))
    if failure is None and plan.action is PassAction.COPY:
        return _copy(ctx, engine, conn, plan, base)

    out_rel = engine.store.new_segment_path(target_name, target.seq + 1)
    job = failure or _replicate_job(
        engine,
        conn,
        PassSpec(
            source_segments=list(plan.segments),
            progress=conn.progress,
            target_cvv=target.cvv.to_dict(),
            filter_sql=recovery_filter if recovery else conn.filter,
            admission=admission,
            target_seq=target.seq,
            out_rel=out_rel,
            source_keys=clk.vt_keys(source.cvv),
            identity_origins=clk.identity_origins,
            source=conn.source,
            target=target_name,
        ),
    )
    if isinstance(job, str):
        return _fail(ctx, conn, base, job)
    if projection and not admission:
        _check_skipped_admission(engine, out_rel, job.segment, projection, target.cvv)
    hit("replicate.after-write")  # segment files written, catalog not yet: they must stay unread
    try:
        return _commit_run(
            ctx,
            conn,
            activate=plan.activate or was_failed,
            target=target,
            out_rel=out_rel,
            files=engine.record_files(out_rel),
            result=job,
            base=base,
        )
    except ConnectionChanged:
        _discard(engine, [out_rel])
        raise


def _planned(base: PassReport, plan: PassPlan, *, blockable: bool) -> PassReport:
    """A dry run's report of a pass that reads or copies events.

    A copy takes the planned segments whole, so the dry run reports what the run will (issue 14); a pass
    that reads events learns its counts only by reading them: `would-run`, counts unknown (None, finding 5).
    Unless an RFC2 admission check may block it (`blockable`), it reads the source's log to the end of the
    planned segments (REP2: progress over written, skipped and filtered events alike): that it `reaches`, and
    that is its progress; a blockable pass's progress is unknown too.
    """
    if plan.action is PassAction.COPY:
        count = sum(seg.count for seg in plan.segments)
        return replace(
            base,
            state=ConnectionState.ACTIVE.value,
            action="would-copy",
            examined=count,
            written=count,
            progress=plan.new_progress,
            reaches=plan.new_progress,
        )
    end = None if blockable else max(seg.seq_hi for seg in plan.segments)
    return replace(base, action="would-run", reaches=end, progress=end, **_UNKNOWN_COUNTS)


# A dry run's counts of a pass that reads events: only running the filters (CF1, the connection's) knows them.
_UNKNOWN_COUNTS: dict[str, Any] = dict.fromkeys(("examined", "written", "skipped_causal", "skipped_filter"))


def _damaged_end(
    engine: DataPlane,
    source: str,
    source_segments: list[Segment],
    target: str,
    target_segments: list[Segment] | None,
) -> str | None:
    """The end of a pass whose log is damaged (the census, `services.damage`); None when both are whole."""
    if find_damage(engine.store, source_segments):
        return source
    if target_segments is not None and find_damage(engine.store, target_segments):
        return target
    return None


def _known_filter_failure(
    ctx: OperationContext,
    engine: DataPlane,
    conn: Connection,
    plan: PassPlan,
    target: Location,
    *,
    recovery: bool,
    admission: list[str],
) -> str | None:
    """Why the pass fails on the connection's filter, known before it runs: a stored filter refused when read
    (issue 19), or, in a dry run, a filter that fails on the events the pass reads. None for a recovery's pass,
    whose filter (DR3) is the recovery's."""
    if recovery:
        return None
    stored = _stored_filter_failure(conn)
    if stored is None and ctx.dry_run:
        return _planned_filter_failure(engine, conn, plan, target, admission)
    return stored


def _planned_filter_failure(
    engine: DataPlane, conn: Connection, plan: PassPlan, target: Location, admission: list[str]
) -> str | None:
    """A dry run's answer to the question the run asks after its pass failed (`_filter_failure`).

    The run would meet a filter that fails on these events (e.g. a cast under ANSI rules) and mark the
    connection failed; asked on the very events the pass evaluates the filter on (those CF1 does not skip,
    up to RFC2's block when the pass has an admission check: REP1 (3) stops it there), the dry run does not
    promise a pass the run cannot make, nor a failure the run does not meet.
    """
    if conn.filter is None or plan.action is PassAction.COPY:
        return None
    found = engine.filter_failure(
        list(plan.segments), conn.progress, conn.filter, target.cvv.to_dict(), admission=admission
    )
    return None if found is None else f"filter failed in Spark: {found}"


def _stored_filter_failure(conn: Connection) -> str | None:
    """Issue 19: a stored filter is re-validated when it is read; why it is refused, or None."""
    if conn.filter is None:
        return None
    try:
        check_stored(conn.filter)
    except BadFilter as exc:
        return f"filter refused: {exc.message}"
    return None


def _replicate_job(engine: DataPlane, conn: Connection, spec: PassSpec) -> PassResult | str:
    """Run the pass on the data plane; the reason instead when the connection's own filter made it fail
    (issue 14)."""
    try:
        return engine.replicate_pass(spec)
    except (BadFilter, EnvironmentFailure) as exc:
        # Only the connection's own filter marks it failed; a recovery's filter (DR3) fails the recovery.
        failure = _filter_failure(engine, conn, spec, exc) if spec.filter_sql == conn.filter else None
        if failure is None:
            raise
        return failure


def _commit_run(
    ctx: OperationContext,
    conn: Connection,
    *,
    activate: bool,
    target: Location,
    out_rel: str,
    files: tuple[SegmentFile, ...] | None,
    result: PassResult,
    base: PassReport,
) -> PassReport:
    """Commit a pass that ran: the new segment, Y's seq and CVV and the progress, in one transaction (REP3)."""
    with ctx.transaction() as tx:
        current_target = get_location(tx, target.name)
        if current_target.seq != target.seq:
            raise EnvironmentFailure(
                f"{target.name} changed during the pass; re-run replicate", code="concurrent-change"
            )
        if result.segment is not None:
            seg = result.segment
            tx.add_written_segment(target.name, out_rel, seg, ctx.id, files)
            # EM2: merge every written vt into CVV-Y.
            cvv = counted_after_write(current_target, current_target.cvv | VectorTime(seg.vt_lub))
            tx.put_location(replace(current_target, seq=seg.seq_hi, cvv=cvv))
        _commit(ctx, tx, conn, activate, result.progress)
        ctx.step(
            tx,
            "pass",
            {
                "source": conn.source,
                "target": conn.target,
                "written": result.written,
                "progress": result.progress,
                "segment": out_rel if result.segment else None,
            },
        )
    hit("replicate.after-commit")
    reason = None
    if result.blocked_at is not None:
        reason = (
            f"blocked [RFC2] at {conn.source} seq {result.blocked_at}: its group part is ahead of "
            f"{conn.target}; it is delivered once the group catches up"
        )
    return replace(
        base,
        state=ConnectionState.ACTIVE.value if activate else base.state,
        action="ran",
        examined=result.examined,
        written=result.written,
        skipped_causal=result.skipped_causal,
        skipped_filter=result.skipped_filter,
        blocked_at=result.blocked_at,
        progress=result.progress,
        reason=reason,
    )


def _filter_failure(engine: DataPlane, conn: Connection, spec: PassSpec, error: Exception) -> str | None:
    """Why the pass failed, when its filter is to blame (issue 14); None when something else is."""
    if conn.filter is None:
        return None
    if isinstance(error, BadFilter):
        return f"filter refused by Spark: {error.message}"
    failure = engine.filter_failure(
        spec.source_segments, spec.progress, conn.filter, spec.target_cvv, admission=spec.admission
    )
    return None if failure is None else f"filter failed in Spark: {failure}"


def _fail(ctx: OperationContext, conn: Connection, base: PassReport, reason: str) -> PassReport:
    """Issue 14: mark the connection `failed` with the reason; nothing else changes, other passes go on.

    The row is read again: a filter changed meanwhile is not the one that failed, and is left alone.
    """
    reason = f"{reason}; fix it: replctl topology filter {conn.source} {conn.target} --set EXPR"
    if not ctx.dry_run:
        with ctx.transaction() as tx:
            current = tx.connection(conn.source, conn.target)
            if current is not None and current.current and current.filter == conn.filter:
                tx.put_connection(replace(current, state=ConnectionState.FAILED, reason=reason))
                ctx.step(
                    tx, "filter-failed", {"source": conn.source, "target": conn.target, "reason": reason}
                )
    return replace(base, state=ConnectionState.FAILED.value, action="failed", reason=reason)


def _check_skipped_admission(
    engine: DataPlane,
    out_rel: str,
    segment: SegmentStats | None,
    projection: list[str],
    target_cvv: VectorTime,
) -> None:
    """The admission check was skipped on the source's segment rows (`admission_to_check`); the written
    segment's LUB, gathered by the pass anyway, confirms it. Should the rows have understated a LUB, the
    written events are never committed: nothing reaches the target that RFC2 would have held back.
    """
    if segment is None or not admission_refuses(segment.vt_lub, projection, target_cvv):
        return
    if engine.store.is_local:
        engine.store.remove(out_rel)
    raise EnvironmentFailure(
        "the source's segment rows understate the vector clocks of its events (the catalog and the store "
        "disagree); nothing was replicated",
        code="inconsistent",
        hint="run `replctl log verify` on the source location",
    )


def _first_stored(
    engine: DataPlane, source: Location, target: Location, segments: list[Segment]
) -> dict[str, int] | None:
    """Per origin of DVV-X, the smallest origin time X stores (core.replication.copies_exactly); None when
    the copy is ruled out anyway, so only a candidate copy reads the identity columns."""
    if target.cvv != source.dvv:
        return None
    first: dict[str, int] = {}
    origins = sorted(source.dvv)
    for seg in segments:
        for origin, (lo, _) in engine.store.identity_extent(seg, origins).items():
            first[origin] = min(lo, first.get(origin, lo))
    return first


def _copied_files(engine: DataPlane, seg: Segment, out_rel: str) -> tuple[SegmentFile, ...] | None:
    """The inventory of `seg`'s verbatim copy at `out_rel`. A copy whose footer does not parse is a copy of
    a source file whose bytes changed at its size (a torn write, bit rot in the footer): damage of the
    source (DR0) naming that file, not the store's failure to read a new file."""
    try:
        return engine.record_files(out_rel)
    except EnvironmentFailure as exc:
        changed = sorted(engine.store.changed_files(seg))
        if not changed:
            raise
        raise DamagedLog(
            seg.location,
            f"{seg.location}'s log is damaged: segment {seg.path} (from seq {seg.seq_lo}): its file "
            f"{changed[0]} changed since it was written and no longer parses; nothing was copied (DR0)",
        ) from exc


def _copy(
    ctx: OperationContext, engine: DataPlane, conn: Connection, plan: Any, base: PassReport
) -> PassReport:
    """Fast bootstrap: copy X's segment files verbatim; the catalog ends as an ordinary pass would leave it."""
    copied: list[tuple[Segment, str, tuple[SegmentFile, ...] | None]] = []
    try:
        for seg in plan.segments:
            out_rel = engine.store.new_segment_path(conn.target, seg.seq_lo)
            # Only the files the row names (issue 19): a stray file in the folder is not the segment's.
            engine.store.copy_segment(seg.path, out_rel, seg.file_names)
            copied.append((seg, out_rel, None))
            files = _copied_files(engine, seg, out_rel)
            why = None if files is None else copy_differs(seg, files)
            if why is not None:
                raise DamagedLog(
                    conn.source,
                    f"{conn.source}'s log is damaged: segment {seg.path} (from seq {seg.seq_lo}): {why}; "
                    "nothing was copied (DR0)",
                )
            copied[-1] = (seg, out_rel, files)
    except (DamagedLog, EnvironmentFailure):
        _discard(engine, [out_rel for _, out_rel, _ in copied])
        raise
    hit("replicate.after-write")
    count = sum(seg.count for seg, _, _ in copied)
    try:
        _commit_copy(ctx, conn, plan=plan, copied=copied, count=count)
    except ConnectionChanged:
        _discard(engine, [out_rel for _, out_rel, _ in copied])
        raise
    hit("replicate.after-commit")
    return replace(
        base,
        state=ConnectionState.ACTIVE.value,
        action="copied",
        examined=count,
        written=count,
        progress=plan.new_progress,
    )


def _commit_copy(
    ctx: OperationContext,
    conn: Connection,
    *,
    plan: Any,
    copied: list[tuple[Segment, str, tuple[SegmentFile, ...] | None]],
    count: int,
) -> None:
    """Commit a copy: the target's rows, seq and CVV and the progress, over the planned connection row."""
    with ctx.transaction() as tx:
        target = get_location(tx, conn.target)
        for seg, out_rel, files in copied:
            tx.add_written_segment(conn.target, out_rel, seg, ctx.id, files)
        cvv = counted_after_write(target, target.cvv.merge(*(seg.vt_lub for seg, _, _ in copied)))
        tx.put_location(replace(target, seq=plan.new_progress, cvv=cvv))
        _commit(ctx, tx, conn, plan.activate, plan.new_progress)
        ctx.step(
            tx,
            "copy",
            {"source": conn.source, "target": conn.target, "segments": len(copied), "events": count},
        )


def _commit(
    ctx: OperationContext, tx: CatalogTransaction, conn: Connection, activate: bool, progress: int
) -> None:
    # Every commit of a pass goes through here: the compare-and-set guards the whole transaction.
    _compare_and_set(tx, conn)
    # REP2: progress is the scan end (before any block); it never moves backwards here.
    new_state = ConnectionState.ACTIVE if activate else conn.state
    # A committing pass ran, so whatever wait an earlier pass recorded (e.g. a damaged log, DR0) is over:
    # keeping it would send the operator to recover a healthy location.
    tx.put_connection(replace(conn, state=new_state, progress=max(progress, conn.progress), reason=None))
    if activate:
        ctx.step(tx, "activate", {"source": conn.source, "target": conn.target})


def replicate_one(
    catalog: Catalog,
    engine: DataPlane,
    source: str,
    target: str,
    *,
    reason: str | None = None,
    dry_run: bool = False,
    guard: DeletionGuard | None = None,
) -> ReplicationOutcome:
    """`replicate SRC DST`: one pass, then every pending deletion is retried (DEL4).

    Not only the source's: the pass may have delivered, through SRC, what a deletion at a third location waits
    for. The operation leases the locations whose deletions it retries; one requested after the leases were
    taken waits for the next run.
    """
    with catalog.transaction(readonly=True) as tx:
        waiting = {p.location for p in tx.pending_deletions()}

    def body(ctx: OperationContext) -> ReplicationOutcome:
        with ctx.transaction() as tx:
            source_segments, target_loc = tx.segments(source), get_location(tx, target)
            target_segments = tx.segments(target)
        refuse_damaged(engine.store, source, source_segments)
        refuse_unwritable(engine.store, target_loc, target_segments)
        # Damage the pass's own read finds is the census's refusal above (exit 4, DR0), not a waiting pass.
        report = run_pass(ctx, engine, source, target, damage_waits=False)
        outlook = _outlook([report], connections=None) if dry_run else None
        deletions = retry_pending(ctx, engine, only=waiting, outlook=outlook, guard=guard)
        return ReplicationOutcome(dry_run, ((1, report),), tuple(deletions))

    return operation(
        catalog,
        command="replicate",
        args={"source": source, "target": target},
        reason=reason,
        resources=[location_resource(n) for n in {source, target, *waiting}],
        dry_run=dry_run,
        body=body,
    )


def _leased_pass(ctx: OperationContext, engine: DataPlane, conn: Connection) -> PassReport:
    """One pass of a full `replicate`, once both its locations are leased (issue 19).

    The run leases the locations that exist when it starts; a connection added meanwhile may lead to one it
    does not hold yet. That one is leased before the pass reads or writes it; when another operation holds
    it, the pass is skipped and reported, and the run ends incomplete (exit 5).
    """
    try:
        for name in (conn.source, conn.target):
            ctx.lease(location_resource(name))
    except LockHeld as held:
        ctx.mark_incomplete(again=f"replctl replicate {conn.source} {conn.target}")
        return PassReport(
            conn.source,
            conn.target,
            conn.state.value,
            "skipped",
            progress=conn.progress,
            reason=f"not replicated: {held.message}; re-run replicate once it is free",
        )
    return run_pass(ctx, engine, conn.source, conn.target)


# The action a dry run reports for a pass whose decision rests on what an earlier pass of the run writes.
DEPENDS = "depends"

# The actions of a dry run's passes that may write into their target's log.
_MAY_WRITE = frozenset({"would-run", "would-copy", DEPENDS})


def _outlook(reports: list[PassReport], connections: list[tuple[str, str]] | None) -> PassOutlook:
    """What a dry run's planned passes tell of the state its deletion retries meet (DEL4, `PassOutlook`).

    A full `replicate` (`connections` given) goes on round after round: a log one pass writes to may pass
    events on, over any current connection, to every log reachable from it before the retries.
    """
    return PassOutlook(
        reaches={(r.source, r.target): r.reaches for r in reports if r.reaches is not None},
        changed=changed_logs((r.target for r in reports if r.action in _MAY_WRITE), connections),
    )


def _round(
    ctx: OperationContext, engine: DataPlane, connections: list[Connection], planned: PlannedRounds | None
) -> list[PassReport]:
    """One round of a full `replicate`, in the connections' order.

    A dry run (`planned`) writes nothing, so a pass that reads from, or writes into, a log an earlier pass of
    the run may write to (in this round or an earlier one, and transitively) cannot be decided as the run
    decides it (its events or its CVV are not there yet): it is reported as `depends`, naming that pass,
    instead of a guess that the run would contradict (issue 14). A dry run leaves out a pass it has listed
    already (`PlannedRounds.listed`): a round lists only what the run's round may do anew.
    """
    if planned is None:
        return [_leased_pass(ctx, engine, conn) for conn in connections]
    reports: list[PassReport] = []
    for conn in connections:
        if planned.listed(conn.key):
            continue
        earlier = planned.waits_for(conn.key)
        if earlier is not None:
            planned.depends(conn.key)
            reports.append(
                PassReport(
                    conn.source,
                    conn.target,
                    planned.state(conn.key, conn.state.value),
                    DEPENDS,
                    progress=None,
                    reason=f"decided once {earlier} has run",
                    **_UNKNOWN_COUNTS,
                )
            )
            continue
        # Decided by the run's own code path, execution switched off (the dry run's `ctx`).
        report = _leased_pass(ctx, engine, conn)
        planned.decided(
            conn.key,
            writes=report.action in ("would-run", "would-copy"),
            reads_to_end=report.reaches is not None,
            state=report.state,
            # Neither a damaged log (DR0) nor a connection blocked for recovery (DR5) is changed by a pass.
            repeats=report.action in (DAMAGED, PassAction.BLOCKED.value),
        )
        reports.append(report)
    return reports


def replicate_all(
    catalog: Catalog,
    engine: DataPlane,
    *,
    reason: str | None = None,
    dry_run: bool = False,
    guard: DeletionGuard | None = None,
) -> ReplicationOutcome:
    """`replicate`: every current connection, round after round, until a round changes nothing; `guard`
    applies BK4 to the pending deletions retried after them (`retry_pending`)."""
    with catalog.transaction(readonly=True) as tx:
        live = [loc.name for loc in tx.locations() if not loc.retired]

    def body(ctx: OperationContext) -> ReplicationOutcome:
        reports: list[PassReport] = []
        rounds: list[int] = []  # the round of each report, 1 first
        failed: set[tuple[str, str]] = set()  # a connection whose filter failed is not retried in this run
        planned: PlannedRounds | None = None
        for number in range(1, MAX_ROUNDS + 1):
            with ctx.transaction() as tx:
                current = sorted((c for c in tx.connections() if c.current), key=lambda c: c.key)
            if dry_run and planned is None:
                planned = PlannedRounds(c.key for c in current)
            round_reports = _round(ctx, engine, [c for c in current if c.key not in failed], planned)
            # A connection whose filter failed, or whose locations another operation holds, waits for a re-run.
            failed |= {(r.source, r.target) for r in round_reports if r.action in ("failed", "skipped")}
            reports.extend(round_reports)
            rounds.extend([number] * len(round_reports))
            # The run goes on while a round changed something; its dry run while a round listed a pass the
            # run may make (each connection is listed at most twice, so that ends).
            if not (round_reports if dry_run else any(r.changed for r in round_reports)):
                break
        # DEL4: only at the locations this operation holds; the others' deletions wait for their next run.
        # A dry run holds no lease: it retries where the run takes its leases at the start.
        prefix = location_resource("")
        leased = {r.removeprefix(prefix) for r in ctx.tokens if r.startswith(prefix)}
        outlook = _outlook(reports, connections=[c.key for c in current]) if dry_run else None
        deletions = retry_pending(
            ctx, engine, only=set(live) if dry_run else leased, outlook=outlook, guard=guard
        )
        for r in reports:
            if r.action == DAMAGED:
                # The other connections ran; those at a damaged log wait for its recovery, as their reason says.
                ctx.mark_incomplete(again=(r.reason or "").partition("; run: ")[2] or None)
        return ReplicationOutcome(
            dry_run,
            tuple((n, r) for r, n in zip(reports, rounds, strict=True) if r.action != "nothing-new"),
            tuple(deletions),
        )

    return operation(
        catalog,
        command="replicate",
        args={},
        reason=reason,
        resources=[location_resource(n) for n in live],
        dry_run=dry_run,
        body=body,
    )
