"""No silent loss in recovery (rules.md DR0, DR1, DR5, BK2, BK3): consent before discarding, a report after.

`recover location` and its `--from-backup` form call these before they change anything, dry run and run alike
(the same code path, from the catalog and the manifests only, core.loss):

- `refuse_discard`: a declared loss or a restore that drops events the store still holds intact, among them
  events of A that no other location holds, is refused (exit 3, DR0) unless `--accept-loss`; with it the
  outcome names them (`discarded`).
- `refuse_backup_held`: when DR4's rounds on paper leave part of A's pre-loss CVV uncovered and A's newest
  backup holds that part, a recovery not from that backup is refused (exit 3, BK3) unless `--accept-loss`,
  with the hint naming the restore.
- `report_lost`: after the rounds (or their plan, in a dry run) what the recovery could not get back, per
  origin as origin-time ranges (BK3's shape), leaving out what a refused neighbour still holds (DR5: it may
  serve a later `recover`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from replctl.core import backups as bk
from replctl.core import loss
from replctl.core import recovery as dr
from replctl.core.model import Location, Segment
from replctl.core.vectortime import VectorTime
from replctl.errors import Refused
from replctl.services.ports import CatalogTransaction
from replctl.services.topology_state import load_state


def refuse_discard(
    tx: CatalogTransaction,
    loc: Location,
    cut: Iterable[Segment],
    *,
    kept_own: int,
    how: str,
    accept_loss: bool,
    doc: dict[str, Any],
) -> None:
    """DR0: refuse to drop intact stored segments holding events of A no other location holds, unless
    `accept_loss`; then `doc["discarded"]` names them. `how` is the option that asked (` --lost-from 3`)."""
    others = [x.cvv for x in tx.locations() if x.name != loc.name and not x.retired]
    found = loss.discarded_own(loc.name, cut, kept_own=kept_own, cvv_own=loc.cvv[loc.name], others=others)
    doc["discarded"] = {} if found is None else {loc.name: list(found)}
    if found is None or accept_loss:
        return
    lo, hi = found
    raise Refused(
        f"refused [DR0]: recover location {loc.name}{how} would discard {loc.name}'s own events with "
        f"origin times {lo}..{hi}, which {loc.name} still stores intact and no other location holds; "
        "nothing was changed",
        code="DR0",
        hint=f"replctl recover location {loc.name}{how} --accept-loss",
    )


def refuse_backup_held(
    tx: CatalogTransaction,
    loc: Location,
    start: VectorTime,
    *,
    manifests: Iterable[bk.Manifest] | None,
    restoring: str | None,
    how: str,
    accept_loss: bool,
) -> None:
    """BK3: refuse, before anything changes, a recovery that would lose what A's newest backup holds, unless
    it restores that backup or `accept_loss`. `start` is A's CVV once its survivors are known (DR1)."""
    newest = bk.newest(manifests or [], loc.name)
    if newest is None or newest.id == restoring or accept_loss:
        return
    lost = loss.unrecovered(loc.cvv, start, _planned(tx, loc.name, start))
    held = loss.held_by(lost, newest.cvv)
    if held:
        raise Refused(
            f"refused [BK3]: recover location {loc.name}{how} would lose {bk.shortfall_text(held)}, which "
            f"backup {newest.id} holds; nothing was changed",
            code="BK3",
            hint=f"replctl recover location {loc.name} --from-backup {newest.id}",
        )


def report_lost(
    tx: CatalogTransaction, name: str, before: VectorTime, reached: VectorTime, doc: dict[str, Any]
) -> None:
    """`doc["lost"]`: what of `before` (A's CVV before the recovery) the recovery's `reached` vector lacks and
    no refused neighbour still holds (those may serve a later `recover`, DR5): lost for good."""
    # Accepted neighbours are unblocked: what they hold comes by ordinary replication (DR5).
    refused = {r["source"] for r in doc["refused"]} | set(doc["accepted"])
    held = [x.cvv for x in tx.locations() if x.name in refused]
    lost = bk.shortfall(before, reached.merge(*held))
    doc["lost"] = {o: list(r) for o, r in sorted(lost.items())}


def _planned(tx: CatalogTransaction, name: str, start: VectorTime) -> list[tuple[VectorTime, VectorTime]]:
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
    )
    brought = []
    for source in (s for ready in planned.rounds for s in ready):
        cvv = locations[source.name].cvv
        # A filtered terminal source surely brings only A's own events (DR3), as plan_rounds counts it.
        brought.append(
            (
                _hidden(tx, locations[source.name]),
                cvv if source.filter is None else VectorTime({name: cvv[name]}),
            )
        )
    for other in [*(r.source for r in refused), *(s.name for s in planned.pending)]:
        brought.append((VectorTime(), locations[other].cvv))
    return brought


def _hidden(tx: CatalogTransaction, source: Location) -> VectorTime:
    """What a logical deletion at the source hides from its passes (DEL1): the LUB of the segments it reaches
    (a straddling one whole, erring towards refusing)."""
    if source.logical_deleted_upto <= source.deleted_upto:
        return VectorTime()
    return VectorTime().merge(
        *(s.vt_lub for s in tx.segments(source.name) if s.seq_lo <= source.logical_deleted_upto)
    )
