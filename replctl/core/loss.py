"""What a recovery gives up, decided before it acts (rules.md DR0, DR1, BK2, BK3): pure.

Two questions, each answered from the catalog and the manifests alone, so a dry run answers them as its run:

- which events a declared loss (`--lost-from`) or a restore (`--from-backup`) discards that no other location
  stores is decided by the data plane on the stored identities (a CVV also covers events deleted or never
  received, EM2); here only how those origin times are named (`ranges`, `span`) and A's own part of the
  `lost` report (`own_lost`).
- `held_by`: of what a recovery leaves out of the CVV A had before it (BK3's shortfall, per origin the origin
  times), the part a backup of A still holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from replctl.core.vectortime import VectorTime


def ranges(times: Iterable[int]) -> list[tuple[int, int]]:
    """Origin times as the maximal runs of consecutive ones, in order: `{1, 2, 4}` → `[(1, 2), (4, 4)]`."""
    out: list[tuple[int, int]] = []
    for t in sorted(set(times)):
        if out and out[-1][1] + 1 == t:
            out[-1] = (out[-1][0], t)
        else:
            out.append((t, t))
    return out


def ranges_text(by_origin: dict[str, list[int]]) -> str:
    """`A:2..3, A:5, B:1`: the events of each origin, named by their runs of origin times."""
    return ", ".join(
        f"{o}:{lo}" + (f"..{hi}" if hi != lo else "")
        for o, times in by_origin.items()
        for lo, hi in ranges(times)
    )


def span(times: Iterable[int]) -> tuple[int, int]:
    """The first and last of some origin times (the `[from, to]` a JSON report names per origin)."""
    ordered = sorted(times)
    return ordered[0], ordered[-1]


def own_lost(
    before_own: int, deleted_own: int, stored: set[int], emitted: Iterable[tuple[int, int]]
) -> list[int]:
    """DR0's report of A's own events: every own origin time A emitted (EM1: origin_time = A's seq at the append;
    `emitted` are the appends' seq ranges) in (DVV-A[A], CVV-A[A]] before the loss (those up to DVV-A[A] A deleted
    on purpose, EM2) that A does not store after the recovery. Own origin times are not dense: A's seq also counts
    the events it received, so only the appends say which own events there were."""
    return [
        t
        for lo, hi in sorted(emitted)
        for t in range(max(lo, deleted_own + 1), min(hi, before_own) + 1)
        if t not in stored
    ]


Runs = list[tuple[int, int]]


def with_given_up(lost: dict[str, Runs], given_up: Mapping[str, Runs], before: VectorTime) -> dict[str, Runs]:
    """`lost` (per origin, runs of origin times `(from, to)`) with what accepted losses gave up (DR5, runs
    too), as far as A held it before (`before`, A's CVV before the loss): what A never held was not A's to
    lose."""
    out = dict(lost)
    for origin, runs in given_up.items():
        held = [(lo, min(deleted, before[origin])) for lo, deleted in runs if lo <= before[origin]]
        if held:
            out[origin] = union([*out.get(origin, []), *held])
    return out


def own_runs(lost: Iterable[int], emitted: Iterable[tuple[int, int]]) -> Runs:
    """A's own lost origin times as runs of A's events: two lost times join when no own event A still has
    lies between them. Own origin times are A's seqs at its appends (EM1, `emitted` the appends' seq ranges),
    so the times of events A received are no events of A's and do not split a run."""
    spans = sorted(emitted)
    out: Runs = []
    for t in sorted(set(lost)):
        if out and not _emitted_between(spans, out[-1][1], t):
            out[-1] = (out[-1][0], t)
        else:
            out.append((t, t))
    return out


def _emitted_between(spans: list[tuple[int, int]], after: int, before: int) -> bool:
    """Whether some emitted seq lies strictly between `after` and `before` (`spans` sorted, maybe overlapping)."""
    return any(max(lo, after + 1) <= min(hi, before - 1) for lo, hi in spans)


def union(runs: Iterable[tuple[int, int]]) -> Runs:
    """Runs of origin times merged where they overlap or touch, in order: `(1, 2), (3, 5)` → `(1, 5)`."""
    out: Runs = []
    for lo, hi in sorted(runs):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


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
