"""Damage as a state: the census of a log's catalogued segments against what the store holds (DR0).

The census is cheap on purpose (file names and sizes, no data read), so it runs before every write to a
location and in `status`. A segment row records the data files it was written with; a segment recorded
before rows held their files (`files` is None) is checked for presence only, never reported damaged for
lack of a record.

Only the catalogued files count: a file the row does not name (a stray copied in, a job's leftover) is
never read (readers read exactly the row's files, issue 19), so it is garbage, not damage; reporting it as
damage would send the operator to a recovery that finds nothing lost.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from replctl.core.model import Segment, SegmentFile


@dataclass(frozen=True)
class SegmentDamage:
    """One catalogued segment the store does not hold as recorded."""

    segment: Segment
    reason: str  # "missing" | "files differ"


def census(
    segments: Iterable[Segment], stored: Mapping[str, Mapping[str, int] | None]
) -> list[SegmentDamage]:
    """The damaged segments, in seq order.

    `stored` maps a segment's path to its data files as found (name → size; None = the segment is gone).
    """
    found = []
    for seg in segments:
        files = stored.get(seg.path)
        if not files:
            found.append(SegmentDamage(seg, "missing"))
        elif seg.files is not None and any(files.get(f.name) != f.size for f in seg.files):
            found.append(SegmentDamage(seg, "files differ"))
    return found


def copy_differs(segment: Segment, copied: Sequence[SegmentFile]) -> str | None:
    """Why a copy of `segment`'s files (as found after copying, `logstore.inventory`) is not the segment its
    row describes, or None: a copy reads every byte, so names, sizes, digests and rows are all compared."""
    rows = sum(f.rows or 0 for f in copied)
    if rows != segment.count:
        return f"its files hold {rows} events, its catalog row {segment.count}"
    if segment.files is None:
        return None
    found = {f.name: f for f in copied}
    for f in segment.files:
        got = found.get(f.name)
        if got is None:
            return f"{f.name} is catalogued but was not there to copy"
        if got.size != f.size or (f.sha256 is not None and got.sha256 != f.sha256):
            return f"{f.name} differs from its catalog row (size or SHA-256)"
    return None


def describe(name: str, damage: list[SegmentDamage]) -> str:
    """One line for an operator: which of the log's segments are damaged, from which seq on."""
    first = damage[0].segment
    return (
        f"{name}'s log is damaged: {len(damage)} catalogued segment(s) from seq {first.seq_lo} on are "
        f"missing from the store or differ from their catalog rows ({damage[0].reason} at {first.path})"
    )
