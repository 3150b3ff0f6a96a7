"""`verify_log` (rules.md §9 I1, I2, I3, I7 and the segment rows) on good and corrupted logs."""

from __future__ import annotations

from typing import Any

import pytest
from segment_rows import catalogued

from replctl.adapters.logstore import LogStore
from replctl.adapters.logstore.sourcechecks import WIDE_VECTOR_KEYS
from replctl.adapters.spark.jobs import append_events, replicate_pass
from replctl.adapters.spark.verify import verify_log
from replctl.core.jobs import PassSpec
from replctl.core.model import Segment
from replctl.core.vectortime import VectorTime

pytestmark = pytest.mark.spark

EVENT_DDL = (
    "seq BIGINT, origin STRING, origin_time BIGINT, vt MAP<STRING, BIGINT>, type STRING, key STRING, "
    "tags ARRAY<STRING>, payload STRING, emitted_at TIMESTAMP"
)


def _write(
    spark: Any, store: LogStore, location: str, rows: list[tuple[int, str, int, dict[str, int]]]
) -> str:
    rel = store.new_segment_path(location, rows[0][0])
    data: list[tuple[Any, ...]] = [(s, o, t, vt, None, None, [], None, None) for s, o, t, vt in rows]
    spark.createDataFrame(data, EVENT_DDL).write.parquet(store.uri(rel))
    return rel


def test_a_replicated_log_verifies_clean(spark: Any, store: LogStore) -> None:
    a1 = store.new_segment_path("A", 1)
    append_events(spark, store, "A", generate=50, seed=3, start_seq=1, cvv={"C": 4}, out_rel=a1)
    b_local = store.new_segment_path("B", 1)
    append_events(spark, store, "B", events=[{"key": "b"}] * 3, start_seq=1, cvv={}, out_rel=b_local)
    b_repl = store.new_segment_path("B", 4)
    result = replicate_pass(
        spark,
        store,
        PassSpec([catalogued(store, a1)], 0, {"B": 3}, None, [], 3, b_repl, ["A", "C"]),
    )
    assert result.segment is not None
    cvv = VectorTime({"B": 3}).merge(result.segment.vt_lub, {"D": 2})
    meta = [
        Segment(1, "B", b_local, 1, 3, 3, VectorTime({"B": 3})),
        Segment(
            2,
            "B",
            b_repl,
            result.segment.seq_lo,
            result.segment.seq_hi,
            result.segment.count,
            VectorTime(result.segment.vt_lub),
        ),
    ]
    assert (
        verify_log(
            spark,
            store,
            [b_local, b_repl],
            seq=result.segment.seq_hi,
            cvv=cvv,
            dvv={},
            baseline={"D": 2},
            segments_meta=meta,
        )
        == []
    )


def test_corrupted_log_names_the_first_violating_seq(spark: Any, store: LogStore) -> None:
    seg = _write(
        spark,
        store,
        "X",
        [
            (1, "A", 1, {"A": 1}),
            (2, "B", 2, {"B": 2}),
            (3, "B", 1, {"B": 1}),  # I1: B:1 stored after B:2, which follows it
            (4, "X", 1, {"B": 2, "X": 1}),
            (5, "A", 1, {"A": 1}),  # I2: A:1 again
            (6, "X", 2, {"B": 2, "X": 2}),
        ],
    )
    found = verify_log(spark, store, [seg], seq=6, cvv={"A": 1, "B": 2, "X": 1, "C": 1}, dvv={}, baseline={})
    by_code = {v.code: v for v in found}
    assert sorted(by_code) == ["I1", "I2", "I3"]
    assert by_code["I1"].seq == 3
    assert by_code["I2"].seq == 5
    # I3: C:1 is in no stored vt, and X:2 (seq 6) is not in the CVV.
    assert by_code["I3"].seq == 6
    assert by_code["I3"].details["differences"] == {
        "C": {"cvv": 1, "expected": 0},
        "X": {"cvv": 1, "expected": 2},
    }


def test_segment_disagreements_and_seq_order(spark: Any, store: LogStore) -> None:
    one = _write(spark, store, "X", [(1, "X", 1, {"X": 1}), (3, "X", 3, {"X": 3})])
    two = _write(
        spark,
        store,
        "X",
        [(3, "Y", 1, {"Y": 1}), (4, "X", 4, {"X": 4, "Y": 1}), (4, "X", 5, {"X": 5, "Y": 1})],
    )
    missing = "X/seg-0000000000000000009-deadbeef"
    meta = [
        Segment(1, "X", one, 1, 3, 2, VectorTime({"X": 3})),
        Segment(2, "X", two, 3, 4, 2, VectorTime({"X": 5, "Y": 1})),
        Segment(3, "X", missing, 9, 9, 1, VectorTime({"X": 9})),
    ]
    found = verify_log(
        spark,
        store,
        [one, two, missing],
        seq=4,
        cvv={"X": 5, "Y": 1},
        dvv={},
        baseline={},
        segments_meta=meta,
    )
    codes = [(v.code, v.seq) for v in found]
    assert ("I7", 3) in codes  # the second segment starts at 3 ≤ 3
    assert any(v.code == "I7" and v.seq == 3 and "twice" in v.message for v in found)  # seqs 3 and 4 twice
    assert ("SEG", 3) in codes  # three events, the catalog says two
    assert any(v.code == "SEG" and "missing" in v.message for v in found)
    assert not any(v.code in {"I1", "I2", "I3"} for v in found)
    assert all("beyond" not in v.message for v in found)  # the largest stored seq is the catalog's seq


def test_a_log_of_wide_vectors_verifies_and_its_segment_lubs_are_compared(
    spark: Any, store: LogStore
) -> None:
    # More keys than WIDE_VECTOR_KEYS: the per-segment LUBs come from the exploded entries (verify._wide_lubs).
    keys = [f"W{i:02d}" for i in range(WIDE_VECTOR_KEYS + 2)]
    base = dict.fromkeys(keys, 1)
    rows = [(1, "X", 1, {**base, "X": 1}), (2, "X", 2, {**base, "X": 2, "W05": 4})]
    seg = _write(spark, store, "X", rows)
    lub = VectorTime({**base, "X": 2, "W05": 4})
    args: dict[str, Any] = {"seq": 2, "cvv": lub.to_dict(), "dvv": {}, "baseline": {}}
    good = [Segment(1, "X", seg, 1, 2, 2, lub)]
    assert verify_log(spark, store, [seg], segments_meta=good, **args) == []
    wrong = [Segment(1, "X", seg, 1, 2, 2, lub.merge({"W05": 5}))]
    found = verify_log(spark, store, [seg], segments_meta=wrong, **args)
    assert [v.code for v in found] == ["SEG"]
