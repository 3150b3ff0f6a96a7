"""Deletion planning (rules.md DEL1–DEL4, ADD2): pure.

The catalog alone decides most requests: a target whose progress is past the cut, or whose CVV covers the vt
LUB of every segment in question, cannot hold deletion back. Only the remaining targets need the one Spark scan
that finds the first event each of them may still need; `safe_prefix` turns those answers into the cut.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import timedelta

from replctl.core.model import Connection, Location, Segment
from replctl.core.vectortime import VectorTime, lub
from replctl.errors import InvalidInput


@dataclass(frozen=True)
class Target:
    """A current target i of X (DEL3): progress(i,X) and CVV-i."""

    name: str
    progress: int
    cvv: VectorTime


def current_targets(
    source: str, connections: list[Connection], locations: dict[str, Location]
) -> list[Target]:
    """Every connection X→i that is active, pending (ADD2) or blocked, not removed, i not retired."""
    return [
        Target(c.target, c.progress, locations[c.target].cvv)
        for c in connections
        if c.source == source and c.current and not locations[c.target].retired
    ]


def with_progress(targets: list[Target], progress: dict[str, int] | None) -> list[Target]:
    """The targets as a dry run expects them once planned passes reached `progress` (per target; it never
    goes back, REP2), for DEL3 to be decided as the run will decide it then (DEL4, `PassOutlook`)."""
    if not progress:
        return targets
    return [replace(t, progress=max(t.progress, progress.get(t.name, t.progress))) for t in targets]


def unforeseen_targets(decided: list[Target], current: list[Target]) -> list[str]:
    """DEL3 under concurrency (issue 19): the current targets a cut was not decided for, by name.

    A target added since the decision (a `topology add` from the source), or one whose progress went back,
    may still need events the cut would drop; a target removed, or one that progressed, needs nothing more.
    """
    before = {t.name: t.progress for t in decided}
    return sorted(t.name for t in current if t.name not in before or t.progress < before[t.name])


def bound(location: Location, requested_upto: int) -> int:
    """DEL1: a request never reaches past the last assigned seq."""
    return min(requested_upto, location.seq)


def pending_target(requested_upto: int, pending_upto: int | None) -> int:
    """DEL4: the pending target only grows; a later request for a smaller N keeps the larger pending one.

    A smaller request must not cancel the rest of a larger one: its events stay logically deleted, and would
    otherwise stay stored for good.
    """
    return requested_upto if pending_upto is None else max(requested_upto, pending_upto)


def logical_upto(location: Location, requested_upto: int) -> int:
    """DEL1: `max(previous, min(N, X.seq))`, at once."""
    return max(location.logical_deleted_upto, bound(location, requested_upto))


def targets_to_scan(targets: list[Target], segments: list[Segment], done_upto: int, cut: int) -> list[Target]:
    """Targets that the catalog cannot clear for the events in (done_upto, cut]."""
    at_stake = [s for s in segments if s.seq_hi > done_upto and s.seq_lo <= cut]
    unclear = []
    for t in targets:
        if t.progress >= cut:
            continue  # DEL3's progress form holds for every event up to the cut
        beyond = [s for s in at_stake if s.seq_hi > t.progress]
        if lub(s.vt_lub for s in beyond) <= t.cvv:
            continue  # DEL3's CVV form holds for all of them
        unclear.append(t)
    return unclear


@dataclass(frozen=True)
class Cut:
    """DEL4: the prefix deleted now, and who holds the rest back."""

    upto: int
    blocked_by: tuple[tuple[str, int], ...]  # (target, first seq it still needs)


def safe_prefix(done_upto: int, cut: int, first_needed: dict[str, int | None]) -> Cut:
    """The largest k ≤ cut such that no target still needs an event at or below k."""
    k = cut
    blocked = []
    for name, seq in sorted(first_needed.items()):
        if seq is not None and seq <= cut:
            blocked.append((name, seq))
            k = min(k, seq - 1)
    return Cut(max(k, done_upto), tuple(blocked))


@dataclass(frozen=True)
class PassOutlook:
    """What a `replicate` dry run knows, from its planned passes, of the state the run retries pending
    deletions in (DEL4): the progress some passes reach for sure, and the logs the run may write to first.

    A planned pass that reads its source's log to the end (a copy, a read that no RFC2 admission check can
    stop, a progress advanced over known events) sets `progress(target, source)` for sure, and DEL3's
    progress form holds for every event it passed. Any other change, an event written into a target's log,
    may or may not cover what a deletion waits for: only running tells.
    """

    reaches: dict[tuple[str, str], int]  # (source, target) → the progress the run's pass reaches for sure
    changed: frozenset[str]  # every log the run may write to before the retry

    def assumed_progress(self, source: str) -> dict[str, int]:
        """Per target of `source`: the progress the planned pass from `source` reaches for sure."""
        return {target: seq for (src, target), seq in self.reaches.items() if src == source}

    def depends_on(self, still_blocking: Iterable[str]) -> list[str]:
        """The targets still holding a deletion back whose logs the run changes first: not decidable."""
        return sorted(set(still_blocking) & self.changed)


def changed_logs(writes: Iterable[str], connections: Iterable[tuple[str, str]] | None) -> frozenset[str]:
    """The logs a replication run may write to: the targets of passes that may write, and, for a run that goes
    on round after round (`connections` given), every log reachable from them along a current connection."""
    changed = set(writes)
    if connections is None:
        return frozenset(changed)
    edges = list(connections)
    grew = True
    while grew:
        reached = {target for source, target in edges if source in changed} - changed
        changed |= reached
        grew = bool(reached)
    return frozenset(changed)


@dataclass(frozen=True)
class SegmentCut:
    """Which segments go whole, and the one (if any) that straddles the cut and is rewritten."""

    drop: tuple[Segment, ...]
    straddle: Segment | None


def cut_segments(segments: list[Segment], upto: int) -> SegmentCut:
    """Whole segments below the cut are dropped; at most one straddles it (architecture.md, log store)."""
    drop = tuple(s for s in segments if s.seq_hi <= upto)
    straddle = next((s for s in segments if s.seq_lo <= upto < s.seq_hi), None)
    return SegmentCut(drop, straddle)


_DURATION = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
# The longest age --older-than takes: far beyond any retention, and far from the first year of the calendar.
MAX_AGE = timedelta(days=100_000)


def parse_age(text: str) -> timedelta:
    """`30d`, `12h`, `90m`, `3600s`, `2w` → a duration (for `delete --older-than`)."""
    match = _DURATION.match(text)
    if not match:
        raise InvalidInput(
            f"--older-than expects a number and a unit (s, m, h, d, w), got {text!r}",
            code="bad-number",
            hint="e.g. --older-than 30d",
        )
    unit = _UNITS[match.group(2)]
    try:
        age = timedelta(**{unit: int(match.group(1))})
    except OverflowError:
        age = MAX_AGE + MAX_AGE
    if age > MAX_AGE:
        # The cut is taken from the clock: an age reaching before the calendar's first year has no date.
        raise InvalidInput(
            f"--older-than {text.strip()} is longer than {MAX_AGE.days} days",
            code="bad-number",
            hint="e.g. --older-than 30d; to delete a whole log, use --upto with its last seq",
        )
    return age
