"""Retirement with clock pruning: `location retire Z --prune-clock` (rules.md RET1–RET4, M3).

Retiring is the topology use case (`services.topology.retire_location`, RET1); pruning is its own operation
that runs after it: load every location and segment row → decide in the core (`core.retirement`, RET3) →
rewrite and commit log by log → record Z as pruned → report. CVVs, DVVs and baselines keep their Z entry
(RET2): coverage is asked through identities (RET4).

Crash safety: for each log, the pruned copies of its segments are written first; its segment rows and its
baseline (which takes over `CVV[Z]`, see `core.retirement`) then change in one transaction with the journal
step `prune-log`; the old files are removed only after it commits (a crash leaves unreferenced files, never
read, collected like any orphan). The last transaction records Z as pruned (step `prune-record`), from when on
new vts leave Z out (EM1). No CVV changes, so a re-run after a crash passes RET3 as before and continues with
the logs whose segment rows still hold Z.

`location retire Z --prune-clock` runs the retirement and the pruning as two operations; a crash between them
(failpoint `retire.before-prune`) leaves Z retired, and the re-run's retirement is a no-op. The failpoints
`prune.after-rewrite`, `prune.after-commit` and `prune.after-log` mark the boundaries of each log's rewrite
(`@n` for the n-th log), `prune.before-vectors` the one before phase 2.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from replctl.core.jobs import SegmentRewrite
from replctl.core.outcomes import Completion
from replctl.core.retirement import LogPrune, PrunePlan, clocks, parked_location, plan_prune
from replctl.core.vectortime import VectorTime, lub
from replctl.errors import DamagedLog, EnvironmentFailure, Refused, UnknownName
from replctl.failpoints import hit
from replctl.services import interruption, topology
from replctl.services.damage import refuse_damaged
from replctl.services.lookup import get_location
from replctl.services.operations import (
    TOPOLOGY,
    OperationContext,
    location_resource,
    operation,
    refuse_if_held,
)
from replctl.services.ports import Catalog, CatalogTransaction, DataPlane
from replctl.services.topology import RETIRE_COMMAND

PRUNE_COMMAND = "location retire --prune-clock"


@dataclass(frozen=True)
class RetirementOutcome:
    """What `location retire NAME [--prune-clock]` did (or, under --dry-run, would do)."""

    retirement: topology.TopologyOutcome
    pruning: dict[str, Any] | None = None

    @property
    def completion(self) -> Completion:
        """Retired (and pruned) whole, or refused."""
        return Completion.COMPLETE

    def to_json(self) -> dict[str, Any]:
        """`location retire --json`: the retirement's topology document, with `prune` under --prune-clock."""
        doc = self.retirement.to_json()
        if self.pruning is not None:
            doc["prune"] = self.pruning
        return doc


def retire(
    catalog: Catalog,
    engine: DataPlane,
    name: str,
    *,
    prune_clock: bool,
    reason: str | None = None,
    dry_run: bool = False,
) -> RetirementOutcome:
    """`location retire NAME [--prune-clock] [--dry-run]`: retire (RET1), then prune Z's clock (RET2, RET3).

    With `--prune-clock`, RET1 and RET3 are both checked before anything is recorded, so a refusal leaves
    the catalog as it was (exit 3); on an already retired location the retirement is a no-op and only the
    pruning runs ("re-running ... prunes once RET3 holds", cli.md).
    """
    if not prune_clock:
        return RetirementOutcome(
            topology.retire_location(catalog, engine, name, reason=reason, dry_run=dry_run)
        )
    # RET1 first: a location with current connections is refused before RET3 is even asked.
    would_retire = topology.retire_location(catalog, engine, name, reason=reason, dry_run=True)
    with catalog.transaction(readonly=True) as tx:
        plan = _plan(tx, name, retiring=True)
        _refuse_unless_ok(plan)
        hashed = _refuse_damaged_logs(tx, engine, plan)
        everyone = [loc.name for loc in tx.locations()]
    # The pruning's leases (every location's), as its run would meet them: the dry run said what it "would"
    # do while another operation held one, and the run retired Z, then had its pruning refused (exit 4).
    refuse_if_held(catalog, [TOPOLOGY, *(location_resource(n) for n in everyone)])
    if dry_run:
        return RetirementOutcome(would_retire, _report(plan))
    # Two operations: a crash between them leaves Z retired and unpruned, which the re-run (a no-op
    # retirement on a retired location, then the pruning) completes (REP3); a Ctrl-C after the first says so.
    labels = [
        interruption.what(RETIRE_COMMAND, {"name": name}),
        interruption.what(PRUNE_COMMAND, {"name": name}),
    ]
    with interruption.in_turn(labels, lambda _left: f"replctl location retire {name} --prune-clock"):
        retired = topology.retire_location(catalog, engine, name, reason=reason)
        hit("retire.before-prune")
        return RetirementOutcome(retired, prune(catalog, engine, name, reason=reason, hashed=hashed))


def prune(
    catalog: Catalog,
    engine: DataPlane,
    name: str,
    *,
    reason: str | None = None,
    dry_run: bool = False,
    hashed: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Prune retired location `name` from every vt, CVV, DVV and baseline (RET2), if RET3 holds.

    `hashed`: segments whose files `retire` just checked against their digests (`_refuse_damaged_logs`),
    which are not read whole a second time.

    Holds the topology lease and every location's lease, so no replication, append or new connection can
    move a clock while RET3 is checked and the logs are rewritten. Resumable: see the module docstring.
    """
    with catalog.transaction(readonly=True) as tx:
        everyone = [loc.name for loc in tx.locations()]

    def body(ctx: OperationContext) -> dict[str, Any]:
        # Reads only, around the census of the logs to rewrite (a listing of every segment's files): no write
        # lock. The leases held keep every log and clock as read until the rewrites commit.
        with ctx.transaction(readonly=True) as tx:
            plan = _plan(tx, name, retiring=False)
            _refuse_unless_ok(plan)
            _refuse_damaged_logs(tx, engine, plan, hashed=hashed)
        if ctx.dry_run:
            return _report(plan, ctx)
        ctx.set_plan(
            {
                "prune": name,
                "needed": plan.needed,
                "logs": [
                    {"location": log.location, "rewrite": [s.path for s in log.rewrite]} for log in plan.logs
                ],
                "record": plan.record,
            }
        )
        for log in plan.logs:
            _prune_log(ctx, engine, name, log)
        hit("prune.before-vectors")  # every vt is pruned, Z not yet recorded as pruned
        if plan.record:
            _record_pruned(ctx, name)
        return _report(plan, ctx)

    return operation(
        catalog,
        command=PRUNE_COMMAND,
        args={"name": name},
        reason=reason,
        resources=[TOPOLOGY, *(location_resource(n) for n in everyone)],
        dry_run=dry_run,
        body=body,
    )


def _plan(tx: CatalogTransaction, name: str, *, retiring: bool) -> PrunePlan:
    """Load the snapshot the core decides on (every location, its segment rows, and the segments earlier
    runs of this pruning already rewrote) and decide."""
    locations = tx.locations()
    segments = {loc.name: tx.segments(loc.name) for loc in locations}
    done = frozenset(
        str(path)
        for op in tx.find_operations(PRUNE_COMMAND, {"name": name})
        for step in op.steps
        if step.name == "prune-log"
        for path in step.detail.get("segments", [])
    )
    return plan_prune(locations, segments, name, retiring=retiring, pruned_paths=done)


def _refuse_unless_ok(plan: PrunePlan) -> None:
    """Turn the core's refusal into the error the CLI maps to an exit code (2 for a name, 3 for a rule)."""
    if plan.ok:
        return
    first = plan.violations[0]
    if first.code.startswith("unknown-"):
        raise UnknownName(first.message, code=first.code, hint=first.hint)
    raise Refused(
        f"refused [{first.code}]: {first.message}", code=first.code, hint=first.hint, details=first.details
    )


def _refuse_damaged_logs(
    tx: CatalogTransaction, engine: DataPlane, plan: PrunePlan, *, hashed: frozenset[str] = frozenset()
) -> frozenset[str]:
    """Exit 4 (DR0) before anything is recorded when a log the pruning would rewrite is damaged: the rewrite
    would read it, and a dry run must refuse as the run does instead of listing segments that are not there.

    A file of a segment to rewrite whose bytes changed at its size passes the census (a listing) and fails
    only its read, in the middle of the run: Z was retired and the logs before it pruned, while the dry run
    had said the pruning would go through (RET2 half done). Those files are hashed here, before anything,
    as the rewrite reads them whole anyway; those of `hashed` were checked already. Returns the segments
    checked (by path)."""
    for log in plan.logs:
        if log.rewrite:
            refuse_damaged(engine.store, log.location, tx.segments(log.location))
    for log in plan.logs:
        for seg in log.rewrite:
            if seg.path in hashed:
                continue
            changed = sorted(engine.store.changed_files(seg))
            if changed:
                raise DamagedLog(
                    log.location,
                    f"{log.location}'s log is damaged: {seg.path}/{changed[0]} changed since it was written (its "
                    "SHA-256 differs from its catalog row's) and the pruning would rewrite it; nothing was "
                    "retired, pruned or written (DR0)",
                )
    return frozenset(seg.path for log in plan.logs for seg in log.rewrite)


def _report(plan: PrunePlan, ctx: OperationContext | None = None) -> dict[str, Any]:
    """The `prune` object of `location retire --json`: per log the segments rewritten (or, in a dry run,
    to rewrite) and how many were left alone, and whether Z is (to be) recorded as pruned."""
    return {
        "location": plan.name,
        "dry_run": ctx is None or ctx.dry_run,
        "operation": None if ctx is None else ctx.id,
        "needed": plan.needed,
        "logs": [
            {"location": log.location, "rewritten": [s.path for s in log.rewrite], "untouched": log.untouched}
            for log in plan.logs
        ],
        "recorded": plan.record,
    }


def _prune_log(ctx: OperationContext, engine: DataPlane, name: str, log: LogPrune) -> None:
    """Phase 1 on one log: write pruned copies, commit their rows and the parked `CVV[Z]` in one
    transaction, then remove the old files."""
    with ctx.transaction() as tx:
        before = get_location(tx, log.location)
        clk = clocks(tx.locations())
    rewrites = [SegmentRewrite(s, engine.store.new_segment_path(log.location, s.seq_lo)) for s in log.rewrite]
    stats = engine.prune_log(
        rewrites,
        key=name,
        keys=clk.vt_keys(before.cvv),
        identity_origins=clk.identity_origins,
    )
    for segment, stat in zip(log.rewrite, stats, strict=True):
        found = None if stat is None else (stat.count, stat.seq_lo, stat.seq_hi)
        if found not in (None, (segment.count, segment.seq_lo, segment.seq_hi)):
            raise EnvironmentFailure(
                f"segment {segment.path} holds {found}, its catalog row says "
                f"{(segment.count, segment.seq_lo, segment.seq_hi)} (count, first seq, last seq); "
                f"{log.location} was left as it was",
                code="store",
                hint=f"replctl log verify {log.location}",
            )
    hit("prune.after-rewrite")  # pruned copies written, catalog not yet: they must stay unread
    # Their inventories read and hash the files: before the write lock, not under it.
    files = {
        r.target: engine.record_files(r.target)
        for r, stat in zip(rewrites, stats, strict=True)
        if stat is not None
    }
    with ctx.transaction() as tx:
        current = get_location(tx, log.location)
        present = {s.id for s in tx.segments(log.location)}
        if current != before or any(s.id not in present for s in log.rewrite):
            raise EnvironmentFailure(
                f"{log.location} changed during the pruning; "
                f"re-run: replctl location retire {name} --prune-clock",
                code="concurrent-change",
            )
        tx.delete_segments(s.id for s in log.rewrite)
        for rewrite, stat in zip(rewrites, stats, strict=True):
            if stat is not None:
                tx.add_written_segment(log.location, rewrite.target, stat, ctx.id, files[rewrite.target])
        stored = lub(
            [
                *(s.vt_lub for s in tx.segments(log.location) if s.id not in {r.id for r in log.rewrite}),
                *(VectorTime(stat.vt_lub) for stat in stats if stat is not None),
            ]
        )
        tx.put_location(parked_location(current, name, stored))
        ctx.step(
            tx,
            "prune-log",
            {
                "location": log.location,
                "pruned": name,
                "rewritten": [s.path for s in log.rewrite],
                "segments": [r.target for r, stat in zip(rewrites, stats, strict=True) if stat is not None],
                "untouched": log.untouched,
            },
        )
    hit("prune.after-commit")
    # Only a local store can remove files here; elsewhere the old segments are orphans, collected as any.
    if engine.store.is_local:
        for segment in log.rewrite:
            engine.store.remove(segment.path)
    hit("prune.after-log")  # this log done; the next one's segment rows still hold Z


def _record_pruned(ctx: OperationContext, name: str) -> None:
    """Phase 2: record Z as pruned, once every log is rewritten (RET2); vectors keep their Z entry (RET4).

    Every location's lease is held, so no vt stamped with Z can have been written since the plan.
    """
    with ctx.transaction() as tx:
        retired = get_location(tx, name)
        tx.put_location(replace(retired, clock_pruned=True))
        ctx.step(tx, "prune-record", {"pruned": name})
