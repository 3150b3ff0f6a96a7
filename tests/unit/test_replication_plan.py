"""Which admission check a pass needs (rules.md RFC2, REP1 (3)), decided from segment rows: pure."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from replctl.core.model import Connection, ConnectionState, Segment
from replctl.core.replication import admission_to_check
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
