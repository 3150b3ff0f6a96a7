"""No silent loss in recovery (rules.md DR0, DR1, DR5, BK2, BK3): consent before discarding, a report after.

`recover location` and its `--from-backup` form call these before they change anything, dry run and run alike
(the same code path, from the catalog, the manifests and the stored identities, core.loss):

- `refuse_discard`: a declared loss or a restore that drops events the store still holds intact, among them
  events no other location stores (the data plane decides it on the stored identities), is refused (exit 3,
  DR0) unless `--accept-loss`; with it the outcome names them (`discarded`).
- `refuse_backup_held`: when DR4's rounds on paper leave part of A's pre-loss CVV uncovered and A's newest
  backup holds that part, a recovery not from that backup is refused (exit 3, BK3) unless `--accept-loss`,
  with the hint naming the restore.
- `report_lost`: after the rounds (or their plan, in a dry run) what the recovery could not get back, per
  origin as origin-time ranges (BK3's shape), leaving out what a refused neighbour still holds (DR5: it may
  serve a later `recover`), except A's own events only a neighbour refused by DR3 holds (`lasting_holders`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from replctl.core import backups as bk
from replctl.core import loss
from replctl.core import recovery as dr
from replctl.core.model import Location, Segment
from replctl.core.vectortime import VectorTime
from replctl.errors import Refused
from replctl.services.ports import CatalogTransaction, DataPlane
from replctl.services.topology_state import load_state


def refuse_discard(
    tx: CatalogTransaction,
    engine: DataPlane,
    loc: Location,
    cut: Sequence[Segment],
    *,
    seq_from: int,
    seq_below: int | None,
    how: str,
    accept_loss: bool,
    doc: dict[str, Any],
    changed: Sequence[tuple[int, int]] = (),
) -> None:
    """DR0: refuse to drop the events A still stores intact (those of `cut` with seq in [`seq_from`,
    `seq_below`)) that no other live location stores, of any origin, unless `accept_loss`; then
    `doc["discarded"]` names them per origin. `how` is the option that asked (` --lost-from 3`).

    `changed`: the seq ranges of A's files whose bytes changed since they were written
    (`core.recovery.without_changed`; `cut` names none of them). Nothing says which events they held, so
    dropping them needs the consent too, whatever other locations store (those come back from them).

    Decided on what is stored, not on CVVs: a CVV also covers events its location deleted physically (EM2)
    or never received through a filtered connection, which are held nowhere."""
    elsewhere = [
        s for x in tx.locations() if x.name != loc.name and not x.retired for s in tx.segments(x.name)
    ]
    found = engine.unheld(cut, seq_from=seq_from, seq_below=seq_below, elsewhere=elsewhere) if cut else {}
    doc["discarded"] = {o: list(loss.span(times)) for o, times in found.items()}
    rotted = [(lo, hi) for lo, hi in changed if hi >= seq_from and (seq_below is None or lo < seq_below)]
    if not (found or rotted) or accept_loss:
        return
    said = (
        [f"{loss.ranges_text(found)}, which {loc.name} still stores intact and no other location stores"]
        if found
        else []
    )
    if rotted:
        seqs = ", ".join(f"{lo}..{hi}" if hi != lo else str(lo) for lo, hi in rotted)
        said.append(
            f"the events of seq {seqs} of {loc.name}'s log, in a file whose bytes changed since it was written "
            "(log verify names it; what other locations store of them comes back from them)"
        )
    raise Refused(
        f"refused [DR0]: recover location {loc.name}{how} would discard {', and '.join(said)}; nothing was "
        "changed",
        code="DR0",
        hint=f"replctl recover location {loc.name}{how} --accept-loss"
        + (" (copy the changed file aside first to keep what it still reads)" if rotted else ""),
    )


def refuse_backup_held(
    tx: CatalogTransaction,
    engine: DataPlane,
    loc: Location,
    start: Callable[[], VectorTime],
    *,
    manifests: Iterable[bk.Manifest] | None,
    restoring: str | None,
    how: str,
    accept_loss: bool,
) -> None:
    """BK3: refuse, before anything changes, a recovery that would lose what A's newest backup holds, unless
    it restores that backup or `accept_loss`. `start` gives A's CVV once its survivors are known (DR1); it is
    asked only when there is a backup to lose (it may read the survivors of a straddling segment)."""
    newest = bk.newest(manifests or [], loc.name)
    if newest is None or newest.id == restoring or accept_loss:
        return
    survived = start()
    lost = loss.unrecovered(loc.cvv, survived, _planned(tx, engine, loc.name, survived))
    held = loss.held_by(lost, newest.cvv)
    if held:
        raise Refused(
            f"refused [BK3]: recover location {loc.name}{how} would lose {bk.shortfall_text(held)}, which "
            f"backup {newest.id} holds; nothing was changed",
            code="BK3",
            hint=f"replctl recover location {loc.name} --from-backup {newest.id}",
        )


def report_lost(
    tx: CatalogTransaction,
    name: str,
    before: VectorTime,
    reached: VectorTime,
    doc: dict[str, Any],
    *,
    own: list[int],
    given_up: Mapping[str, loss.Runs] | None = None,
    planned: bool = False,
    unproven: Collection[str] = (),
) -> None:
    """`doc["lost"]`: what of `before` (A's CVV before the recovery) the recovery's `reached` vector lacks and
    no refused neighbour still holds (those may serve a later `recover`, DR5): lost for good.

    A's own part is exact (`own`, from `own_lost_after` or `own_lost_planned`): a CVV covers own events A
    never stored again (a filtered terminal recovery, DR3, brings only what its source stores). In a dry run
    (`planned`) an entry only the run can tell is None. `given_up` is what accepted losses merged into A's
    CVV (DR5, per origin the runs `(from, to)`): `reached` covers it, yet no event of it came back, so the part A held
    before is lost (A's own part is in `own`). `unproven` are the foreign origins of which the run cannot tell
    whether all came back (`unproven_origins`): None too."""
    # Accepted neighbours are unblocked: what they hold comes by ordinary replication (DR5).
    refused = {r["source"] for r in doc["refused"]} | set(doc["accepted"])
    # Such a neighbour stores only what it has not deleted: per origin the times above its DVV up to its CVV
    # (EM3: an origin's events are stored in origin-time order, so a deleted prefix holds the low ones).
    held = [(x.dvv, x.cvv) for x in tx.locations() if x.name in refused]
    runs: dict[str, loss.Runs | None] = {}
    runs.update(loss.with_given_up(loss.unrecovered(before, reached, held), given_up or {}, before))
    runs.pop(name, None)
    if planned:
        # A filtered terminal source's pass (DR3) brings the foreign events its filter passes: which ones
        # depends on their contents, so a gap such a source's CVV reaches is known only by running.
        served = filtered_sources(tx, name, doc)
        filtered = [x.cvv for x in tx.locations() if x.name in served]
        for origin, gaps in list(runs.items()):
            if gaps and any(cvv[origin] >= gaps[0][0] for cvv in filtered):
                runs[origin] = None
    for origin in unproven:
        # The run's filtered pass left out events of this origin that A may have held (`unproven_origins`):
        # A's CVV covers them now, so its shortfall says nothing about them. Unknown, as the dry run says.
        runs[origin] = None
    if own:
        runs[name] = loss.own_runs(own, emitted_ranges(tx, name))
    # `lost` names each origin's first and last lost origin time, `lost_runs` exactly which: what a refused
    # neighbour still holds between two gaps is not lost (DR5), nor are the times of other origins' events
    # between two own ones (EM1).
    ordered = dict(sorted(runs.items()))
    doc["lost"] = {o: None if r is None else [r[0][0], r[-1][1]] for o, r in ordered.items()}
    doc["lost_runs"] = {o: None if r is None else [list(run) for run in r] for o, r in ordered.items()}


def filtered_sources(tx: CatalogTransaction, name: str, doc: Mapping[str, Any]) -> set[str]:
    """The sources of the recovery's rounds (`doc["rounds"]`) whose pass was filtered (DR3: a terminal
    location's source, unless its connection into A was ever unfiltered), as `eligible_sources` decides it for
    the passes themselves."""
    sources, _ = dr.eligible_sources(
        load_state(tx), name, {c.key: c for c in tx.connections()}, dr.any_filter
    )
    served = {n for r in doc["rounds"] for n in r["sources"]}
    return {s.name for s in sources if s.filter is not None and s.name in served}


def unproven_origins(
    tx: CatalogTransaction,
    engine: DataPlane,
    name: str,
    doc: Mapping[str, Any],
    *,
    before: VectorTime,
    start: VectorTime,
) -> set[str]:
    """After the run: the foreign origins of which a filtered source's pass (DR3) may have left out an event A
    held before the loss. `start` is A's CVV when its event recovery began (DR1).

    A's CVV after such a pass covers the events the filter dropped (through the vts of the events it wrote),
    so it proves nothing about them. What proves an origin is that every event of it with origin time in
    (`start`, `before`] is stored at A now: those the origin emitted (its appends, from the journal) and those
    the source stores. Then A holds every event of that origin it could have held. The source's store alone
    is no proof: A may have held events its only neighbour never stored (from a neighbour since retired, which
    the source's CVV covers through another location or a history mode, ADD3). Otherwise: unknown.
    """
    served = filtered_sources(tx, name, doc)
    origins = sorted(o for o, t in before.to_dict().items() if o != name and t > start[o])
    if not served or not origins:
        return set()
    mine = tx.segments(name)
    unproven = set()
    for origin in origins:
        low, high = start[origin], before[origin]
        theirs: set[int] = set()
        for first, last in emitted_ranges(tx, origin):
            theirs.update(range(max(first, low + 1), min(last, high) + 1))
        # And what the source stores, should the journal lack an append.
        for source in sorted(served):
            segments = tx.segments(source)
            if segments:
                theirs |= engine.origin_times(segments, origin, above=low, upto=high)
        held = engine.origin_times(mine, origin, above=low, upto=high) if mine else set()
        if theirs - held:
            unproven.add(origin)
    return unproven


def own_lost_after(
    tx: CatalogTransaction,
    engine: DataPlane,
    name: str,
    before: VectorTime,
    *,
    deleted_own: int,
    doc: dict[str, Any],
) -> list[int]:
    """After the run: every own origin time in (`deleted_own`, CVV-A[A] before] that A does not store, and no
    neighbour that may serve a later `recover` (DR5, `lasting_holders`) stores either."""
    segments = [s for n in [name, *sorted(lasting_holders(tx, name, doc))] for s in tx.segments(n)]
    stored = engine.origin_times(segments, name, above=deleted_own, upto=before[name]) if segments else set()
    return loss.own_lost(before[name], deleted_own, stored, emitted_ranges(tx, name))


def lasting_holders(tx: CatalogTransaction, name: str, doc: Mapping[str, Any]) -> set[str]:
    """The refused or accepted neighbours (DR5) whose store may still bring A's own events back: every one but
    those DR3 refuses. A DR3 refusal never lifts (a filter stays in the history, H3), so no later `recover`
    reads such a neighbour; once its loss is accepted, ordinary replication from it loses the race to A's next
    append, which raises CVV-A[A] past the missing own events (EM1), so CF1 skips them there for good."""
    refused = {r["source"] for r in doc["refused"]} | set(doc["accepted"])
    return refused - dr3_refused(tx, name)


def dr3_refused(tx: CatalogTransaction, name: str) -> set[str]:
    """The neighbours DR3 refuses as recovery sources of `name`, from the topology's history (as the rounds
    decide it), accepted or not."""
    _, refused = dr.eligible_sources(
        load_state(tx), name, {c.key: c for c in tx.connections()}, dr.any_filter
    )
    return {r.source for r in refused if r.rule == "DR3"}


def emitted_ranges(tx: CatalogTransaction, name: str) -> list[tuple[int, int]]:
    """The seq ranges of `name`'s own events (EM1: an own event's origin time is its seq at the append), from
    the journal: each append's step commits with its segment row, so it is there exactly when the events are."""
    from replctl.services.logs import APPEND_COMMAND, APPEND_STEP

    return [
        (int(step.detail["seq_lo"]), int(step.detail["seq_hi"]))
        for op in tx.find_operations(APPEND_COMMAND, {"location": name})
        for step in op.steps
        if step.name == APPEND_STEP
    ]


def own_lost_planned(
    tx: CatalogTransaction,
    engine: DataPlane,
    name: str,
    before: VectorTime,
    *,
    deleted_own: int,
    kept: set[int],
    start_own: int,
    doc: dict[str, Any],
) -> list[int]:
    """The dry run's `own_lost_after`: `kept` are the own origin times the recovery keeps (survivors or the
    backup), `start_own` CVV-A[A] when the rounds start. A round's pass brings every own event its source
    stores above that entry (CF1; a filtered terminal source passes `origin = A`, DR3, so the own part never
    depends on event contents); what no source and no neighbour that may serve a later `recover` stores is
    lost (`lasting_holders`)."""
    refused = lasting_holders(tx, name, doc)
    sources = {n for r in doc["rounds"] for n in r["sources"]}
    wanted = loss.own_lost(before[name], deleted_own, kept, emitted_ranges(tx, name))
    if not wanted:
        return []
    low, high = min(wanted) - 1, max(wanted)

    def stored_at(names: set[str]) -> set[int]:
        segments = [s for n in sorted(names) for s in tx.segments(n)]
        return engine.origin_times(segments, name, above=low, upto=high) if segments else set()

    held, brought = stored_at(refused), stored_at(sources)
    return [t for t in wanted if t not in held and not (t > start_own and t in brought)]


def _planned(
    tx: CatalogTransaction, engine: DataPlane, name: str, start: VectorTime
) -> list[tuple[VectorTime, VectorTime]]:
    """DR3–DR4 on paper (core.recovery.plan_rounds): what each source brings from `start` as `(hidden, cvv)`
    (core.loss.unrecovered), and what the neighbours that cannot serve still hold (DR5: blocked, they may
    serve a later `recover`)."""
    from replctl.filterexpr import or_origin

    state, locations = load_state(tx), {x.name: x for x in tx.locations()}
    connections = {c.key: c for c in tx.connections()}
    sources, refused = dr.eligible_sources(state, name, connections, or_origin)
    planned = dr.plan_rounds(
        sources,
        {n: x.dvv for n, x in locations.items()},
        {n: x.cvv for n, x in locations.items()},
        start,
        name,
        counted=partial(dr.with_baseline, locations[name]),
    )
    brought = []
    for source in (s for ready in planned.rounds for s in ready):
        cvv = locations[source.name].cvv
        # A filtered terminal source surely brings only A's own events (DR3), as plan_rounds counts it.
        brought.append(
            (
                _hidden(tx, engine, locations[source.name]),
                cvv if source.filter is None else VectorTime({name: cvv[name]}),
            )
        )
    for other in [*(r.source for r in refused), *(s.name for s in planned.pending)]:
        cvv = locations[other].cvv
        # Such a neighbour holds only what it has not deleted: above its DVV, as `report_lost` counts it. A
        # DR3 refusal never lifts: what it holds of A's own events never comes back (`lasting_holders`); its
        # foreign events may, once its loss is accepted (DR5).
        lasting = not any(r.source == other and r.rule == "DR3" for r in refused)
        brought.append((locations[other].dvv, cvv if lasting else cvv.without([name])))
    return brought


def _hidden(tx: CatalogTransaction, engine: DataPlane, source: Location) -> VectorTime:
    """What a logical deletion at the source hides from its passes (DEL1): the LUB of the events it reaches,
    from the segment rows, and for a segment it cuts through, from that segment's events up to the cut.

    Counting such a segment whole claimed events above the cut hidden too: BK3 then refused a recovery
    that loses nothing, naming as lost what the source still serves."""
    upto = source.logical_deleted_upto
    if upto <= source.deleted_upto:
        return VectorTime()
    reached = [s for s in tx.segments(source.name) if s.seq_lo <= upto]
    return VectorTime().merge(
        *(s.vt_lub if s.seq_hi <= upto else VectorTime(engine.dropped_lub(s, upto=upto)) for s in reached)
    )
