"""What a pass decides from segment rows alone (rules.md REP1, REP2, RFC2): its admission check, and the count
of events a pass that CF1 skips whole examines: pure."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from replctl.core.model import Connection, ConnectionState, Location, Segment, SegmentFile
from replctl.core.replication import PassAction, admission_to_check, events_past, plan_pass
from replctl.core.vectortime import VectorTime, lub

KEYS = ("A", "B", "C", "D")
vectors = st.dictionaries(st.sampled_from(KEYS), st.integers(min_value=0, max_value=4)).map(VectorTime)


def segments_of(logs: list[list[VectorTime]]) -> list[Segment]:
    """One segment per list of vts, numbered one seq per event, each row with the LUB of its vts (VT4)."""
    out, seq = [], 0
    for i, vts in enumerate(logs):
        out.append(Segment(i, "X", f"X/{i}", seq + 1, seq + len(vts), len(vts), lub(vts)))
        seq += len(vts)
    return out


def active(progress: int = 0) -> Connection:
    return Connection("X", "Y", ConnectionState.ACTIVE, progress=progress)


@given(
    logs=st.lists(st.lists(vectors, min_size=1, max_size=4), min_size=1, max_size=4),
    projection=st.sets(st.sampled_from(KEYS)),
    target=vectors,
)
def test_the_check_is_kept_exactly_when_an_event_of_the_segments_would_block(
    logs: list[list[VectorTime]], projection: set[str], target: VectorTime
) -> None:
    kept = admission_to_check(projection, segments_of(logs), active(), target)
    would_block = any(not vt.project(projection) <= target for vts in logs for vt in vts)
    assert kept == (tuple(sorted(projection)) if would_block else ())


def test_only_segments_past_the_progress_count() -> None:
    ahead = VectorTime({"A": 1, "B": 5})
    segments = segments_of([[ahead], [VectorTime({"A": 2})]])
    target = VectorTime({"A": 2, "B": 1})
    assert admission_to_check({"B"}, segments, active(progress=0), target) == ("B",)
    # The first segment (seq 1) is behind the progress: the pass reads only the second.
    assert admission_to_check({"B"}, segments, active(progress=1), target) == ()


def test_no_projection_needs_no_check() -> None:
    segments = segments_of([[VectorTime({"A": 9})]])
    assert admission_to_check(set(), segments, active(), VectorTime()) == ()


def _segment(lo: int, hi: int, count: int, files: tuple[SegmentFile, ...] | None = None) -> Segment:
    return Segment(0, "X", f"X/{lo}", lo, hi, count, VectorTime({"X": 1}), files=files)


def test_a_pass_cf1_skips_whole_counts_the_events_past_the_progress_as_examined_and_skipped() -> None:
    # REP1 (1), REP2: "advanced read 0 skip 0/0" with progress 0 -> 5 said no event was examined.
    source = Location("X", seq=5, cvv=VectorTime({"X": 1}))
    target = Location("Y", cvv=VectorTime({"X": 1}))
    segments = [_segment(1, 2, 2), _segment(3, 5, 3)]
    plan = plan_pass(source, target, active(progress=1), segments)
    assert (plan.action, plan.new_progress, plan.skipped) == (PassAction.ALL_KNOWN, 5, 4)


def test_the_events_past_the_progress_are_counted_from_rows_then_files_else_unknown() -> None:
    assert events_past([_segment(1, 3, 3), _segment(4, 9, 2)], 0) == 5
    # Straddling with dense seqs: exact from the span.
    assert events_past([_segment(1, 3, 3)], 1) == 2
    # Straddling with a gap (a recovered log's seqs 1, 5, 6): only the files' extents tell.
    files = (
        SegmentFile("f1", 1, rows=1, seq_lo=1, seq_hi=1),
        SegmentFile("f2", 1, rows=2, seq_lo=5, seq_hi=6),
    )
    assert events_past([_segment(1, 6, 3, files)], 1) == 2
    assert events_past([_segment(1, 6, 3)], 1) is None
    # No count: the pass is read instead, so that its report says what it examined.
    source = Location("X", seq=6, cvv=VectorTime({"X": 1}))
    target = Location("Y", cvv=VectorTime({"X": 1}))
    assert plan_pass(source, target, active(progress=1), [_segment(1, 6, 3)]).action is PassAction.RUN
