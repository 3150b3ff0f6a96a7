"""Appends (EM1), reading, compaction and the deletion rewrite, on real Parquet segments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from segment_rows import catalogued, catalogued_all

from replctl.adapters.logstore import LogStore
from replctl.adapters.spark.jobs import append_events, compact, read_log, rewrite_from
from replctl.core.jobs import SegmentStats
from replctl.errors import InvalidInput

pytestmark = pytest.mark.spark


def _append(
    spark: Any, store: LogStore, location: str, start: int, cvv: dict[str, int], **source: Any
) -> str:
    out = store.new_segment_path(location, start)
    append_events(spark, store, location, start_seq=start, cvv=cvv, out_rel=out, **source)
    return out


def test_append_numbers_events_per_em1(spark: Any, store: LogStore) -> None:
    out = store.new_segment_path("A", 4)
    stats = append_events(
        spark,
        store,
        "A",
        events=[{"key": "e1"}, {"key": "e2", "tags": ["x"], "payload": {"n": 1}}, {"type": "t"}],
        start_seq=4,
        cvv={"A": 3, "B": 2, "C": 0},
        out_rel=out,
    )
    assert stats == SegmentStats(count=3, seq_lo=4, seq_hi=6, vt_lub={"A": 6, "B": 2})
    events = read_log(spark, store, [catalogued(store, out)])
    assert [(e["seq"], e["origin"], e["origin_time"], e["vt"]) for e in events] == [
        (4, "A", 4, {"A": 4, "B": 2}),
        (5, "A", 5, {"A": 5, "B": 2}),
        (6, "A", 6, {"A": 6, "B": 2}),
    ]
    assert [(e["type"], e["key"], e["tags"], e["payload"]) for e in events] == [
        (None, "e1", [], None),
        (None, "e2", ["x"], '{"n":1}'),
        ("t", None, [], None),
    ]
    assert all(e["emitted_at"] is not None for e in events)


def test_append_rejects_unknown_fields_and_bad_types(spark: Any, store: LogStore) -> None:
    with pytest.raises(InvalidInput, match="unknown field"):
        _append(spark, store, "A", 1, {}, events=[{"key": "k", "seq": 9}])
    with pytest.raises(InvalidInput, match="tags"):
        _append(spark, store, "A", 1, {}, events=[{"tags": "x"}])
    with pytest.raises(InvalidInput, match="no events"):
        _append(spark, store, "A", 1, {}, events=[])
    with pytest.raises(InvalidInput, match="exactly one"):
        _append(spark, store, "A", 1, {}, events=[{}], generate=3)


def test_generate_is_deterministic_and_numbered(spark: Any, store: LogStore) -> None:
    first = _append(spark, store, "A", 1, {"B": 5}, generate=2000, seed=7)
    second = _append(spark, LogStore(str(store.root) + "2"), "A", 1, {"B": 5}, generate=2000, seed=7)
    events = read_log(spark, store, [catalogued(store, first)])
    other = LogStore(str(store.root) + "2")
    again = read_log(spark, other, [catalogued(other, second)])
    assert [e["seq"] for e in events] == list(range(1, 2001))
    assert all(e["origin_time"] == e["seq"] and e["vt"] == {"A": e["seq"], "B": 5} for e in events)
    assert [(e["key"], e["type"], e["payload"], e["tags"]) for e in events] == [
        (e["key"], e["type"], e["payload"], e["tags"]) for e in again
    ]
    assert len({e["key"] for e in events}) > 100


def test_append_parquet_keeps_file_order_and_checks_columns(
    spark: Any, store: LogStore, tmp_path: Path
) -> None:
    src = str(tmp_path / "in.parquet")
    keys = [f"k{i:03d}" for i in range(50)][::-1]
    spark.createDataFrame([(k, [k]) for k in keys], "key string, tags array<string>").coalesce(
        1
    ).write.parquet(src)
    out = _append(spark, store, "A", 10, {}, parquet_path=src)
    events = read_log(spark, store, [catalogued(store, out)])
    assert [e["key"] for e in events] == keys
    assert [e["seq"] for e in events] == list(range(10, 60))

    bad = str(tmp_path / "bad.parquet")
    spark.createDataFrame([(1, "x")], "key int, payload string").write.parquet(bad)
    with pytest.raises(InvalidInput, match=r"key \(int\)"):
        _append(spark, store, "A", 60, {}, parquet_path=bad)
    extra = str(tmp_path / "extra.parquet")
    spark.createDataFrame([("x", "A")], "key string, origin string").write.parquet(extra)
    with pytest.raises(InvalidInput, match="origin"):
        _append(spark, store, "A", 60, {}, parquet_path=extra)
    with pytest.raises(InvalidInput, match="cannot read"):
        _append(spark, store, "A", 60, {}, parquet_path=str(tmp_path / "missing.parquet"))


def test_read_log_from_and_limit_across_segments(spark: Any, store: LogStore) -> None:
    one = _append(spark, store, "A", 1, {}, events=[{"key": f"a{i}"} for i in range(3)])
    two = _append(spark, store, "A", 4, {"A": 3}, events=[{"key": f"b{i}"} for i in range(3)])
    events = read_log(spark, store, catalogued_all(store, [one, two]), from_seq=3, limit=2)
    assert [(e["seq"], e["key"]) for e in events] == [(3, "a2"), (4, "b0")]
    assert read_log(spark, store, []) == []


def test_compact_keeps_rows_and_stats(spark: Any, store: LogStore) -> None:
    segments = [
        _append(spark, store, "A", 1, {"B": 2}, events=[{"key": "a"}, {"key": "b"}]),
        _append(spark, store, "A", 3, {"A": 2, "B": 4}, events=[{"key": "c"}]),
    ]
    before = read_log(spark, store, catalogued_all(store, segments))
    out = store.new_segment_path("A", 1)
    stats = compact(spark, store, catalogued_all(store, segments), out)
    assert stats == SegmentStats(count=3, seq_lo=1, seq_hi=3, vt_lub={"A": 3, "B": 4})
    assert read_log(spark, store, [catalogued(store, out)]) == before


def test_rewrite_from_keeps_the_suffix_and_reports_the_dropped_lub(spark: Any, store: LogStore) -> None:
    seg = _append(spark, store, "A", 1, {"B": 2}, events=[{"key": str(i)} for i in range(5)])
    out = store.new_segment_path("A", 4)
    result = rewrite_from(spark, store, catalogued(store, seg), 4, out)
    assert result.kept == SegmentStats(count=2, seq_lo=4, seq_hi=5, vt_lub={"A": 5, "B": 2})
    # DEL2: the DVV grows by the LUB of what was dropped only.
    assert result.dropped == SegmentStats(count=3, seq_lo=1, seq_hi=3, vt_lub={"A": 3, "B": 2})
    assert [e["seq"] for e in read_log(spark, store, [catalogued(store, out)])] == [4, 5]

    gone = store.new_segment_path("A", 99)
    everything = rewrite_from(spark, store, catalogued(store, seg), 99, gone)
    assert everything.kept is None
    assert not store.exists(gone)
    assert everything.dropped is not None and everything.dropped.count == 5


@pytest.mark.parametrize("ignored", [None, ""])
def test_m2_spark_reads_a_folders_files_as_the_input_check_lists_them(
    spark: Any, store: LogStore, tmp_path: Path, ignored: str | None
) -> None:
    # Spark reads `_part=1.parquet` and skips `_skipped.parquet`, `.hidden/` and `x._COPYING_`, as the check
    # lists them; also when a Spark setting would stop it skipping names (an empty regex skips nothing).
    import pyarrow as pa
    import pyarrow.parquet as pq

    from replctl.adapters import eventfile

    folder = tmp_path / "in"
    (folder / "sub").mkdir(parents=True)
    (folder / ".hidden").mkdir()
    for name in ("a.parquet", "_part=1.parquet", "sub/b.parquet", "_skipped.parquet", ".hidden/c.parquet"):
        pq.write_table(pa.table({"key": pa.array([name])}), folder / name)
    pq.write_table(pa.table({"key": pa.array(["copying"])}), folder / "d.parquet._COPYING_")
    listed, _ = eventfile._listing(folder)
    setting = "spark.sql.files.ignoredPathSegmentRegex"
    if ignored is not None:
        spark.conf.set(setting, ignored)
    try:
        out = _append(spark, store, "A", 1, {}, parquet_path=str(folder))
    finally:
        spark.conf.unset(setting)
    read = sorted(e["key"] for e in read_log(spark, store, [catalogued(store, out)]))
    assert read == sorted(p.relative_to(folder).as_posix() for p in listed)
    assert read == ["_part=1.parquet", "a.parquet", "sub/b.parquet"]
