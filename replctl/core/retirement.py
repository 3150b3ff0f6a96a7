"""Clock pruning of a retired location (rules.md RET1–RET4): pure.

Pruning Z removes the key Z from the vt of every stored event, in every log (RET2). CVVs, DVVs and baselines keep
their Z entry: whether a vector covers an event is asked through the event's identity `(origin, origin_time)`
(RET4, M3), which pruning leaves alone, so a location added after the pruning (its `CVV[Z]` is 0) still receives
Z's events, and deletion still waits for it. From then on emission leaves pruned ids out of new vts (EM1).
It is allowed only once Z's events have finished spreading (RET3): every remaining location L has `CVV-L[Z]` at
least the largest `[Z]` entry held anywhere.

The plan comes from the catalog alone: a segment row records the LUB of `vt ⊔ identity` over its events, so a
segment whose LUB lacks Z holds no vt with Z and needs no rewrite, and a log none of whose segments holds Z
needs no Spark job. (A rewritten segment that holds Z's own events keeps Z in its LUB through their identities;
a re-run after a crash rewrites it once more, which changes nothing.)

Pruning runs in two phases so that every state between two commits is one replication can run in:

1. per log, its segments are rewritten without Z and committed; where `CVV[Z]` came from the vt of an event of
   another origin only, it is parked in the baseline, so that I3 (CVV = LUB of stored `vt ⊔ identity` ⊔ DVV ⊔
   baseline) still holds (`parked_location`);
2. once every log is rewritten, one transaction records Z as pruned: from then on no new vt carries Z (EM1),
   and a later `--prune-clock` of Z has nothing left to do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from replctl.core.loss import ranges_text, span
from replctl.core.model import Connection, Location, LocationState, Role, Segment, Violation
from replctl.core.vectortime import VectorTime


@dataclass(frozen=True)
class Lagging:
    """A remaining location whose CVV has not yet reached the largest `[Z]` entry (RET3)."""

    location: str
    entry: int
    needed: int


@dataclass(frozen=True)
class LogPrune:
    """Phase 1 for one log: the segments to rewrite without Z, and how many are left as they are."""

    location: str
    rewrite: tuple[Segment, ...]  # segments whose vt LUB holds Z
    untouched: int  # segments whose vt LUB lacks Z: no vt in them holds Z


@dataclass(frozen=True)
class PrunePlan:
    """The decision for `location retire Z --prune-clock`: what to prune, or why it must wait."""

    name: str
    needed: int  # the largest [Z] entry held anywhere (0 once nothing holds Z)
    logs: tuple[LogPrune, ...] = ()  # phase 1: logs with a segment that holds Z
    record: bool = False  # phase 2: Z is not yet recorded as pruned
    violations: tuple[Violation, ...] = ()
    lagging: tuple[Lagging, ...] = ()

    @property
    def ok(self) -> bool:
        """True when nothing refuses the pruning."""
        return not self.violations

    @property
    def done(self) -> bool:
        """True when Z is recorded as pruned: there is nothing (left) to do."""
        return self.ok and not self.logs and not self.record


def needed_entry(locations: Iterable[Location], name: str) -> int:
    """The largest `[Z]` entry held anywhere: over every location's CVV, DVV and baseline (RET3).

    Retired locations count too: their logs are pruned as well (RET2). Stored vts need no look: each is ≤ the
    CVV of its log (EM2, I3).
    """
    return max((max(loc.cvv[name], loc.dvv[name], loc.baseline[name]) for loc in locations), default=0)


def lagging_locations(locations: Sequence[Location], name: str) -> tuple[Lagging, ...]:
    """RET3: every remaining location L (not retired, not Z) with `CVV-L[Z]` below the needed entry."""
    needed = needed_entry(locations, name)
    return tuple(
        Lagging(loc.name, loc.cvv[name], needed)
        for loc in sorted(locations, key=lambda x: x.name)
        if not loc.retired and loc.name != name and loc.cvv[name] < needed
    )


def ret3_violation(lagging: Sequence[Lagging], name: str) -> Violation | None:
    """The RET3 refusal naming every lagging location with its entry and the one it needs, or None."""
    if not lagging:
        return None
    needed = lagging[0].needed
    listed = ", ".join(f"{lag.location} has {name}:{lag.entry}" for lag in lagging)
    return Violation(
        code="RET3",
        message=(
            f"the events of {name} have not finished spreading: {listed}, but {name}:{needed} is held "
            f"elsewhere; {name}'s clock is pruned only once every remaining location has it (RET3)"
        ),
        hint=f"replctl replicate, then re-run: replctl location retire {name} --prune-clock",
        details={
            "needed": needed,
            "lagging": [
                {"location": lag.location, "entry": lag.entry, "needed": lag.needed} for lag in lagging
            ],
        },
    )


@dataclass(frozen=True)
class Stranded:
    """Own events of a location about to retire that no other remaining location has (RET1, RET3).

    `first..last` span their origin times `times`; `reached` is the furthest CVV entry of another remaining
    location (which may cover events it does not store).
    """

    location: str
    first: int
    last: int
    reached: int
    times: tuple[int, ...] = ()  # every stranded origin time (first..last may have gaps)


def stranded_events(locations: Sequence[Location], name: str, only_here: Sequence[int]) -> Stranded | None:
    """The own events of `name` that retiring it now would strand, or None.

    Retired, `name` may have no connection again (RET1), so an own event that no other remaining location
    stores can never spread, and RET3 would refuse pruning its clock for good. `only_here` are the origin
    times of the own events `name` stores that no other remaining location stores (the data plane's
    anti-join on the identity): a CVV is no answer, it covers events its location deleted physically (EM2)
    or never received over a filtered connection. Retired locations do not count (they can pass nothing
    on), and an event `name` deleted physically is not stored: retiring strands nothing of it.
    """
    target = next((loc for loc in locations if loc.name == name), None)
    if target is None or target.retired or not only_here:
        return None
    reached = max(
        (loc.cvv[name] for loc in locations if loc.name != name and not loc.retired),
        default=0,
    )
    return Stranded(name, min(only_here), max(only_here), reached, tuple(sorted(only_here)))


def stranded_violation(
    locations: Sequence[Location],
    connections: Iterable[Connection],
    name: str,
    only_here: Sequence[int],
    others: Mapping[str, Sequence[int]] | None = None,
    *,
    may_connect: Callable[[str], bool] | None = None,
) -> Violation | None:
    """The refusal of `location retire NAME` while it would strand events (RET1, RET3), or None.

    `only_here` as for `stranded_events`; `others` are, per origin, the origin times of the events of other
    origins `name` stores that no other remaining location stores: a relay whose neighbours never got them, or
    the last holder after their origin deleted them (DEL3 counted on it) or retired. Retired, `name` could
    never pass them on either. The hint lets them spread first, while `name` may still connect: add a
    connection again to a remaining location that can take them (`_receiver`; `may_connect` says whether the
    topology rules allow a plain connection from `name` to it), replicate, remove it again, then retire.
    """
    found = stranded_events(locations, name, only_here)
    foreign = {o: sorted(t) for o, t in sorted((others or {}).items()) if o != name and t}
    if found is None and not foreign:
        return None
    stranded = {**({name: list(found.times)} if found is not None else {}), **foreign}
    to = _receiver(locations, connections, name, stranded, may_connect or (lambda _target: True))
    details: dict[str, Any] = {}
    if found is not None:
        message = (
            f"{name}'s own events {ranges_text({name: list(found.times)})} are stored at no other remaining "
            f"location; a retired location may have no connection again (RET1), so they would be stranded and "
            f"{name}'s clock could never be pruned (RET3)"
        )
        details |= {
            "stranded": {"origin": name, "from": found.first, "to": found.last},
            "reached": found.reached,
        }
    if foreign:
        held = (
            f"{name} stores events of other origins ({ranges_text(foreign)}) that no other remaining location "
            "stores"
        )
        message = (
            f"{message}; {held}"
            if found is not None
            else f"{held}; a retired location may have no connection again (RET1), so they would be lost with it"
        )
        details["stranded_others"] = {o: list(span(t)) for o, t in foreign.items()}
    by_name = {loc.name: loc for loc in locations}
    if by_name[name].role is Role.READ_ONLY:
        # No connection may leave a read-only location (ROLE1): what only it stores can only be given up.
        message += f"; {name} is read-only and can pass nothing on (ROLE1)"
        hint = (
            f"keep a copy (replctl backup create {name}), give them up on purpose (replctl delete {name} "
            f"--upto {by_name[name].seq}), then: replctl location retire {name}"
        )
    elif to is None:
        # No remaining location takes them over a plain connection now: its clock covers them (a filter kept
        # them out, or it deleted them, CF1), it lacks events `name` deleted (ADD1), it is recovering, or the
        # topology rules refuse the connection. A new location joining with `current` history takes every
        # event `name` still stores (ADD3).
        message += "; no remaining location would receive them over a connection now"
        hint = (
            f"keep them at a new location: replctl location add NEW && replctl topology add {name} NEW "
            f"--history current && replctl replicate {name} NEW && replctl topology remove {name} NEW, then: "
            f"replctl location retire {name}"
        )
    else:
        hint = (
            f"replctl topology add {name} {to} && replctl replicate {name} {to} && "
            f"replctl topology remove {name} {to}, then: replctl location retire {name}"
        )
    return Violation(code="RET1", message=message, hint=hint, details=details)


def _receiver(
    locations: Sequence[Location],
    connections: Iterable[Connection],
    name: str,
    stranded: Mapping[str, Sequence[int]],
    may_connect: Callable[[str], bool],
) -> str | None:
    """The remaining location a plain connection from `name` would bring the stranded events to, or None.

    The topology rules must allow the connection (`may_connect`), the location must be active (a pass into a
    recovering one waits, DR0), the connection must start at once (ADD1: DVV of `name` ≤ its CVV), and its
    CVV must cover none of them (CF1 would skip them). Preferred: the locations `name` last sent to, the one
    that got furthest first, then the others.
    """
    by_name = {loc.name: loc for loc in locations}
    source = by_name[name]
    sent_to = {c.target for c in connections if c.source == name}
    candidates = sorted(
        (loc for loc in locations if loc.name != name and not loc.retired),
        key=lambda loc: (loc.name not in sent_to, -loc.cvv[name], loc.name),
    )
    for loc in candidates:
        if (
            loc.state is LocationState.ACTIVE
            and source.dvv <= loc.cvv
            and all(loc.cvv[o] < min(times) for o, times in stranded.items())
            and may_connect(loc.name)
        ):
            return loc.name
    return None


def plan_prune(
    locations: Sequence[Location],
    segments: Mapping[str, Sequence[Segment]],
    name: str,
    *,
    retiring: bool = False,
    pruned_paths: frozenset[str] = frozenset(),
) -> PrunePlan:
    """Decide `--prune-clock` for location `name` from a catalog snapshot (RET1–RET3).

    `segments` maps each location to its segment rows. `retiring` says that `name` is retired in the same
    command (a dry run, before the retirement is recorded). After an interrupted run the plan holds only what
    is left: the logs whose segments still hold Z, and the record (see the module docstring). Once Z is
    recorded as pruned the plan is done, whatever joined since: a location added later has `CVV[Z]` = 0 and
    receives Z's events (RET4), which RET3 must not take for lagging. `pruned_paths` are the segments an
    interrupted run of the same pruning already wrote without Z (from its journal): a rewritten segment that
    holds Z's own events keeps Z in its LUB through their identities, so the rows alone cannot tell.
    """
    by_name = {loc.name: loc for loc in locations}
    target = by_name.get(name)
    if target is None:
        unknown = Violation(
            code="unknown-location", message=f"no location {name}", hint="replctl location list"
        )
        return PrunePlan(name, 0, violations=(unknown,))
    needed = needed_entry(locations, name)
    if target.clock_pruned:
        return PrunePlan(name, needed)
    if not (target.retired or retiring):
        not_retired = Violation(
            code="RET2",
            message=f"{name} is not retired; only a retired location's clock is pruned (RET1, RET2)",
            hint=f"replctl location retire {name} --prune-clock",
        )
        return PrunePlan(name, needed, violations=(not_retired,))
    lagging = lagging_locations(locations, name)
    refusal = ret3_violation(lagging, name)
    if refusal is not None:
        return PrunePlan(name, needed, violations=(refusal,), lagging=lagging)
    ordered = sorted(locations, key=lambda x: x.name)
    logs = []
    for loc in ordered:
        held = tuple(s for s in segments.get(loc.name, ()) if name in s.vt_lub and s.path not in pruned_paths)
        if held:
            logs.append(LogPrune(loc.name, held, len(segments[loc.name]) - len(held)))
    return PrunePlan(name, needed, logs=tuple(logs), record=True)


def parked_location(location: Location, name: str, stored_lub: VectorTime) -> Location:
    """Phase 1's metadata for a log whose vts lost Z: `CVV[Z]` stays (RET2); the baseline takes the part of it
    that nothing else explains any more (I3).

    `stored_lub` is the LUB of `vt ⊔ identity` over the log's segments after the rewrite. Where Z's own events
    are stored or deleted, their identities (and the DVV) still explain `CVV[Z]` and nothing is parked: a
    baseline is permanent knowledge, which a later recovery would take as received (DR1) and so skip Z's
    events it lost. Only a `CVV[Z]` that came from the vt of an event of another origin (Z's own events
    filtered out on the way) moves to the baseline.
    """
    explained = max(stored_lub[name], location.dvv[name], location.baseline[name])
    if explained >= location.cvv[name]:
        return location
    # What the log stores of Z under the parked entry: a later loss holds the entry back until it is back
    # (core.recovery.with_baseline), or CF1 would skip those events where they are still stored.
    return replace(
        location,
        baseline=location.baseline.merge({name: location.cvv[name]}),
        baseline_stored=location.baseline_stored.merge({name: stored_lub[name]}),
    )


@dataclass(frozen=True)
class Clocks:
    """Which ids the vts of the stored events may lack, for the jobs that read or write them (RET2, RET4)."""

    pruned: frozenset[str]  # recorded as pruned: no vt holds them, emission leaves them out (EM1)
    retired: frozenset[str]  # pruned or being pruned: their events' vts may lack their own entry

    def vt_keys(self, cvv: VectorTime) -> list[str]:
        """The keys a log's vts may hold: its CVV's keys without the pruned ids (sorted)."""
        return sorted(set(cvv) - self.pruned)

    def emission_base(self, cvv: VectorTime) -> VectorTime:
        """EM1 after pruning (RET2): the part of CVV-X a new event's vt carries, `CVV-X` without pruned ids."""
        return cvv.without(self.pruned)

    @property
    def identity_origins(self) -> list[str]:
        """The origins whose identities a job's LUB must take besides the vt entries (RET4), sorted."""
        return sorted(self.retired)


def clocks(locations: Iterable[Location]) -> Clocks:
    """`Clocks` from every location of the catalog."""
    everyone = list(locations)
    return Clocks(
        pruned=frozenset(loc.name for loc in everyone if loc.clock_pruned),
        retired=frozenset(loc.name for loc in everyone if loc.retired),
    )


@dataclass(frozen=True)
class LegacyPrune:
    """A clock pruning made before RET4, which dropped Z from every CVV, DVV and baseline."""

    name: str
    needed: (
        int  # the largest [Z] entry held anywhere when it was pruned (RET3: every remaining location had it)
    )
    spread_to: frozenset[str]  # the locations whose vectors held Z then


def restored_location(
    location: Location, prunes: Sequence[LegacyPrune], stored: Mapping[str, tuple[int, int]]
) -> Location:
    """A location's vectors with each legacy-pruned id's entry given back (RET2 keeps it, RET4 asks it).

    `stored` maps each pruned origin to the smallest and largest origin_time of its events the log stores.
    CVV[Z] is at least the largest stored identity, and for a location that was active when Z was pruned, at
    least the entry RET3 made it hold then (`needed`); the part no stored identity explains goes to the
    baseline (I3). A log that physically deleted anything deleted Z's events below the smallest one it stores
    (Z's events are a causal chain, stored in order, EM3), or all it had when it stores none: the DVV takes
    that, never above the CVV. Erring high on a DVV only makes a new connection from this log wait (ADD1);
    erring low could let it start with a gap.
    """
    cvv, dvv, baseline = dict(location.cvv), dict(location.dvv), dict(location.baseline)
    for prune in prunes:
        z = prune.name
        held = stored.get(z)
        entry = held[1] if held else 0
        if location.name in prune.spread_to and not location.retired and location.name != z:
            if prune.needed > entry:
                baseline[z] = max(baseline.get(z, 0), prune.needed)
            entry = max(entry, prune.needed)
        cvv[z] = max(cvv.get(z, 0), entry)
        if location.deleted_upto > 0:
            deleted = held[0] - 1 if held else cvv[z]
            dvv[z] = max(dvv.get(z, 0), min(deleted, cvv[z]))
    return replace(location, cvv=VectorTime(cvv), dvv=VectorTime(dvv), baseline=VectorTime(baseline))
