"""Clock pruning of a retired location (rules.md RET1–RET3): pure.

Pruning Z removes the key Z from every vt of every log and from every CVV, DVV and baseline (RET2). It is
allowed only once Z's events have finished spreading (RET3): every remaining location L has `CVV-L[Z]` at
least the largest `[Z]` entry held anywhere. Event identity `(origin, origin_time)` lives in its own columns
(M3), so Z's events keep origin Z and their origin_time.

The plan comes from the catalog alone: a segment row records the LUB of its vts, so a segment whose LUB lacks
Z holds no vt with Z and needs no rewrite, and a log none of whose segments holds Z needs no Spark job.

Pruning runs in two phases so that every state between two commits is one replication can run in:

1. per log, its segments are rewritten without Z and committed; the location's `CVV[Z]` stays, parked in its
   baseline so that I3 (CVV = LUB of stored vts ⊔ DVV ⊔ baseline) still holds. Keeping `CVV[Z]` matters: a
   log whose CVV had lost Z while another log still held Z-stamped vts would take those events for new (CF1
   compares `{Z:1} ≤ CVV`) and store duplicates; with `CVV[Z]` kept, CF1 decides exactly as before;
2. once no segment holds Z, one transaction drops Z from every CVV, DVV and baseline at once.

So a crash leaves every CVV as it was: RET3 still holds on the re-run, which rewrites the logs whose segments
still hold Z (found from the segment rows) and then finishes phase 2.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from replctl.core.model import Location, Segment, Violation


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
    vectors: tuple[str, ...] = ()  # phase 2: locations whose CVV, DVV or baseline holds Z
    violations: tuple[Violation, ...] = ()
    lagging: tuple[Lagging, ...] = ()

    @property
    def ok(self) -> bool:
        """True when nothing refuses the pruning."""
        return not self.violations

    @property
    def done(self) -> bool:
        """True when no vt or vector holds Z any more: there is nothing (left) to prune."""
        return self.ok and not self.logs and not self.vectors


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


def plan_prune(
    locations: Sequence[Location],
    segments: Mapping[str, Sequence[Segment]],
    name: str,
    *,
    retiring: bool = False,
) -> PrunePlan:
    """Decide `--prune-clock` for location `name` from a catalog snapshot (RET1–RET3).

    `segments` maps each location to its segment rows. `retiring` says that `name` is retired in the same
    command (a dry run, before the retirement is recorded). After an interrupted run the plan holds only what
    is left: the logs whose segments still hold Z, and the vectors (see the module docstring).
    """
    by_name = {loc.name: loc for loc in locations}
    target = by_name.get(name)
    if target is None:
        unknown = Violation(
            code="unknown-location", message=f"no location {name}", hint="replctl location list"
        )
        return PrunePlan(name, 0, violations=(unknown,))
    needed = needed_entry(locations, name)
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
        held = tuple(s for s in segments.get(loc.name, ()) if name in s.vt_lub)
        if held:
            logs.append(LogPrune(loc.name, held, len(segments[loc.name]) - len(held)))
    vectors = tuple(loc.name for loc in ordered if any(name in v for v in (loc.cvv, loc.dvv, loc.baseline)))
    return PrunePlan(name, needed, logs=tuple(logs), vectors=vectors)


def parked_location(location: Location, name: str) -> Location:
    """Phase 1's metadata for a log whose vts lost Z: `CVV[Z]` stays, and the baseline now carries it (I3).

    The baseline is the part of the CVV that no stored vt explains (I3); once the vts lack Z, `CVV[Z]` is
    exactly such a part until phase 2 drops it everywhere at once.
    """
    return replace(location, baseline=location.baseline.merge({name: location.cvv[name]}))


def pruned_location(location: Location, name: str) -> Location:
    """Phase 2: the location's metadata without the key `name` in its CVV, DVV and baseline (RET2).

    Its `seq` stays: a log's sequence numbers are no vector entries (M4).
    """
    drop = (name,)
    return replace(
        location,
        cvv=location.cvv.without(drop),
        dvv=location.dvv.without(drop),
        baseline=location.baseline.without(drop),
    )
