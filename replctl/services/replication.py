"""Replication use cases: one pass X→Y, or every connection until nothing changes (REP1–REP3).

Crash safety (REP3): the job writes the new segment files first; the catalog row, the target's seq and CVV and
the progress then commit in one transaction. A crash in between leaves an unreferenced segment that is never
read; the re-run starts from the old progress and CF1 makes it converge to the same logs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from replctl.adapters.catalog.repository import Catalog, CatalogTransaction
from replctl.adapters.spark.results import SegmentStats
from replctl.core.model import Connection, ConnectionState
from replctl.core.replication import PassAction, admission_refuses, admission_to_check, plan_pass
from replctl.core.topology_rules import admission_projection
from replctl.core.vectortime import VectorTime
from replctl.errors import EnvironmentFailure, UnknownName
from replctl.failpoints import hit
from replctl.services.deletion import retry_pending
from replctl.services.engine import Engine
from replctl.services.lookup import get_location
from replctl.services.operations import OperationContext, location_resource, operation
from replctl.services.topology import load_state

MAX_ROUNDS = 1000


@dataclass(frozen=True)
class PassReport:
    """One pass, as `replicate --json` reports it."""

    source: str
    target: str
    state: str
    action: str
    examined: int = 0
    written: int = 0
    skipped_causal: int = 0
    skipped_filter: int = 0
    blocked_at: int | None = None
    progress: int = 0
    reason: str | None = None

    @property
    def changed(self) -> bool:
        """Whether the pass changed anything (progress, events or state)."""
        return self.written > 0 or self.action in ("activated", "advanced")

    def to_json(self) -> dict[str, Any]:
        """The cli.md shape."""
        return {
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


def run_pass(
    ctx: OperationContext,
    engine: Engine,
    source_name: str,
    target_name: str,
    *,
    recovery_filter: str | None = None,
    recovery: bool = False,
) -> PassReport:
    """Plan and, unless dry, execute one pass; commits in one transaction.

    A recovery pass (DR4) reads with `recovery_filter` (DR3: none, or the filter OR-ed with `origin = A`)
    whatever the connection's state, and leaves the connection active.
    """
    with ctx.transaction() as tx:
        conn = tx.connection(source_name, target_name)
        if conn is None or not conn.current:
            raise UnknownName(
                f"no current connection {source_name}→{target_name}",
                code="unknown-connection",
                hint=f"add it: replctl topology add {source_name} {target_name}",
            )
        source, target = get_location(tx, source_name), get_location(tx, target_name)
        segments = tx.segments(source_name)
        target_segments = tx.segments(target_name)
        projection = sorted(admission_projection(load_state(tx), source_name, target_name))
        # RFC2: only a projection that some event the pass reads can exceed costs a scan (and rules out the copy).
        admission = list(admission_to_check(projection, segments, conn, target.cvv))
    plan = plan_pass(
        source,
        target,
        conn,
        segments,
        recovery=recovery,
        admission=bool(admission),
        target_empty=not recovery and not target_segments and engine.store.is_local,
    )
    state = ConnectionState.ACTIVE.value if plan.activate else conn.state.value
    base = PassReport(source_name, target_name, state, "", progress=conn.progress)
    if plan.action in (PassAction.WAIT, PassAction.BLOCKED):
        if not ctx.dry_run and plan.reason != conn.reason:
            with ctx.transaction() as tx:
                tx.put_connection(replace(conn, reason=plan.reason))
        return replace(base, action=plan.action.value, progress=conn.progress, reason=plan.reason)
    if plan.action in (PassAction.NOTHING_NEW, PassAction.ALL_KNOWN):
        advanced = plan.new_progress != conn.progress
        if not ctx.dry_run and (advanced or plan.activate):
            with ctx.transaction() as tx:
                _commit(ctx, tx, conn, plan.activate, plan.new_progress)
        action = "advanced" if advanced else ("activated" if plan.activate else plan.action.value)
        return replace(base, action=action, progress=plan.new_progress)
    if ctx.dry_run:
        return replace(
            base,
            action="would-copy" if plan.action is PassAction.COPY else "would-run",
            progress=conn.progress,
        )
    if plan.action is PassAction.COPY:
        return _copy(ctx, engine, conn, plan, base)

    from replctl.adapters.spark import jobs
    from replctl.adapters.spark.results import PassSpec

    out_rel = engine.store.new_segment_path(target_name, target.seq + 1)
    result = jobs.replicate_pass(
        engine.spark(),
        engine.store,
        PassSpec(
            source_segments=[s.path for s in plan.segments],
            progress=conn.progress,
            target_cvv=target.cvv.to_dict(),
            filter_sql=recovery_filter if recovery else conn.filter,
            admission=admission,
            target_seq=target.seq,
            out_rel=out_rel,
            source_keys=sorted(source.cvv),
        ),
    )
    if projection and not admission:
        _check_skipped_admission(engine, out_rel, result.segment, projection, target.cvv)
    hit("replicate.after-write")  # segment files written, catalog not yet: they must stay unread
    with ctx.transaction() as tx:
        current_target = get_location(tx, target_name)
        if current_target.seq != target.seq:
            raise EnvironmentFailure(
                f"{target_name} changed during the pass; re-run replicate", code="concurrent-change"
            )
        if result.segment is not None:
            seg = result.segment
            tx.add_segment(
                target_name, out_rel, seg.seq_lo, seg.seq_hi, seg.count, VectorTime(seg.vt_lub), ctx.id
            )
            # EM2: merge every written vt into CVV-Y.
            tx.put_location(
                replace(current_target, seq=seg.seq_hi, cvv=current_target.cvv | VectorTime(seg.vt_lub))
            )
        _commit(ctx, tx, conn, plan.activate, result.progress)
        ctx.step(
            tx,
            "pass",
            {
                "source": source_name,
                "target": target_name,
                "written": result.written,
                "progress": result.progress,
                "segment": out_rel if result.segment else None,
            },
        )
    hit("replicate.after-commit")
    reason = None
    if result.blocked_at is not None:
        reason = (
            f"blocked [RFC2] at {source_name} seq {result.blocked_at}: its group part is ahead of "
            f"{target_name}; it is delivered once the group catches up"
        )
    return replace(
        base,
        action="ran",
        examined=result.examined,
        written=result.written,
        skipped_causal=result.skipped_causal,
        skipped_filter=result.skipped_filter,
        blocked_at=result.blocked_at,
        progress=result.progress,
        reason=reason,
    )


def _check_skipped_admission(
    engine: Engine, out_rel: str, segment: SegmentStats | None, projection: list[str], target_cvv: VectorTime
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


def _copy(ctx: OperationContext, engine: Engine, conn: Connection, plan: Any, base: PassReport) -> PassReport:
    """Fast bootstrap: copy X's segment files verbatim; the catalog ends as an ordinary pass would leave it."""
    copied = []
    for seg in plan.segments:
        out_rel = engine.store.new_segment_path(conn.target, seg.seq_lo)
        engine.store.copy_segment(seg.path, out_rel)
        copied.append((seg, out_rel))
    hit("replicate.after-write")
    count = sum(seg.count for seg, _ in copied)
    with ctx.transaction() as tx:
        target = get_location(tx, conn.target)
        for seg, out_rel in copied:
            tx.add_segment(conn.target, out_rel, seg.seq_lo, seg.seq_hi, seg.count, seg.vt_lub, ctx.id)
        tx.put_location(
            replace(target, seq=plan.new_progress, cvv=target.cvv.merge(*(seg.vt_lub for seg, _ in copied)))
        )
        _commit(ctx, tx, conn, plan.activate, plan.new_progress)
        ctx.step(
            tx,
            "copy",
            {"source": conn.source, "target": conn.target, "segments": len(copied), "events": count},
        )
    hit("replicate.after-commit")
    return replace(
        base,
        state=ConnectionState.ACTIVE.value,
        action="copied",
        examined=count,
        written=count,
        progress=plan.new_progress,
    )


def _commit(
    ctx: OperationContext, tx: CatalogTransaction, conn: Connection, activate: bool, progress: int
) -> None:
    # REP2: progress is the scan end (before any block); it never moves backwards here.
    new_state = ConnectionState.ACTIVE if activate else conn.state
    tx.put_connection(
        replace(
            conn,
            state=new_state,
            progress=max(progress, conn.progress),
            reason=None if activate else conn.reason,
        )
    )
    if activate:
        ctx.step(tx, "activate", {"source": conn.source, "target": conn.target})


def replicate_one(
    catalog: Catalog,
    engine: Engine,
    source: str,
    target: str,
    *,
    reason: str | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    """`replicate SRC DST`: one pass, then every pending deletion is retried (DEL4).

    Not only the source's: the pass may have delivered, through SRC, what a deletion at a third location waits
    for. The operation leases the locations whose deletions it retries; one requested after the leases were
    taken waits for the next run.
    """
    with catalog.transaction() as tx:
        waiting = {p.location for p in tx.pending_deletions()}

    def body(ctx: OperationContext) -> dict[str, Any]:
        report = run_pass(ctx, engine, source, target)
        deletions = [] if dry_run else retry_pending(ctx, engine, only=waiting)
        return {"dry_run": dry_run, "passes": [report.to_json()], "deletions": deletions}

    return operation(
        catalog,
        command="replicate",
        args={"source": source, "target": target},
        reason=reason,
        resources=[location_resource(n) for n in {source, target, *waiting}],
        dry_run=dry_run,
        body=body,
    )


def replicate_all(
    catalog: Catalog, engine: Engine, *, reason: str | None = None, dry_run: bool = False
) -> dict[str, Any]:
    """`replicate`: every current connection, round after round, until a round changes nothing."""
    with catalog.transaction() as tx:
        live = [loc.name for loc in tx.locations() if not loc.retired]

    def body(ctx: OperationContext) -> dict[str, Any]:
        reports: list[PassReport] = []
        for _ in range(MAX_ROUNDS):
            with ctx.transaction() as tx:
                pairs = [(c.source, c.target) for c in tx.connections() if c.current]
            round_reports = [run_pass(ctx, engine, s, t) for s, t in sorted(pairs)]
            reports.extend(round_reports)
            if dry_run or not any(r.changed for r in round_reports):
                break
        deletions = [] if dry_run else retry_pending(ctx, engine)
        return {
            "dry_run": dry_run,
            "passes": [r.to_json() for r in reports if r.action != "nothing-new"],
            "deletions": deletions,
        }

    return operation(
        catalog,
        command="replicate",
        args={},
        reason=reason,
        resources=[location_resource(n) for n in live],
        dry_run=dry_run,
        body=body,
    )
