"""What a recovery gives up, decided before it acts (rules.md DR0, DR1, BK2, BK3): pure.

Two questions, each answered from the catalog and the manifests alone, so a dry run answers them as its run:

- `discarded_own`: a declared loss (`--lost-from`) or a restore (`--from-backup`) may cut a log that still
  stores its events intact. A's own events with an origin time above every other location's `CVV-L[A]` exist
  nowhere else (a foreign copy of an event of A raises that entry to its origin time); a stored segment in the
  cut whose `vt_lub[A]` exceeds it holds one. Own events are stored at seq = origin time when written, so the
  range is named by origin time. A segment that straddles the cut counts whole: the answer errs towards
  asking for consent, never towards silence.
- `held_by`: of what a recovery leaves out of the CVV A had before it (BK3's shortfall, per origin the origin
  times), the part a backup of A still holds.
"""

from __future__ import annotations

from collections.abc import Iterable

from replctl.core.model import Segment
from replctl.core.vectortime import VectorTime


def discarded_own(
    name: str,
    cut: Iterable[Segment],
    *,
    kept_own: int,
    cvv_own: int,
    others: Iterable[VectorTime],
) -> tuple[int, int] | None:
    """DR0: the origin times of A's own events that the cut discards while no other location holds them,
    or None. `cut` are the intact stored segments the recovery would drop, `kept_own` the largest own origin
    time the recovery keeps (survivors or the backup), `cvv_own` = CVV-A[A] before it."""
    elsewhere = max([0, *(v[name] for v in others)])
    if not any(s.vt_lub[name] > elsewhere for s in cut):
        return None
    low = max(elsewhere, kept_own) + 1
    return (low, cvv_own) if low <= cvv_own else None


def held_by(lost: dict[str, list[tuple[int, int]]], backup_cvv: VectorTime) -> dict[str, tuple[int, int]]:
    """The part of a recovery's gaps (`unrecovered`) a backup holds: per origin, from the first lost origin time
    its CVV covers to the last."""
    held: dict[str, tuple[int, int]] = {}
    for origin, gaps in lost.items():
        parts = [(lo, min(hi, backup_cvv[origin])) for lo, hi in gaps if backup_cvv[origin] >= lo]
        if parts:
            held[origin] = (parts[0][0], parts[-1][1])
    return held


def unrecovered(
    before: VectorTime, start: VectorTime, brought: Iterable[tuple[VectorTime, VectorTime]]
) -> dict[str, list[tuple[int, int]]]:
    """Per origin, the ranges of origin times in `before` that neither `start` (what survived) nor any source
    brings. A source brings `(hidden, cvv)`: the origin times above `hidden` up to its `cvv`. `hidden` is what a
    logical deletion at the source hides from its passes: by causal storage order (EM3) the events of an
    origin up to the largest origin time seen in the hidden prefix are all in that prefix."""
    sources = list(brought)
    out: dict[str, list[tuple[int, int]]] = {}
    for origin, want in before.to_dict().items():
        covered = sorted([(0, start[origin]), *((h[origin], c[origin]) for h, c in sources)])
        gaps, reach = [], 0
        for lo, hi in covered:
            if lo > reach:
                gaps.append((reach + 1, min(lo, want)))
            reach = max(reach, hi)
        if reach < want:
            gaps.append((reach + 1, want))
        gaps = [(lo, hi) for lo, hi in gaps if lo <= hi]
        if gaps:
            out[origin] = gaps
    return out
