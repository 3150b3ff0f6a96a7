"""Which segments `log compact` merges (pure)."""

from __future__ import annotations

from replctl.core.compaction import merge_runs, orphans, plan_compaction
from replctl.core.model import Segment


def seg(i: int, count: int) -> Segment:
    return Segment(
        id=i, location="A", path=f"A/s{i}", seq_lo=i * 100, seq_hi=i * 100 + count - 1, count=count
    )


def test_consecutive_small_segments_merge_while_the_group_stays_under_the_target() -> None:
    segments = [seg(1, 10), seg(2, 10), seg(3, 10), seg(4, 500), seg(5, 10), seg(6, 10)]
    runs = merge_runs(segments, target_size=25)
    assert [[s.id for s in run] for run in runs] == [[1, 2], [5, 6]]


def test_a_big_segment_breaks_a_run_and_single_segments_are_left_alone() -> None:
    segments = [seg(1, 10), seg(2, 100), seg(3, 10)]
    assert merge_runs(segments, target_size=50) == []


def test_orphans_are_the_stored_folders_no_row_names() -> None:
    assert orphans(["A/s1", "A/s2", "A/x"], {"A/s1"}) == ["A/s2", "A/x"]


def test_the_plan_counts_the_segments_after_as_the_run_leaves_them() -> None:
    # issue 14: `log compact A --dry-run` said "6 → 6 segment(s)" where the run did 6 → 1.
    segments = [seg(i, 1) for i in range(1, 7)]
    planned = plan_compaction(segments, target_size=25)
    assert (planned.segments_before, planned.segments_after) == (6, 1)
    mixed = plan_compaction([seg(1, 10), seg(2, 10), seg(3, 500), seg(4, 10), seg(5, 10), seg(6, 10)], 25)
    assert (mixed.segments_before, mixed.segments_after) == (6, 4)  # [1,2] and [4,5] merge
