"""Disaster drills and recovery (rules.md DR0–DR5).

`drill` destroys a stored suffix as a real disaster would and leaves the catalog alone. `recover` finds the lost
suffix by checking the store against the catalog (or takes `--lost-from`), then, holding A in state
`recovering` (appends refused), recovers metadata (DR1, DR2) in one transaction, runs event recovery in rounds
(DR4) and ends by moving A's clock past T. Each step commits on its own, so a re-run after a crash resumes: the
recovering state and the reset progress are in the catalog, and CF1 makes repeated passes harmless.

Decision: A's seq counter is set to T already in the metadata step (CVV-A[A] is not), so the events event
recovery writes are numbered after every seq A assigned before the loss. DR1 says A never assigns a seq again;
reusing the lost seqs would put recovered events under a logical or pending deletion requested before the
loss. The readers of A still fall back to A's last survivor (DR2) and find a gap there, which M4 allows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from typing import Any

from replctl.core import loss as loss_core
from replctl.core import recovery as dr
from replctl.core.backups import Manifest
from replctl.core.jobs import SegmentStats
from replctl.core.journal import Operation, Outcome
from replctl.core.model import ConnectionState, Location, LocationState, Segment
from replctl.core.retirement import clocks
from replctl.core.vectortime import VectorTime, lub
from replctl.errors import EnvironmentFailure, InvalidInput, Refused
from replctl.failpoints import hit
from replctl.services import loss
from replctl.services.damage import find_damage
from replctl.services.lookup import get_location
from replctl.services.operations import OperationContext, location_resource, operation
from replctl.services.ports import Catalog, DataPlane, LogStore
from replctl.services.replication import DAMAGED, run_pass
from replctl.services.topology_state import load_state


def drill(
    catalog: Catalog,
    engine: DataPlane,
    name: str,
    from_seq: int,
    *,
    reason: str | None = None,
    dry_run: bool = False,
) -> dr.DrillOutcome:
    """`drill disaster LOC --from SEQ`: destroy the stored events with seq ≥ SEQ; the catalog is left as it was."""
    if from_seq < 1:
        raise InvalidInput(f"--from takes a seq ≥ 1, got {from_seq}", code="bad-number")
    if not engine.store.is_local:
        raise InvalidInput(
            "drills destroy files and run against local stores only",
            code="remote-store",
            hint="point --store at a local copy for a game day",
        )

    def body(ctx: OperationContext) -> dr.DrillOutcome:
        with ctx.transaction() as tx:
            loc = get_location(tx, name)
            segments = tx.segments(name)
        if loc.retired:
            # RET1: a retired location has left the topology for good and `recover` refuses it, so a drill
            # there would only destroy what is left and point at a recovery that cannot run.
            raise Refused(
                f"refused [RET1]: {name} is retired; it can never be recovered, so a drill on it tests nothing "
                "and only destroys what is left (RET1)",
                code="RET1",
                hint="drill an active location: replctl location list",
            )
        # Only what the store still holds from SEQ on, for the dry run and the run alike: a drill leaves the
        # catalog as it was, so after an earlier drill or a real disaster the rows list what is already gone,
        # and a dry run from them would claim to destroy it again (and a plan of it stay fresh once applied).
        split = dr.split_segments(segments, from_seq)
        removed = tuple(s for s in split.lost if engine.stored_from(s, from_seq))
        cut = split.straddle if split.straddle and engine.stored_from(split.straddle, from_seq) else None
        doc = dr.DrillOutcome(
            location=name,
            from_seq=from_seq,
            dry_run=ctx.dry_run,
            destroyed_segments=tuple(s.path for s in removed),
            truncated_segment=cut.path if cut else None,
        )
        if ctx.dry_run:
            return doc
        if cut is not None:
            # In place, file by file, as a torn disk would leave it: files wholly from SEQ on go, the one
            # holding SEQ keeps its earlier rows under its own name.
            engine.cut_files(cut, from_seq)
        for seg in removed:
            engine.store.remove(seg.path)
        with ctx.transaction() as tx:
            ctx.step(tx, "destroy", {"from": from_seq, "segments": len(removed)})
        return doc

    return operation(
        catalog,
        command="drill disaster",
        args={"location": name, "from": from_seq},
        reason=reason,
        resources=[location_resource(name)],
        dry_run=dry_run,
        body=body,
    )


def recover(
    catalog: Catalog,
    engine: DataPlane,
    name: str,
    *,
    lost_from: int | None = None,
    accept_loss: bool = False,
    reason: str | None = None,
    dry_run: bool = False,
    manifests: list[Manifest] | None = None,
) -> dr.RecoveryOutcome:
    """`recover location NAME [--lost-from SEQ] [--accept-loss]`. `manifests` are the backups the backup
    store holds (None: unreadable), for BK3's refusal of a recovery that would lose what a backup holds."""
    with catalog.transaction() as tx:
        loc = get_location(tx, name)
        if loc.retired:
            raise Refused(f"refused [RET1]: {name} is retired", code="RET1")
        if lost_from is not None:
            _check_lost_from(loc, lost_from)
        around = dr.neighbours(load_state(tx), name)
    return operation(
        catalog,
        command="recover location",
        args={"location": name, "lost_from": lost_from, "accept_loss": accept_loss},
        reason=reason,
        resources=[location_resource(n) for n in [name, *around]],
        dry_run=dry_run,
        body=lambda ctx: dr.RecoveryOutcome.of(
            _recover(ctx, engine, name, declared=lost_from, accept_loss=accept_loss, manifests=manifests)
        ),
    )


BEFORE_STEPS = ("metadata", "restore")  # the steps that make A recovering, with A's clock before the loss
ACCEPT_STEP = "accept-loss"  # one accepted neighbour (DR5): what was merged and what that gave up
END_STEP = "end"  # the clock past T (DR1) and the state A is left in


def before_loss_detail(seq: int, cvv: VectorTime) -> dict[str, Any]:
    """The journal detail of A's clock and CVV before the loss, for the step that makes A recovering."""
    return {"seq_before": seq, "cvv_before": cvv.to_dict()}


def before_loss(ctx: OperationContext, loc: Location) -> tuple[int, VectorTime]:
    """A's seq and CVV before the loss: the catalog's, unless A is recovering after a run that was killed,
    failed or ended incomplete once it had recomputed them (DR1); then the ones that run journalled (walking
    back over later runs that did not reach that step). An incomplete run left out of `lost` what its refused
    neighbours still held; the run that accepts their loss (DR5) must measure it against the same clock."""
    for op in _same_loss(ctx, loc):
        for step in op.steps:
            if step.name in BEFORE_STEPS and "cvv_before" in step.detail:
                return int(step.detail["seq_before"]), VectorTime(step.detail["cvv_before"])
    return loc.seq, loc.cvv


def _given_up_before(ctx: OperationContext, loc: Location) -> dict[str, loss_core.Runs]:
    """What the earlier runs on this loss gave up accepting losses (DR5), per origin the runs `(from, to)`: a run
    killed after its merges, or one that ended incomplete, reported none of it, and its re-run merges nothing
    more (the merged DVVs are in A's CVV already), yet it must still name it in `lost`."""
    gone: dict[str, loss_core.Runs] = {}
    # Every run while A stayed recovering, not only those back to the newest loss: a loss found again while A
    # was recovering (a second disaster) does not give back what an earlier run gave up.
    for op in _while_recovering(ctx, loc):
        for step in op.steps:
            for origin, (lo, hi) in (
                step.detail.get("given_up", {}).items() if step.name == ACCEPT_STEP else ()
            ):
                _widen(gone, origin, int(lo), int(hi))
    return gone


def _same_loss(ctx: OperationContext, loc: Location) -> list[Operation]:
    """The earlier `recover` runs on A's current loss, newest first: those while A stayed recovering, back to
    the one that made it recovering (the metadata or restore step)."""
    same = []
    for op in _while_recovering(ctx, loc):
        same.append(op)
        if any(step.name in BEFORE_STEPS and "cvv_before" in step.detail for step in op.steps):
            break
    return same


def _while_recovering(ctx: OperationContext, loc: Location) -> list[Operation]:
    """The earlier `recover` runs on A since it last left recovery, newest first (none unless A is
    recovering). A run left it when it succeeded, or when its `end` step made A active: a run whose report
    failed after that step (or that was stopped there) ended A's recovery all the same."""
    if loc.state is not LocationState.RECOVERING:
        return []
    with ctx.transaction(readonly=True) as tx:
        runs = tx.find_operations("recover location", {"location": loc.name})
    since = []
    for op in runs:
        if op.id == ctx.id:
            continue
        if op.outcome is Outcome.SUCCEEDED or any(
            step.name == END_STEP and step.detail.get("state") == LocationState.ACTIVE.value
            for step in op.steps
        ):
            break
        since.append(op)
    return since


def _start_of_rounds(ctx: OperationContext, loc: Location) -> VectorTime:
    """The CVV A's event recovery started from on its current loss (DR1): the one the metadata or restore step
    journalled, in this run or in the earlier run it resumes. A pass that ran before a kill raised A's CVV
    since, so the catalog's is no start. With no such step journalled, `DVV-A ⊔ baseline`: lower, so the
    loss report checks more origin times, never fewer (`loss.unproven_origins`)."""
    with ctx.transaction(readonly=True) as tx:
        runs = tx.find_operations("recover location", {"location": loc.name})
    for op in runs:
        if op.id != ctx.id and op.outcome is Outcome.SUCCEEDED:
            break  # an earlier loss, recovered
        for step in op.steps:
            if step.name in BEFORE_STEPS and "cvv" in step.detail:
                return VectorTime(step.detail["cvv"])
    return loc.dvv | loc.baseline


def _widen(gone: dict[str, loss_core.Runs], origin: str, lo: int, hi: int) -> None:
    """Add the origin times `lo..hi` of `origin` to `gone`, kept as runs (`lost_runs`): an origin time
    between two accepted ranges that a round brought back is not lost."""
    gone[origin] = loss_core.union([*gone.get(origin, []), (lo, hi)])


def _check_lost_from(loc: Location, lost_from: int) -> None:
    """DR0: a declared loss starts at a seq A assigned, 1..A.seq; anything else is a typo that must change
    nothing (finding 7: `--lost-from 999` on a log at seq 19 ran a whole recovery). Checked before the
    operation starts, so nothing is journalled."""
    if 1 <= lost_from <= loc.seq:
        return
    hint = (
        f"{loc.name} has assigned no seq yet, so it has nothing to lose; check the name"
        if loc.seq == 0
        else f"give a seq from 1 to {loc.seq}, the last seq {loc.name} assigned (replctl log show {loc.name})"
    )
    raise InvalidInput(
        f"--lost-from {lost_from} is outside {loc.name}'s log (seqs 1..{loc.seq}) (DR0)",
        code="bad-number",
        hint=hint,
    )


def _recover(
    ctx: OperationContext,
    engine: DataPlane,
    name: str,
    *,
    declared: int | None,
    accept_loss: bool,
    manifests: list[Manifest] | None,
) -> dict[str, Any]:
    with ctx.transaction() as tx:
        loc = get_location(tx, name)
        segments = tx.segments(name)
    first_lost, found, past, read = _find_loss(engine, segments, declared)
    # What the recovery reports lost is measured against these: A's clock and CVV before the loss, which a
    # resumed run reads from the run it resumes (A's CVV was already recomputed from the survivors).
    clock_before, cvv_before = before_loss(ctx, loc)
    doc: dict[str, Any] = {
        "location": name,
        "lost_from": first_lost,
        "dry_run": ctx.dry_run,
        "clock": {"before": clock_before, "after": clock_before},
        "progress_resets": [],
        "rounds": [],
        "refused": [],
        "accepted": [],
        "given_up": {},
        "cvv": loc.cvv.to_dict(),
        "discarded": {},
        "lost": {},
        "lost_runs": {},
    }
    if first_lost is not None:
        _consent(
            ctx,
            engine,
            loc,
            segments,
            first_lost=first_lost,
            found=found,
            past=past,
            read=read,
            manifests=manifests,
            doc=doc,
            accept_loss=accept_loss,
        )
        hit("recover.after-census")  # the loss is known, A not yet marked recovering: a re-run finds it again
        loc = _recover_metadata(
            ctx, engine, loc, segments=segments, first_lost=first_lost, doc=doc, before=cvv_before
        )
    elif loc.state is not LocationState.RECOVERING and not _blocked_into(ctx, name):
        doc["nothing_to_do"] = True
        return doc
    return finish_recovery(
        ctx, engine, name, accept_loss, doc, before=cvv_before, deleted_own=dr.own_not_held(loc)
    )


def _consent(
    ctx: OperationContext,
    engine: DataPlane,
    loc: Location,
    segments: list[Segment],
    *,
    first_lost: int,
    found: int | None,
    past: bool,
    read: Mapping[str, Mapping[str, dr.FileRead]],
    manifests: list[Manifest] | None,
    accept_loss: bool,
    doc: dict[str, Any],
) -> None:
    """Before anything changes, dry run and run alike: BK3's refusal to lose what A's backup holds, then DR0's
    consent to discard intact events no other location stores (a declared loss below the census's own first
    gap, and what the store still holds past that gap: `past`, and a file whose bytes changed, `read` as the
    census gave it)."""
    _refuse_older_store(engine.store, loc, found, accept_loss=accept_loss)
    split = dr.split_segments(segments, first_lost)
    how = "" if first_lost == found else f" --lost-from {first_lost}"
    # Reads only, around data-plane jobs (DR0's stored identities, BK3's hidden prefixes): no write lock.
    with ctx.transaction(readonly=True) as tx:
        others = [x.cvv for x in tx.locations() if x.name != loc.name]

        def start() -> VectorTime:
            # DR1: A's CVV from every survivor, those of the segment straddling the first lost seq too, read
            # as the run keeps them (`_recover_metadata`); left out, BK3 refused a recovery that loses
            # nothing the backup holds, naming as lost what A still stores.
            kept = engine.survivors_below(split.straddle, first_lost) if split.straddle else None
            return dr.recovered_clock(loc, _survivors_lub(split, kept), others).cvv

        # BK3 before DR0: what A's backup holds comes back with `--from-backup`, without consent. Asked
        # second, DR0's refusal of a changed file sent the operator to `--accept-loss`, which loses for good
        # the events the backup would have restored.
        loss.refuse_backup_held(
            tx, engine, loc, start, manifests=manifests, restoring=None, how=how, accept_loss=accept_loss
        )
        if first_lost != found or past:
            # The declared cut lies below what the census found lost: from it up to the census's gap (or the
            # end), the store still holds the events (a straddling segment counts whole). Past a gap in the
            # middle of the log (a file lost or damaged, intact ones after it), the store still holds events
            # too, which the recovery discards with the rest of the suffix: a truncated file silently took
            # intact later events of a location that alone stored them.
            below = None if past else found
            cut, changed = dr.without_changed(
                [s for s in segments if s.seq_hi >= first_lost and (below is None or s.seq_lo < below)], read
            )
            loss.refuse_discard(
                tx,
                engine,
                loc,
                cut,
                seq_from=first_lost,
                seq_below=below,
                how=how,
                accept_loss=accept_loss,
                doc=doc,
                changed=changed,
            )


def finish_recovery(
    ctx: OperationContext,
    engine: DataPlane,
    name: str,
    accept_loss: bool,
    doc: dict[str, Any],
    *,
    before: VectorTime,
    deleted_own: int,
    kept_own: set[int] | None = None,
) -> dict[str, Any]:
    """After the metadata step: event recovery in rounds (DR3–DR5), then the clock past T (DR1); `doc["lost"]`
    is what of `before`, A's CVV before the recovery, it could not get back. `deleted_own` is DVV-A[A] before
    the loss (own events A deleted on purpose are not lost); `kept_own`, for a dry run, the own origin times
    the recovery keeps when they are not A's stored survivors (a restore keeps the backup's). What an accepted
    loss gave up (DR5) is named in `lost` too, though A's CVV now covers it."""
    start_own = VectorTime(doc["cvv"])[name]
    with ctx.transaction() as tx:
        loc = get_location(tx, name)
    gone = _given_up_before(ctx, loc)
    if name in gone:
        # An earlier run on this loss merged a refused neighbour's DVV-N[A] into DVV-A (DR5): what it gave up of
        # A's own events is lost, not deleted on purpose, though the catalog's DVV-A now says otherwise.
        deleted_own = min(deleted_own, gone[name][0][0] - 1)
    for origin, runs in _event_recovery(ctx, engine, name, accept_loss, doc).items():
        for lo, hi in runs:
            _widen(gone, origin, lo, hi)
    if not doc["refused"]:
        # A complete recovery counts every baseline entry again (DR1): what A stored under one still held
        # back came from no source, and is lost (core.recovery.unrecovered).
        with ctx.transaction(readonly=True) as tx:
            now = get_location(tx, name)
        for origin, (lo, hi) in dr.unrecovered(
            now, VectorTime(doc["cvv"]) if ctx.dry_run else now.cvv
        ).items():
            _widen(gone, origin, lo, hi)
    if ctx.dry_run:
        # Reads only, around data-plane jobs (the own origin times stored): no write lock.
        with ctx.transaction(readonly=True) as tx:
            current = get_location(tx, name)
            others = [x.cvv for x in tx.locations() if x.name != name]
            if kept_own is None:
                # The survivors: A's stored rows below the first lost seq, as the run keeps them (DR1).
                mine = dr.rows_below(tx.segments(name), doc["lost_from"])
                kept_own = (
                    engine.origin_times(
                        mine, name, above=deleted_own, upto=before[name], seq_below=doc["lost_from"]
                    )
                    if mine
                    else set()
                )
            own = loss.own_lost_planned(
                tx, engine, name, before, deleted_own=deleted_own, kept=kept_own, start_own=start_own, doc=doc
            )
            reached = VectorTime(doc["cvv"])
            if not doc["refused"]:
                reached = dr.recovery_done(replace(current, cvv=reached)).cvv
            loss.report_lost(tx, name, before, reached, doc, own=own, given_up=gone, planned=True)
            doc["cvv"] = reached.to_dict()
        if doc["rounds"]:
            # The events recovered take new seqs after T (DR1), as many as the passes examine: only the
            # run knows, so the dry run promises no number it cannot keep (issue 14).
            doc["clock"]["after"] = None
        else:
            seq = (
                max(doc["survivors_upto"], doc["clock"]["floor"]) if "floor" in doc["clock"] else current.seq
            )
            planned, _ = _ended(replace(current, seq=seq, cvv=VectorTime(doc["cvv"])), others, doc)
            doc["clock"]["after"] = planned.seq
        return doc
    hit("recover.before-end")
    with ctx.transaction() as tx:
        current = get_location(tx, name)
        ended, floor = _ended(current, [x.cvv for x in tx.locations() if x.name != name], doc)
        tx.put_location(ended)
        ctx.step(tx, END_STEP, {"seq": ended.seq, "floor": floor, "state": ended.state.value})
    if doc["refused"]:
        # Known with the end's commit, not after the report: a Ctrl-C in the report journals the outcome the
        # commit left (incomplete, A still recovering, DR0), or the next run would take this one for the end
        # of A's recovery (`_while_recovering`) and measure the loss against the recomputed clock.
        ctx.mark_incomplete(again=f"replctl recover location {name}")
    ctx.all_committed()  # the report below only reads: a Ctrl-C there leaves the recovery done (issue 18)
    hit("recover.after-end")
    # The report reads only, around a data-plane job (the own origin times still stored): no write lock.
    start = _start_of_rounds(ctx, ended)
    with ctx.transaction(readonly=True) as tx:
        own = loss.own_lost_after(tx, engine, name, before, deleted_own=deleted_own, doc=doc)
        unproven = loss.unproven_origins(tx, engine, name, doc, before=before, start=start)
        loss.report_lost(tx, name, before, ended.cvv, doc, own=own, given_up=gone, unproven=unproven)
    doc["clock"]["after"] = ended.seq
    doc["cvv"] = ended.cvv.to_dict()
    return doc


def _ended(current: Location, others: list[VectorTime], doc: dict[str, Any]) -> tuple[Location, int]:
    """The location as recovery leaves it, and T, for the run and its dry run alike."""
    floor = dr.recovered_clock(current, current.cvv, others).floor
    # DR1: the clock never runs in the past; the next own event gets origin_time > T.
    # DR0: an incomplete recovery (DR5 refusals) leaves the location recovering, so appends, replication
    # into it, deletions and compaction keep waiting until a later `recover` completes.
    if doc["refused"]:
        return replace(current, seq=max(current.seq, floor)), floor
    return replace(dr.recovery_done(current), seq=max(current.seq, floor), state=LocationState.ACTIVE), floor


def _refuse_older_store(store: LogStore, loc: Location, found: int | None, *, accept_loss: bool) -> None:
    """DR0's consent, for a store older than the catalog: when what the census finds missing begins above every
    seq of A the store's marker ever recorded, the store most likely is a copy or an older state of the live
    one (`services.store_identity`), where those events may be intact; recovering against it would record them
    lost for good. A command killed between its commit and raising the marker looks the same: the operator
    says which it is (`--accept-loss`)."""
    if found is None or accept_loss:
        return
    marker = store.read_marker()
    if marker is None or loc.name not in marker.seqs:
        return  # no command has written A's log since the store recorded seqs: it says nothing about them
    seen = marker.seqs[loc.name]
    if found <= seen:
        return
    raise EnvironmentFailure(
        f"{loc.name}'s log lacks its events from seq {found} on, and the store at {store.root} never recorded "
        f"{loc.name} past seq {seen}: the store is older than this catalog (a copy, or a store restored from "
        "a file backup), and those events may be intact in the live store; nothing was changed",
        code="store-behind",
        hint=(
            "check --store (or REPLCTL_STORE); if this is the live store and those files are lost for good: "
            f"replctl recover location {loc.name} --accept-loss"
        ),
    )


def _find_loss(
    engine: DataPlane, segments: list[Segment], declared: int | None
) -> tuple[int | None, int | None, bool, dict[str, dict[str, dr.FileRead]]]:
    """DR0: the declared first lost seq, or the first seq the store no longer holds as catalogued (a gap
    counts from its start: what follows it is not claimed as held); what the census alone found; whether
    the store still holds events past that gap (`core.recovery.held_past`); and what the census read
    (`core.recovery.without_changed` takes the files whose bytes changed from it)."""
    found, past = None, False
    read: dict[str, dict[str, dr.FileRead]] = {}
    if segments:
        read = engine.census(segments)
        found = dr.lost_from(segments, read)
        past = found is not None and dr.held_past(read, found)
    if declared is None:
        return found, found, past, read
    return (declared if found is None else min(declared, found)), found, past, read


def _blocked_into(ctx: OperationContext, name: str) -> bool:
    with ctx.transaction() as tx:
        return any(c.target == name and c.state is ConnectionState.BLOCKED for c in tx.connections())


def _survivors_lub(split: dr.Split, kept: SegmentStats | None) -> VectorTime:
    """DR1: the LUB of the surviving vts, the whole segments below the first lost seq and the rows `kept` of
    the one straddling it."""
    return lub([*(s.vt_lub for s in split.keep), VectorTime(kept.vt_lub if kept else {})])


def _recover_metadata(
    ctx: OperationContext,
    engine: DataPlane,
    loc: Location,
    *,
    segments: list[Segment],
    first_lost: int,
    doc: dict[str, Any],
    before: VectorTime,
) -> Location:
    """DR1 and DR2 in one transaction: survivors, CVV, numbering from the last survivor, progress resets."""
    split = dr.split_segments(segments, first_lost)
    kept_stats, out_rel = None, None
    if split.straddle is not None and ctx.dry_run:
        # DR1, finding 4: the survivors of a straddling segment are its rows below the first lost seq, read
        # exactly as the run reads them to keep them (written nowhere): the dry run predicted none, a loss
        # larger than the run's and a reset of progress below what the readers then kept.
        kept_stats = engine.survivors_below(split.straddle, first_lost)
    elif split.straddle is not None:
        out_rel = engine.store.new_segment_path(loc.name, split.straddle.seq_lo)
        with ctx.transaction() as tx:
            clk = clocks(tx.locations())
        kept_stats = engine.truncate_below(
            split.straddle,
            first_lost,
            out_rel,
            keys=clk.vt_keys(loc.cvv),
            identity_origins=clk.identity_origins,
        )
    hit("recover.before-metadata")  # survivors of a straddling segment written, catalog not yet
    # Their inventory reads and hashes the files: before the write lock, not under it.
    files = engine.record_files(out_rel) if out_rel is not None else None
    survivors = _survivors_lub(split, kept_stats)
    last_survivor = max(
        [loc.deleted_upto, *(s.seq_hi for s in split.keep), kept_stats.seq_hi if kept_stats else 0]
    )
    with ctx.transaction() as tx:
        others = [x.cvv for x in tx.locations() if x.name != loc.name]
        clock = dr.recovered_clock(loc, survivors, others)
        resets = dr.progress_resets(tx.connections(), loc.name, last_survivor)
        doc["progress_resets"] = [r.to_json() for r in resets]
        doc["survivors_upto"] = last_survivor
        doc["clock"]["floor"] = clock.floor
        if ctx.dry_run:
            doc["cvv"] = clock.cvv.to_dict()
            # The location as the run leaves it after DR1: the rounds below are planned from its CVV (DR4),
            # so the dry run refuses exactly the sources the run refuses (issue 14, case 3).
            return dr.recovering(loc, clock, last_survivor)
        gone = [*split.lost, *([split.straddle] if split.straddle else [])]
        tx.delete_segments([s.id for s in gone])
        if kept_stats is not None and out_rel is not None:
            tx.add_written_segment(loc.name, out_rel, kept_stats, ctx.id, files)
        for reset in resets:
            tx.put_connection(replace(reset.connection, progress=reset.to))
        recovering = dr.recovering(loc, clock, last_survivor)
        tx.put_location(recovering)
        ctx.step(
            tx,
            "metadata",
            {
                "lost_from": first_lost,
                "survivors_upto": last_survivor,
                "cvv": clock.cvv.to_dict(),
                "floor": clock.floor,
                **before_loss_detail(doc["clock"]["before"], before),
            },
        )
    hit("recover.after-metadata")
    for seg in gone:
        engine.store.remove(seg.path)
    return recovering


def _event_recovery(
    ctx: OperationContext,
    engine: DataPlane,
    name: str,
    accept_loss: bool,
    doc: dict[str, Any],
) -> dict[str, loss_core.Runs]:
    """DR3–DR5: rounds over the eligible sources, then report and block the rest, or accept their loss round
    by round; returns what the accepted losses gave up, per origin the runs `(from, to)` (for `lost_runs`).

    Accepting is done in DR4's order, never all at once: first the DVV of the eligible source that gives up
    least (`least_loss`), then DR4's rounds again in this run, until every eligible source served; only then
    what a neighbour refused by DR3 deleted, for what A still lacks. Merging a DR3-refused neighbour's DVV
    first made CF1 skip, as held already, events an eligible source still stored: a loss nobody named."""
    from replctl.filterexpr import or_origin

    with ctx.transaction() as tx:
        state = load_state(tx)
        connections = {c.key: c for c in tx.connections()}
        dvvs = {x.name: x.dvv for x in tx.locations()}
        cvvs = {x.name: x.cvv for x in tx.locations()}
        # A dry run plans from the CVV the metadata step would leave (doc), as the run does after committing it.
        loc = get_location(tx, name)
        cvv = VectorTime(doc["cvv"]) if ctx.dry_run else loc.cvv
        sources, refused = dr.eligible_sources(state, name, connections, or_origin)
        stored = {s.name: tx.segments(s.name) for s in sources}
    # DR0 before DR5: a damaged eligible source serves nothing now; a loss accepted past it would make CF1 skip,
    # once it is recovered, events it still stores. The census is the passes' own (files, not under the write
    # lock), so the dry run and the run see the same damage.
    unsound = frozenset(s.name for s in sources if find_damage(engine.store, stored[s.name]))
    pending = list(sources)
    rounds: list[dict[str, Any]] = []
    damaged: list[dict[str, Any]] = []
    gone: dict[str, loss_core.Runs] = {}
    # Every round, first and after each acceptance, runs over the same sources and fills the same report.
    rounds_from = partial(
        _rounds,
        ctx,
        engine,
        name,
        pending,
        dvvs=dvvs,
        cvvs=cvvs,
        rounds=rounds,
        damaged=damaged,
        unsound=unsound,
        counted=partial(dr.with_baseline, loc),
    )

    def counted(cvv: VectorTime) -> VectorTime:
        # A's vector with the baseline entries whose events are back (DR1), before a round as after one.
        return dr.with_baseline(loc, cvv) if ctx.dry_run else _counted_cvv(ctx, name)

    cvv = rounds_from(cvv=counted(cvv))
    # Nothing is accepted in a run a damaged source could not serve: the re-run after its recovery decides.
    accept_loss = accept_loss and not unsound and not damaged
    while pending and accept_loss:
        source = dr.least_loss(pending, dvvs, cvv)
        cvv = _accept(ctx, name, source.name, dvvs[source.name], cvv, doc=doc, gone=gone)
        cvv = rounds_from(cvv=counted(cvv))
        accept_loss = not damaged
    if accept_loss:
        for r in refused:
            cvv = _accept(ctx, name, r.source, dvvs[r.source], cvv, doc=doc, gone=gone)
        refused = []
    refused += [dr.dr4_refusal(s.name, dvvs[s.name], cvv, name) for s in pending]
    _block(ctx, name, refused, doc=doc)
    doc["refused"] += damaged
    doc["rounds"] = rounds
    if ctx.dry_run:
        doc["cvv"] = cvv.to_dict()  # the vector the rounds and acceptances on paper reach, as the run's
    return gone


def _rounds(
    ctx: OperationContext,
    engine: DataPlane,
    name: str,
    pending: list[dr.Source],
    *,
    dvvs: dict[str, VectorTime],
    cvvs: dict[str, VectorTime],
    cvv: VectorTime,
    rounds: list[dict[str, Any]],
    damaged: list[dict[str, Any]],
    unsound: frozenset[str],
    counted: Callable[[VectorTime], VectorTime],
) -> VectorTime:
    """DR4: round after round over the `pending` sources that meet `DVV-N ≤ CVV-A`, run (or, in a dry run, on
    paper with the same `ready_sources`); appends to `rounds`, takes the served sources out of `pending` and
    returns the CVV A reaches. A source in `unsound` (damaged, DR0) takes its place in a round and brings
    nothing: its pass waits for its recovery. After each round A's vector counts the baseline entries
    whose events are back (`counted`, core.recovery.with_baseline): the run records it in the catalog."""
    if ctx.dry_run:
        # Issue 14: every round, on paper (DR4 with the same `ready_sources` the run asks round by round);
        # the vector A reaches is what the later rounds and the refusals are checked against.
        brings = {n: VectorTime() if n in unsound else v for n, v in cvvs.items()}
        planned = dr.plan_rounds(pending, dvvs, brings, cvv, name, counted=counted)
        for sources in planned.rounds:
            rounds.append({"round": len(rounds) + 1, "sources": [s.name for s in sources], "written": None})
            # What the run's pass over a damaged source reports, said before it runs.
            damaged += [_damaged_source(s.name) for s in sources if s.name in unsound]
        pending[:] = planned.pending
        return planned.vector
    while ready := dr.ready_sources(pending, dvvs, cvv):
        written = 0
        for source in ready:
            report = run_pass(ctx, engine, source.name, name, recovery=True, recovery_filter=source.filter)
            written += report.written or 0  # a run's pass always knows its count
            pending.remove(source)
            if report.action == DAMAGED:
                # DR0: a damaged source served nothing; the recovery is not complete without it, and a
                # re-run once that source is recovered reads it (its connection is not blocked: DR5 is
                # about what the source deleted, not about its store).
                damaged.append(_damaged_source(source.name, report.reason))
        rounds.append({"round": len(rounds) + 1, "sources": [s.name for s in ready], "written": written})
        cvv = _counted_cvv(ctx, name)
    return cvv


def _counted_cvv(ctx: OperationContext, name: str) -> VectorTime:
    """A's CVV with every baseline entry whose events are back (DR1, core.recovery.with_baseline), recorded
    in the catalog: a re-run after a kill starts from it, and DR4 checks the next round against it."""
    with ctx.transaction() as tx:
        loc = get_location(tx, name)
        cvv = dr.with_baseline(loc, loc.cvv)
        if cvv != loc.cvv:
            tx.put_location(replace(loc, cvv=cvv))
        return cvv


def _damaged_source(source: str, reason: str | None = None) -> dict[str, Any]:
    """The refusal entry of an eligible source whose log is damaged (DR0): it serves nothing until recovered."""
    why = reason or f"waits: {source}'s log is damaged (DR0); run: replctl recover location {source}"
    return {"source": source, "rule": "DR0", "reason": why, "missing": {}}


def _accept(
    ctx: OperationContext,
    name: str,
    source: str,
    merged: VectorTime,
    cvv: VectorTime,
    *,
    doc: dict[str, Any],
    gone: dict[str, loss_core.Runs],
) -> VectorTime:
    """DR5 `--accept-loss` for one neighbour: merge what of its DVV A still lacks into CVV-A and A's baseline
    (core.recovery.merge_accepted), unblock it, record it; the dry run accepts on paper what the run accepts
    (issue 14). Returns A's CVV after; `gone` gathers what the merge gave up."""
    merged = dr.still_missing(merged, cvv)
    given = dr.given_up(merged, cvv)
    for origin, (lo, hi) in given.items():
        _widen(gone, origin, lo, hi)
    doc["accepted"].append(source)
    doc["given_up"][source] = {o: list(r) for o, r in given.items()}
    if ctx.dry_run:
        return cvv | merged
    with ctx.transaction() as tx:
        conn = tx.connection(source, name)
        loc = get_location(tx, name)
        tx.put_location(dr.merge_accepted(loc, merged))
        if conn is not None and conn.current:
            tx.put_connection(replace(conn, state=ConnectionState.ACTIVE, reason=None))
        ctx.step(
            tx,
            ACCEPT_STEP,
            {
                "source": source,
                "merged": merged.to_dict(),
                "given_up": {o: list(r) for o, r in given.items()},
            },
        )
        return get_location(tx, name).cvv


def _block(ctx: OperationContext, name: str, refused: list[dr.Refusal], *, doc: dict[str, Any]) -> None:
    """DR5: report every neighbour that could not serve, and block its N→A connection (not in a dry run)."""
    doc["refused"] = [
        {
            "source": r.source,
            "rule": r.rule,
            "reason": r.reason,
            # Per origin the origin times A lacks that the source deleted, [from, to] as in `lost`.
            "missing": {k: [have + 1, deleted] for k, (deleted, have) in r.missing.items()},
        }
        for r in refused
    ]
    if ctx.dry_run:
        return
    with ctx.transaction() as tx:
        for r in refused:
            conn = tx.connection(r.source, name)
            if conn is not None and conn.current:
                tx.put_connection(
                    replace(conn, state=ConnectionState.BLOCKED, reason=f"blocked [{r.rule}/DR5]: {r.reason}")
                )
