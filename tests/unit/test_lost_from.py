"""DR0: the first lost seq from what reading each catalogued segment's files gave (pure, issue 19)."""

from __future__ import annotations

from replctl.core.model import Segment, SegmentFile
from replctl.core.recovery import FileRead, lost_from

# One segment of three part files: seqs 1-10, 11-20 and 21-30 (a replicated segment, say).
PARTS = (
    SegmentFile("p0", 100, rows=10, seq_lo=1, seq_hi=10, sha256="a"),
    SegmentFile("p1", 100, rows=10, seq_lo=11, seq_hi=20, sha256="b"),
    SegmentFile("p2", 100, rows=10, seq_lo=21, seq_hi=30, sha256="c"),
)
SEG = Segment(1, "B", "B/s1", 1, 30, 30, files=PARTS)
LATER = Segment(2, "B", "B/s2", 31, 40, 10, files=(SegmentFile("q0", 100, 10, 31, 40, "d"),))
WHOLE = {"p0": FileRead(10, 1, 10), "p1": FileRead(10, 11, 20), "p2": FileRead(10, 21, 30)}


def test_a_whole_log_has_lost_nothing() -> None:
    assert lost_from([SEG, LATER], {"B/s1": WHOLE, "B/s2": {"q0": FileRead(10, 31, 40)}}) is None


def test_a_lost_middle_part_file_is_lost_from_its_first_seq_not_after_the_last_stored_seq() -> None:
    # Issue 19, case 4: the survivors after the gap do not hide it (the old census said 41).
    read = {"B/s1": {"p0": WHOLE["p0"], "p2": WHOLE["p2"]}, "B/s2": {"q0": FileRead(10, 31, 40)}}
    assert lost_from([SEG, LATER], read) == 11


def test_a_lost_middle_segment_is_lost_from_its_first_seq() -> None:
    first = Segment(0, "B", "B/s0", 1, 5, 5, files=(SegmentFile("r0", 10, 5, 1, 5, "e"),))
    later = Segment(1, "B", "B/s1", 6, 8, 3, files=(SegmentFile("r1", 10, 3, 6, 8, "f"),))
    last = Segment(2, "B", "B/s2", 9, 9, 1, files=(SegmentFile("r2", 10, 1, 9, 9, "g"),))
    read = {"B/s0": {"r0": FileRead(5, 1, 5)}, "B/s2": {"r2": FileRead(1, 9, 9)}}
    assert lost_from([first, later, last], read) == 6


def test_a_file_cut_short_keeps_its_prefix_and_one_read_otherwise_is_lost_whole() -> None:
    cut_short = {**WHOLE, "p1": FileRead(4, 11, 14)}
    assert lost_from([SEG], {"B/s1": cut_short}) == 15
    replaced = {**WHOLE, "p1": FileRead(12, 11, 22)}
    assert lost_from([SEG], {"B/s1": replaced}) == 11


def test_a_row_without_per_file_records_is_judged_by_its_totals() -> None:
    legacy = Segment(1, "B", "B/s1", 1, 30, 30, files=(SegmentFile("p0", 100), SegmentFile("p1", 100)))
    assert lost_from([legacy], {"B/s1": {"p0": FileRead(15, 1, 15)}}) == 16  # a lost tail
    # Rows missing while the last seq is there: the gap cannot be placed, so nothing of it is claimed.
    assert lost_from([legacy], {"B/s1": {"p1": FileRead(15, 16, 30)}}) == 1
    assert lost_from([legacy], {}) == 1
