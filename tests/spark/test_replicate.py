"""Replication passes (REP1, REP2, REP3, CF1, RFC2) on real Parquet logs, checked event by event."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F
from segment_rows import assert_same_file_shape, catalogued_all
from shared_engine import SharedSessionEngine

from replctl.adapters.logstore import LogStore, localpass
from replctl.adapters.logstore.reader import read_local
from replctl.adapters.logstore.sourcechecks import WIDE_VECTOR_KEYS
from replctl.adapters.logstore.writer import append_local
from replctl.adapters.spark.jobs import append_events, compact, read_log, replicate_pass
from replctl.core.jobs import PassResult, PassSpec, SegmentStats
from replctl.core.model import Segment, SegmentFile
from replctl.core.vectortime import VectorTime
from replctl.errors import BadFilter, DamagedLog, EnvironmentFailure

pytestmark = pytest.mark.spark

EVENT_DDL = (
    "seq BIGINT, origin STRING, origin_time BIGINT, vt MAP<STRING, BIGINT>, type STRING, key STRING, "
    "tags ARRAY<STRING>, payload STRING, emitted_at TIMESTAMP"
)


def _write_log(
    spark: Any, store: LogStore, location: str, events: list[dict[str, Any]], *, reverse_keys: bool = False
) -> str:
    """Store already-numbered events as one segment (a source log built by hand).

    `reverse_keys` stores every vt's keys in descending order, as no replctl writer does, so that the pass
    must read them key by key instead of by position (`schema.vt_entries`).
    """
    rel = store.new_segment_path(location, events[0]["seq"])
    rows = [
        (
            e["seq"],
            e["origin"],
            e["origin_time"],
            e["vt"],
            e.get("type"),
            e.get("key"),
            e.get("tags", []),
            None,
            None,
        )
        for e in events
    ]
    frame = spark.createDataFrame(rows, EVENT_DDL)
    if reverse_keys:
        frame = frame.withColumn("vt", F.map_from_entries(F.array_sort(F.map_entries("vt"), _descending)))
    frame.write.parquet(store.uri(rel))
    return rel


def _descending(left: Any, right: Any) -> Any:
    return F.when(left["key"] > right["key"], -1).when(left["key"] < right["key"], 1).otherwise(0)


def _spec(store: LogStore, segments: list[str], **kw: Any) -> PassSpec:
    """A pass over the catalog rows of the segments written at `segments`."""
    defaults: dict[str, Any] = {
        "source_segments": catalogued_all(store, segments),
        "progress": 0,
        "target_cvv": {},
        "filter_sql": None,
        "admission": [],
        "target_seq": 0,
        "out_rel": "B/seg-out",
        "source_keys": ["A", "B", "C", "D"],
    }
    defaults.update(kw)
    return PassSpec(**defaults)


def _ev(seq: int, origin: str, time: int, vt: dict[str, int], key: str | None = None) -> dict[str, Any]:
    return {"seq": seq, "origin": origin, "origin_time": time, "vt": vt, "key": key}


def test_pass_writes_renumbered_events_in_source_order(spark: Any, store: LogStore) -> None:
    src = store.new_segment_path("A", 1)
    append_events(
        spark, store, "A", events=[{"key": f"e{i}"} for i in range(1, 5)], start_seq=1, cvv={}, out_rel=src
    )
    out = store.new_segment_path("B", 11)
    result = replicate_pass(
        spark, store, _spec(store, [src], progress=1, target_seq=10, target_cvv={"B": 10}, out_rel=out)
    )
    # seq' = target_seq + (seq − progress): 2,3,4 → 11,12,13.
    assert result == PassResult(3, 3, 0, 0, None, 4, SegmentStats(3, 11, 13, {"A": 4}))
    events = read_log(spark, store, catalogued_all(store, [out]))
    assert [(e["seq"], e["origin"], e["origin_time"], e["vt"], e["key"]) for e in events] == [
        (11, "A", 2, {"A": 2}, "e2"),
        (12, "A", 3, {"A": 3}, "e3"),
        (13, "A", 4, {"A": 4}, "e4"),
    ]


def test_pass_skips_causal_duplicates_and_filtered_events(spark: Any, store: LogStore) -> None:
    src = _write_log(
        spark,
        store,
        "X",
        [
            _ev(1, "A", 1, {"A": 1}, "k1"),  # known at the target: CF1
            _ev(2, "X", 1, {"A": 1, "X": 1}, "k2"),  # filtered out
            _ev(3, "X", 2, {"A": 1, "X": 2}, None),  # key NULL: the filter is NULL, which rejects
            _ev(4, "X", 3, {"A": 1, "X": 3}, "k1"),  # written
            _ev(5, "B", 7, {"B": 7}, "k1"),  # known at the target: CF1 again
        ],
    )
    out = store.new_segment_path("Y", 1)
    result = replicate_pass(
        spark,
        store,
        _spec(
            store,
            [src],
            target_cvv={"A": 1, "B": 9},
            filter_sql="key = 'k1'",
            out_rel=out,
            source_keys=["A", "B", "X"],
        ),
    )
    assert result == PassResult(5, 1, 2, 2, None, 5, SegmentStats(1, 4, 4, {"A": 1, "X": 3}))
    assert [e["origin_time"] for e in read_log(spark, store, catalogued_all(store, [out]))] == [3]


def test_rerun_from_older_progress_writes_nothing(spark: Any, store: LogStore) -> None:
    """REP3: after a pass, CVV-Y covers every written event; re-running from 0 meets only CF1 duplicates."""
    src = store.new_segment_path("A", 1)
    append_events(spark, store, "A", generate=300, seed=1, start_seq=1, cvv={"C": 2}, out_rel=src)
    first = replicate_pass(spark, store, _spec(store, [src], out_rel=store.new_segment_path("B", 1)))
    assert first.written == 300 and first.segment is not None
    cvv = VectorTime({"B": 0}).merge(first.segment.vt_lub).to_dict()
    assert cvv == {"A": 300, "C": 2}
    again_out = store.new_segment_path("B", 301)
    again = replicate_pass(
        spark, store, _spec(store, [src], target_cvv=cvv, target_seq=300, out_rel=again_out)
    )
    assert again == PassResult(300, 0, 300, 0, None, 300, None)
    assert not store.exists(again_out)  # nothing written, no segment left behind


def test_admission_blocks_until_the_group_part_arrives(spark: Any, store: LogStore) -> None:
    """RFC2: D→B into group {A,B}; D's event that depends on A:1 waits until B has A:1 (filter: origin = 'D')."""
    src = _write_log(
        spark,
        store,
        "D",
        [
            _ev(1, "D", 1, {"D": 1}),
            _ev(2, "A", 1, {"A": 1}),  # the group event, filtered on D→B: it must reach B from A
            _ev(3, "D", 2, {"A": 1, "D": 2}),  # depends on A:1
            _ev(4, "D", 3, {"A": 1, "D": 3}),
        ],
    )
    spec = _spec(
        store,
        [src],
        filter_sql="origin = 'D'",
        admission=["A", "B"],
        out_rel=store.new_segment_path("B", 1),
        source_keys=["A", "D"],
    )
    first = replicate_pass(spark, store, spec)
    # REP2: progress = seq of the last event examined before the block (the filtered A:1 at seq 2).
    assert first == PassResult(2, 1, 0, 1, 3, 2, SegmentStats(1, 1, 1, {"D": 1}))

    # A→B has not delivered A:1 yet: the first event blocks, progress stays, nothing is written or left behind.
    waiting_out = store.new_segment_path("B", 2)
    waiting = replicate_pass(
        spark, store, replace(spec, progress=2, target_cvv={"D": 1}, target_seq=1, out_rel=waiting_out)
    )
    assert waiting == PassResult(0, 0, 0, 0, 3, 2, None)
    assert not store.exists(waiting_out)

    # A→B delivered A:1 (B wrote it at seq 2): the rest flows.
    done_out = store.new_segment_path("B", 3)
    done = replicate_pass(
        spark, store, replace(spec, progress=2, target_cvv={"A": 1, "D": 1}, target_seq=2, out_rel=done_out)
    )
    assert done == PassResult(2, 2, 0, 0, None, 4, SegmentStats(2, 3, 4, {"A": 1, "D": 3}))
    assert [
        (e["seq"], e["origin_time"]) for e in read_log(spark, store, catalogued_all(store, [done_out]))
    ] == [(3, 2), (4, 3)]


def test_group_event_from_outside_the_group_blocks(spark: Any, store: LogStore) -> None:
    """RFC2: P = {A, B}; A:1 reaching B through D blocks (B must get it from A), and so does what follows."""
    src = _write_log(
        spark,
        store,
        "D",
        [_ev(1, "D", 1, {"D": 1}), _ev(2, "A", 1, {"A": 1}), _ev(3, "D", 2, {"A": 1, "D": 2})],
    )
    out = store.new_segment_path("B", 1)
    result = replicate_pass(
        spark, store, _spec(store, [src], admission=["A", "B"], out_rel=out, source_keys=["A", "D"])
    )
    assert result == PassResult(1, 1, 0, 0, 2, 1, SegmentStats(1, 1, 1, {"D": 1}))
    # Once B has A:1, the group event is a CF1 duplicate and D:2 is admitted.
    later = replicate_pass(
        spark,
        store,
        _spec(
            store,
            [src],
            progress=1,
            target_cvv={"A": 1, "D": 1},
            target_seq=5,
            admission=["A", "B"],
            out_rel=store.new_segment_path("B", 6),
            source_keys=["A", "D"],
        ),
    )
    assert later == PassResult(2, 1, 1, 0, None, 3, SegmentStats(1, 7, 7, {"A": 1, "D": 2}))


def test_a_vt_key_outside_the_source_cvv_refuses_the_pass(spark: Any, store: LogStore) -> None:
    src = _write_log(spark, store, "A", [_ev(1, "A", 1, {"A": 1}), _ev(2, "A", 2, {"A": 2, "Z": 1})])
    out = store.new_segment_path("B", 1)
    with pytest.raises(EnvironmentFailure, match="outside its CVV"):
        replicate_pass(spark, store, _spec(store, [src], out_rel=out, source_keys=["A"]))
    assert not store.exists(out)


def test_bad_filter_is_refused_before_any_job(spark: Any, store: LogStore) -> None:
    src = _write_log(spark, store, "A", [_ev(1, "A", 1, {"A": 1})])
    with pytest.raises(BadFilter):
        replicate_pass(spark, store, _spec(store, [src], filter_sql="seq > 1"))  # seq is not a filter column
    with pytest.raises(BadFilter, match="not boolean"):
        replicate_pass(spark, store, _spec(store, [src], filter_sql="origin_time + 1"))
    assert replicate_pass(spark, store, _spec(store, [])) == PassResult(0, 0, 0, 0, None, 0, None)


# --- against a direct reading of REP1 on random causal histories ---------------------------------------------


def _history(
    rng: random.Random, steps: int, names: list[str] | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Logs of `names` (A..E) after random local appends (EM1) and full replication runs (CF1, in source order)."""
    names = names or ["A", "B", "C", "D", "E"]
    logs: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    cvv = {n: VectorTime() for n in names}
    seq = dict.fromkeys(names, 0)
    for _ in range(steps):
        x = rng.choice(names)
        if rng.random() < 0.6:
            seq[x] += 1
            vt = cvv[x].merge({x: seq[x]})
            logs[x].append(_ev(seq[x], x, seq[x], vt.to_dict(), rng.choice(["k0", "k1", "k2"])))
            cvv[x] = vt
        else:
            y = rng.choice([n for n in names if n != x])
            for e in list(logs[y]):
                if not VectorTime(e["vt"]) <= cvv[x]:
                    seq[x] += 1
                    logs[x].append({**e, "seq": seq[x]})
                    cvv[x] = cvv[x].merge(e["vt"])
    return logs


def _reference(
    source: list[dict[str, Any]],
    progress: int,
    cvv: VectorTime,
    keep: Callable[[dict[str, Any]], bool],
    admission: list[str],
) -> tuple[list[int], int, int | None]:
    """REP1/REP2 read literally, one event at a time: (written source seqs, progress, blocked_at)."""
    written: list[int] = []
    new_progress = progress
    for e in source:
        if e["seq"] <= progress:
            continue
        vt = VectorTime(e["vt"])
        if vt <= cvv or not keep(e):
            new_progress = e["seq"]
            continue
        if admission and not vt.project(admission) <= cvv:
            return written, new_progress, e["seq"]
        written.append(e["seq"])
        cvv = cvv.merge(vt)
        new_progress = e["seq"]
    return written, new_progress, None


@pytest.mark.parametrize("reverse_keys", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_pass_matches_a_literal_reading_of_rep1(
    spark: Any, store: LogStore, seed: int, reverse_keys: bool
) -> None:
    rng = random.Random(seed)
    logs = _history(rng, 60)
    source_name, target_name = "A", "B"
    source = logs[source_name]
    if not source:
        pytest.skip("empty source log")
    target_cvv = VectorTime().merge(*[e["vt"] for e in logs[target_name]])
    progress = rng.randrange(0, max(1, len(source) // 2))
    admission = ["B", "C"]
    src = _write_log(spark, store, source_name, source, reverse_keys=reverse_keys)
    out = store.new_segment_path(target_name, 1)
    result = replicate_pass(
        spark,
        store,
        _spec(
            store,
            [src],
            progress=progress,
            target_cvv=target_cvv.to_dict(),
            filter_sql="key <> 'k2'",
            admission=admission,
            target_seq=100,
            out_rel=out,
            source_keys=["A", "B", "C", "D", "E"],
        ),
    )
    expected_written, expected_progress, expected_block = _reference(
        source, progress, target_cvv, lambda e: e["key"] != "k2", admission
    )
    assert (result.blocked_at, result.progress) == (expected_block, expected_progress)
    stored = read_log(spark, store, catalogued_all(store, [out])) if result.segment else []
    assert [e["seq"] for e in stored] == [100 + s - progress for s in expected_written]
    by_seq = {e["seq"]: e for e in source}
    assert [(e["origin"], e["origin_time"], e["vt"]) for e in stored] == [
        (by_seq[s]["origin"], by_seq[s]["origin_time"], by_seq[s]["vt"]) for s in expected_written
    ]
    assert result.written == len(expected_written)
    assert result.examined == result.written + result.skipped_causal + result.skipped_filter
    if result.segment is not None:
        expected_lub = VectorTime().merge(*[by_seq[s]["vt"] for s in expected_written]).to_dict()
        assert result.segment.vt_lub == expected_lub


@pytest.mark.parametrize("with_filter", [False, True])
@pytest.mark.parametrize("with_admission", [False, True])
# Histories 6 and 7 block with the admission projection (6 after the first candidates), 0 does not.
@pytest.mark.parametrize("seed", [0, 6, 7])
def test_pass_counts_and_progress_match_rep1_with_and_without_filter_and_admission(
    spark: Any, store: LogStore, seed: int, with_filter: bool, with_admission: bool
) -> None:
    """The pass's counts, progress and written events against REP1 read one event at a time, with and without
    a filter and an admission projection: the pass derives some counts instead of observing them, and which
    ones depends on both (REP1, REP2)."""
    rng = random.Random(100 + seed)
    logs = _history(rng, 60)
    source = logs["A"]
    if not source:
        pytest.skip("empty source log")
    target_cvv = VectorTime().merge(*[e["vt"] for e in logs["B"]])
    progress = rng.randrange(0, max(1, len(source) // 2))
    admission = ["B", "C"] if with_admission else []

    def keep(e: dict[str, Any]) -> bool:
        return not with_filter or e["key"] != "k2"

    src = _write_log(spark, store, "A", source)
    out = store.new_segment_path("B", 1)
    result = replicate_pass(
        spark,
        store,
        _spec(
            store,
            [src],
            progress=progress,
            target_cvv=target_cvv.to_dict(),
            filter_sql="key <> 'k2'" if with_filter else None,
            admission=admission,
            target_seq=100,
            out_rel=out,
            source_keys=["A", "B", "C", "D", "E"],
        ),
    )
    expected_written, expected_progress, expected_block = _reference(
        source, progress, target_cvv, keep, admission
    )
    decided = [
        e for e in source if progress < e["seq"] and (expected_block is None or e["seq"] < expected_block)
    ]
    causal = [e for e in decided if VectorTime(e["vt"]) <= target_cvv]
    filtered = [e for e in decided if not VectorTime(e["vt"]) <= target_cvv and not keep(e)]
    assert (result.examined, result.skipped_causal, result.skipped_filter, result.written) == (
        len(decided),
        len(causal),
        len(filtered),
        len(expected_written),
    )
    assert (result.blocked_at, result.progress) == (expected_block, expected_progress)
    stored = read_log(spark, store, catalogued_all(store, [out])) if result.segment else []
    assert [e["seq"] for e in stored] == [100 + s - progress for s in expected_written]
    if expected_written:
        assert result.segment is not None
        assert (result.segment.count, result.segment.seq_lo, result.segment.seq_hi) == (
            len(expected_written),
            100 + expected_written[0] - progress,
            100 + expected_written[-1] - progress,
        )
    else:
        assert result.segment is None


# --- wide vectors: more keys than one column each (transforms.is_wide) -------------------------------------------

WIDE = ["A", "B", *[f"W{i:02d}" for i in range(WIDE_VECTOR_KEYS)]]


@pytest.mark.parametrize("seed", range(2))
def test_a_pass_over_wide_vectors_matches_rep1_and_records_the_exact_lub(
    spark: Any, store: LogStore, seed: int
) -> None:
    # Every location appends and replicates, so the source's vts hold more keys than WIDE_VECTOR_KEYS and the
    # pass takes the lambda path; decisions, order and the segment's LUB must be those of REP1 read literally.
    rng = random.Random(seed)
    logs = _history(rng, 400, WIDE)
    source = logs["A"]
    assert len(VectorTime().merge(*[e["vt"] for e in source]).to_dict()) > WIDE_VECTOR_KEYS
    target_cvv = VectorTime().merge(*[e["vt"] for e in logs["B"]])
    src = _write_log(spark, store, "A", source)
    out = store.new_segment_path("B", 1)
    result = replicate_pass(
        spark,
        store,
        _spec(
            store,
            [src],
            target_cvv=target_cvv.to_dict(),
            filter_sql="key <> 'k2'",
            target_seq=100,
            out_rel=out,
            source_keys=WIDE,
        ),
    )
    expected, expected_progress, _ = _reference(source, 0, target_cvv, lambda e: e["key"] != "k2", [])
    assert expected, "the history should leave the target something to receive"
    by_seq = {e["seq"]: e for e in source}
    assert result.progress == expected_progress
    assert [(e["seq"], e["vt"]) for e in read_log(spark, store, catalogued_all(store, [out]))] == [
        (100 + s, by_seq[s]["vt"]) for s in expected
    ]
    lub = VectorTime().merge(*[by_seq[s]["vt"] for s in expected]).to_dict()
    assert result.segment == SegmentStats(len(expected), 100 + expected[0], 100 + expected[-1], lub)


def test_a_wide_vector_key_outside_the_source_cvv_refuses_the_pass(spark: Any, store: LogStore) -> None:
    vt = dict.fromkeys(WIDE, 1)
    src = _write_log(spark, store, "A", [_ev(1, "A", 1, vt), _ev(2, "A", 2, {**vt, "A": 2, "Z": 1})])
    out = store.new_segment_path("B", 1)
    with pytest.raises(EnvironmentFailure, match="outside its CVV"):
        replicate_pass(spark, store, _spec(store, [src], out_rel=out, source_keys=WIDE))
    assert not store.exists(out)


def test_compacting_segments_of_wide_vectors_keeps_rows_and_the_exact_lub(
    spark: Any, store: LogStore
) -> None:
    first = [_ev(1, "A", 1, {**dict.fromkeys(WIDE, 1), "A": 1}), _ev(2, "A", 2, {"A": 2, "W03": 7})]
    second = [_ev(3, "B", 5, {"B": 5, "W15": 9})]
    segments = [_write_log(spark, store, "A", first), _write_log(spark, store, "A", second)]
    out = store.new_segment_path("A", 1)
    stats = compact(spark, store, catalogued_all(store, segments), out, keys=WIDE)
    lub = VectorTime().merge(*[e["vt"] for e in first + second]).to_dict()
    assert stats == SegmentStats(3, 1, 3, lub)
    assert [e["seq"] for e in read_log(spark, store, catalogued_all(store, [out]))] == [1, 2, 3]


# --- the local pass (no JVM, issue 17) against the Spark pass ----------------------------------------------------


def _both_passes(spark: Any, store: LogStore, spec: PassSpec) -> tuple[PassResult, PassResult, str, str]:
    """The Spark pass and the local pass of `spec`, each writing a segment of its own: (spark, local, outs)."""
    by_spark, by_arrow = store.new_segment_path("B", 1), store.new_segment_path("B", 1)
    assert localpass.runs_locally(store, spec, 100_000)
    spark_result = replicate_pass(spark, store, replace(spec, out_rel=by_spark))
    local_result = localpass.replicate_pass(store, replace(spec, out_rel=by_arrow))
    return spark_result, local_result, by_spark, by_arrow


def _both(spark: Any, store: LogStore, spec: PassSpec) -> list[Callable[[], PassResult]]:
    """The Spark pass and the local pass of `spec`, to be run one after the other."""
    return [
        functools.partial(replicate_pass, spark, store, spec),
        functools.partial(localpass.replicate_pass, store, spec),
    ]


def _same_segments(spark: Any, store: LogStore, by_spark: str, by_arrow: str) -> list[dict[str, Any]]:
    """Both passes wrote the same rows in the same file shape; each read with the other's reader."""
    spark_file, arrow_file = (
        pq.ParquetFile(next(store.local_path(rel).glob("*.parquet"))) for rel in (by_spark, by_arrow)
    )
    assert_same_file_shape(arrow_file, spark_file)
    assert sorted(p.name for p in store.local_path(by_arrow).iterdir())[0] == "_SUCCESS"
    spark_reads_arrow = read_log(spark, store, catalogued_all(store, [by_arrow]))
    assert spark_reads_arrow == read_local(store, catalogued_all(store, [by_spark]))
    return spark_reads_arrow


@pytest.mark.parametrize("seed", range(4))
def test_the_local_pass_decides_and_writes_as_the_spark_pass(spark: Any, store: LogStore, seed: int) -> None:
    # Random causal histories, the source in three segments of the three writers (a pass's output read from
    # Parquet, the Spark append job's and the local append writer's, whose nullability differ), a random
    # progress and target.
    rng = random.Random(seed)
    # A's first six events come from the two append writers; the history follows, A's clock shifted past them.
    logs = _after_own_events(_history(rng, 80), "A", 6)
    prefix, rest = store.new_segment_path("A", 1), store.new_segment_path("A", 4)
    append_local(store, "A", events=[{"key": "k0"}] * 3, start_seq=1, cvv={}, out_rel=prefix)
    append_events(spark, store, "A", events=[{"key": "k1"}] * 3, start_seq=4, cvv={}, out_rel=rest)
    source = [*read_local(store, catalogued_all(store, [prefix, rest])), *logs["A"]]
    segments = [prefix, rest, _write_log(spark, store, "A", logs["A"])]
    # The target: the location that has received the fewest of A's events.
    cvvs = {n: VectorTime().merge(*[e["vt"] for e in log]) for n, log in logs.items() if n != "A"}
    target = min(cvvs, key=lambda n: (cvvs[n].get("A"), n))
    target_cvv = cvvs[target]
    progress = rng.randrange(0, len(source) // 3)
    spec = _spec(
        store,
        segments,
        progress=progress,
        target_cvv=target_cvv.to_dict(),
        target_seq=len(logs[target]) + 3,
        source_keys=["A", "B", "C", "D", "E"],
    )
    spark_result, local_result, by_spark, by_arrow = _both_passes(spark, store, spec)
    assert local_result == spark_result
    expected, expected_progress, _ = _reference(source, progress, target_cvv, lambda e: True, [])
    assert expected and len(expected) < len(source) - progress, "some events written, some skipped (CF1)"
    assert local_result.progress == expected_progress
    stored = _same_segments(spark, store, by_spark, by_arrow)
    by_seq = {e["seq"]: e for e in source}
    shift = spec.target_seq - progress
    assert [(e["seq"], e["origin"], e["origin_time"], e["vt"], e["key"]) for e in stored] == [
        (s + shift, by_seq[s]["origin"], by_seq[s]["origin_time"], by_seq[s]["vt"], by_seq[s]["key"])
        for s in expected
    ]


def _after_own_events(
    logs: dict[str, list[dict[str, Any]]], name: str, count: int
) -> dict[str, list[dict[str, Any]]]:
    """`logs` as if `name` had emitted `count` events first: its seqs, its origin times and every vt's entry
    for it moved up by `count`."""

    def moved(e: dict[str, Any], in_own_log: bool) -> dict[str, Any]:
        vt = {k: v + count if k == name else v for k, v in e["vt"].items()}
        time = e["origin_time"] + count if e["origin"] == name else e["origin_time"]
        return {**e, "seq": e["seq"] + count if in_own_log else e["seq"], "origin_time": time, "vt": vt}

    return {n: [moved(e, n == name) for e in log] for n, log in logs.items()}


def test_the_local_pass_sees_a_pruned_origin_through_its_identity_as_the_spark_pass(
    spark: Any, store: LogStore
) -> None:
    # RET2 removed the retired id Z from every vt; the identity keeps it (M3). CF1 asks CVV-Y[Z] ≥ origin_time,
    # and the written segment's LUB gets Z back from the identities (RET4).
    src = _write_log(
        spark,
        store,
        "A",
        [
            _ev(1, "Z", 1, {}),  # known at the target through its identity
            _ev(2, "Z", 2, {}),
            _ev(3, "A", 1, {"A": 1}),
            _ev(4, "Z", 3, {"A": 1}),
        ],
    )
    spec = _spec(store, [src], target_cvv={"Z": 1}, source_keys=["A"], identity_origins=["Z"], target_seq=4)
    spark_result, local_result, by_spark, by_arrow = _both_passes(spark, store, spec)
    assert (
        local_result
        == spark_result
        == PassResult(4, 3, 1, 0, None, 4, SegmentStats(3, 6, 8, {"A": 1, "Z": 3}))
    )
    assert [
        (e["seq"], e["origin"], e["origin_time"]) for e in _same_segments(spark, store, by_spark, by_arrow)
    ] == [
        (6, "Z", 2),
        (7, "A", 1),
        (8, "Z", 3),
    ]


@pytest.mark.parametrize(
    "odd",
    [
        [("A", 1), ("B", 1), ("Z", 1)],  # a key outside CVV-X
        [("A", 1), ("B", None)],  # a NULL entry: no value for B, one entry too many
    ],
)
def test_the_local_pass_refuses_a_vt_outside_the_source_cvv_as_the_spark_pass(
    spark: Any, store: LogStore, odd: list[tuple[str, int | None]]
) -> None:
    # I3, narrow vectors: every examined event's vt is checked, here one that CF1 skips; nothing is written.
    src = _write_log(spark, store, "A", [_ev(1, "B", 1, {}), _ev(2, "A", 2, {"A": 2, "B": 1})])
    frame = spark.read.parquet(store.uri(src)).withColumn(
        "vt",
        F.when(
            F.col("seq") == 1,
            F.map_from_entries(F.array(*[F.struct(F.lit(k), F.lit(v).cast("bigint")) for k, v in odd])),
        ).otherwise(F.col("vt")),
    )
    rel = store.new_segment_path("A", 1)
    frame.write.parquet(store.uri(rel))
    spec = _spec(
        store, [rel], target_cvv={"B": 1}, source_keys=["A", "B"], out_rel=store.new_segment_path("B", 1)
    )
    for run in _both(spark, store, spec):
        with pytest.raises(EnvironmentFailure, match=r"outside its CVV \(I3 is broken at the source\)"):
            run()
        assert not store.exists(spec.out_rel)


def test_the_local_pass_writes_nothing_where_the_spark_pass_writes_nothing(
    spark: Any, store: LogStore
) -> None:
    # Nothing above the progress, and everything above it known at the target (CF1): the same empty results.
    src = _write_log(spark, store, "A", [_ev(1, "A", 1, {"A": 1}), _ev(2, "A", 2, {"A": 2})])
    for kw in ({"progress": 2}, {"target_cvv": {"A": 2}}):
        spec = _spec(store, [src], source_keys=["A"], **kw)
        spark_result, local_result, by_spark, by_arrow = _both_passes(spark, store, spec)
        assert local_result == spark_result
        assert local_result.segment is None
        assert not store.exists(by_spark) and not store.exists(by_arrow)


def test_the_local_pass_reads_segments_whose_timestamps_spark_wrote_otherwise(
    spark: Any, store: LogStore
) -> None:
    # A segment Spark wrote with another timestamp type (TIMESTAMP_MICROS) beside the local writer's INT96: the
    # local pass reads both as the Spark pass does.
    first = store.new_segment_path("A", 1)
    append_local(store, "A", events=[{"key": "k1"}], start_seq=1, cvv={}, out_rel=first)
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    try:
        second = store.new_segment_path("A", 2)
        append_events(spark, store, "A", events=[{"key": "k2"}], start_seq=2, cvv={}, out_rel=second)
    finally:
        spark.conf.unset("spark.sql.parquet.outputTimestampType")
    spec = _spec(store, [first, second], source_keys=["A"])
    spark_result, local_result, by_spark, by_arrow = _both_passes(spark, store, spec)
    assert local_result == spark_result == PassResult(2, 2, 0, 0, None, 2, SegmentStats(2, 1, 2, {"A": 2}))
    assert [e["key"] for e in _same_segments(spark, store, by_spark, by_arrow)] == ["k1", "k2"]


def test_the_local_pass_refuses_a_damaged_source_as_the_spark_pass(spark: Any, store: LogStore) -> None:
    # DR0: a catalogued file gone, or a segment holding other rows than its catalog row, is damage; nothing is
    # written.
    src = _write_log(spark, store, "A", [_ev(1, "A", 1, {"A": 1}), _ev(2, "A", 2, {"A": 2})])
    [row] = catalogued_all(store, [src])
    spec = _spec(store, [src], out_rel=store.new_segment_path("B", 1))
    shorter = replace(spec, source_segments=[replace(row, count=3)])
    with pytest.raises(DamagedLog, match="holds 2 events, its catalog row 3"):
        localpass.replicate_pass(store, shorter)
    with pytest.raises(DamagedLog, match="gave 2 events, their catalog rows hold 3"):
        replicate_pass(spark, store, shorter)
    sorted(store.local_path(src).glob("*.parquet"))[0].unlink()
    for run in _both(spark, store, spec):
        with pytest.raises(
            DamagedLog, match=r"A's log is damaged: .* is missing or of another size than catalogued"
        ):
            run()
        assert not store.exists(spec.out_rel)


def test_only_small_unfiltered_passes_on_a_local_store_run_locally(store: LogStore, tmp_path: Path) -> None:
    rows = [replace(_row(i), count=10) for i in range(3)]
    spec = replace(_spec(store, []), source_segments=rows)
    assert localpass.runs_locally(store, spec, 30)
    assert not localpass.runs_locally(store, spec, 29)
    assert not localpass.runs_locally(store, spec, 0)
    assert not localpass.runs_locally(store, replace(spec, filter_sql="key = 'k1'"), 30)  # Spark SQL: Spark's
    assert not localpass.runs_locally(store, replace(spec, admission=["A", "B"]), 30)  # RFC2
    remote = LogStore("hdfs://namenode:8020/logs")
    assert not localpass.runs_locally(remote, spec, 30)
    assert not localpass.runs_locally(store, replace(spec, source_keys=WIDE), 30)  # memory: Spark streams
    unknown = replace(spec, source_segments=[*rows[:2], replace(rows[2], files=None)])
    assert not localpass.runs_locally(store, unknown, 30)  # a row made before rows named their files
    big = replace(spec, source_segments=[*rows[:2], _row(2, size=localpass.LOCAL_BYTES)])
    assert not localpass.runs_locally(store, big, 30)  # the bytes, not only the rows


@pytest.mark.parametrize(
    ("settings", "local"),
    [
        ({}, True),
        ({"local_limit": 0}, False),
        # The JVM-free writers write Spark's default Parquet: a setting that changes it sends the work to Spark.
        ({"spark_conf": (("spark.sql.parquet.compression.codec", "gzip"),)}, False),
    ],
)
def test_the_data_plane_runs_a_small_pass_locally_unless_told_otherwise(
    spark: Any, store: LogStore, settings: dict[str, Any], local: bool
) -> None:
    # Which pass ran shows in the segment: Spark writes Hadoop's `.crc` side files, the local writer none.
    src = _write_log(spark, store, "A", [_ev(1, "A", 1, {"A": 1})])
    spec = _spec(store, [src], source_keys=["A"], out_rel=store.new_segment_path("B", 1))
    result = SharedSessionEngine(store, spark, Path(str(store.root)), **settings).replicate_pass(spec)
    assert result == PassResult(1, 1, 0, 0, None, 1, SegmentStats(1, 1, 1, {"A": 1}))
    crc = [p.name for p in store.local_path(spec.out_rel).iterdir() if p.name.endswith(".crc")]
    assert (not crc) is local


def _row(i: int, size: int = 1000) -> Segment:
    return Segment(
        i, "A", f"A/seg-{i}", i * 10 + 1, i * 10 + 10, 10, VectorTime({}), (SegmentFile("p", size),)
    )
