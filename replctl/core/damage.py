"""Damage as a state: the census of a log's catalogued segments against what the store holds (DR0).

The census is cheap on purpose (file names and sizes, no data read), so it runs before every write to a
location and in `status`. A segment row records the data files it was written with; a segment recorded
before rows held their files (`files` is None) is checked for presence only, never reported damaged for
lack of a record.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from replctl.core.model import Segment


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
        elif seg.files is not None and dict(files) != dict(seg.files):
            found.append(SegmentDamage(seg, "files differ"))
    return found


def describe(name: str, damage: list[SegmentDamage]) -> str:
    """One line for an operator: which of the log's segments are damaged, from which seq on."""
    first = damage[0].segment
    return (
        f"{name}'s log is damaged: {len(damage)} catalogued segment(s) from seq {first.seq_lo} on are "
        f"missing from the store or differ from their catalog rows ({damage[0].reason} at {first.path})"
    )
