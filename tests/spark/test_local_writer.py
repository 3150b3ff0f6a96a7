"""The JVM-free append writer (pyarrow) against the Spark append job: same layout, schema, metadata, rows and
statistics (EM1, RET4); each writer's segment read back with the other's reader."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from segment_rows import assert_same_file_shape, catalogued

from replctl.adapters.logstore import LogStore
from replctl.adapters.logstore.reader import read_local
from replctl.adapters.logstore.writer import append_local
from replctl.adapters.spark.jobs import append_events, read_log
from replctl.errors import EnvironmentFailure

pytestmark = pytest.mark.spark

EVENTS: list[dict[str, Any]] = [
    {"type": None, "key": "e1", "tags": [], "payload": None},
    {"type": "t", "key": None, "tags": ["x", "ext"], "payload": '{"n": 1}'},
    {"type": "u", "key": "é", "tags": [], "payload": '"text"'},
]


def _parquet(segment: Path) -> pq.ParquetFile:
    [file] = sorted(segment.glob("*.parquet"))
    return pq.ParquetFile(file)


def _without_instant(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k != "emitted_at"} for e in events]


@pytest.mark.parametrize(
    "cvv",
    [
        {},
        {"A": 3, "B": 2, "C": 0},
        # After a clock pruning the base leaves the pruned id out (RET2), and an own entry above the
        # first seq is kept as the job keeps it (greatest).
        {"A": 9, "Z": 4},
    ],
)
def test_both_writers_write_the_same_segment(spark: Any, store: LogStore, cvv: dict[str, int]) -> None:
    by_spark, by_arrow = store.new_segment_path("A", 4), store.new_segment_path("A", 4)
    spark_stats = append_events(spark, store, "A", events=EVENTS, start_seq=4, cvv=cvv, out_rel=by_spark)
    arrow_stats = append_local(store, "A", events=EVENTS, start_seq=4, cvv=cvv, out_rel=by_arrow)
    assert arrow_stats == spark_stats

    spark_file, arrow_file = _parquet(store.local_path(by_spark)), _parquet(store.local_path(by_arrow))
    assert_same_file_shape(arrow_file, spark_file)
    names = sorted(p.name for p in store.local_path(by_arrow).iterdir())
    assert len(names) == 2 and names[0] == "_SUCCESS"
    assert re.fullmatch(r"part-00000-[0-9a-f-]{36}-c000\.snappy\.parquet", names[1])

    # Each writer's output through the other's reader.
    spark_reads_arrow = read_log(spark, store, [catalogued(store, by_arrow)])
    arrow_reads_spark = read_local(store, [catalogued(store, by_spark)])
    assert _without_instant(spark_reads_arrow) == _without_instant(arrow_reads_spark)
    own = max(4, cvv.get("A", 0))
    others = {k: v for k, v in cvv.items() if k != "A" and v}
    assert [(e["seq"], e["origin"], e["origin_time"], e["vt"]) for e in spark_reads_arrow] == [
        (4, "A", 4, dict(sorted({**others, "A": max(4, own)}.items()))),
        (5, "A", 5, dict(sorted({**others, "A": max(5, own)}.items()))),
        (6, "A", 6, dict(sorted({**others, "A": max(6, own)}.items()))),
    ]
    assert [(e["type"], e["key"], e["tags"], e["payload"]) for e in spark_reads_arrow] == [
        (None, "e1", [], None),
        ("t", None, ["x", "ext"], '{"n": 1}'),
        ("u", "é", [], '"text"'),
    ]
    assert len({e["emitted_at"] for e in spark_reads_arrow}) == 1
    assert spark_reads_arrow[0]["emitted_at"] is not None


def test_a_parquet_input_is_written_in_file_order_as_spark_writes_it(
    spark: Any, store: LogStore, tmp_path: Path
) -> None:
    source = tmp_path / "in.parquet"
    pq.write_table(
        pa.table({"key": ["k3", "k1", None], "tags": [["a"], None, []], "payload": [None, "1", "[2]"]}),
        source,
    )
    by_spark, by_arrow = store.new_segment_path("A", 1), store.new_segment_path("A", 1)
    spark_stats = append_events(
        spark, store, "A", parquet_path=str(source), start_seq=1, cvv={"B": 7}, out_rel=by_spark
    )
    arrow_stats = append_local(store, "A", parquet_path=source, start_seq=1, cvv={"B": 7}, out_rel=by_arrow)
    assert arrow_stats == spark_stats
    assert (
        _parquet(store.local_path(by_arrow)).schema_arrow == _parquet(store.local_path(by_spark)).schema_arrow
    )
    assert _without_instant(read_log(spark, store, [catalogued(store, by_arrow)])) == _without_instant(
        read_local(store, [catalogued(store, by_spark)])
    )
    assert [
        (e["seq"], e["key"], e["tags"], e["payload"], e["vt"])
        for e in read_local(store, [catalogued(store, by_arrow)])
    ] == [
        (1, "k3", ["a"], None, {"A": 1, "B": 7}),
        (2, "k1", [], "1", {"A": 2, "B": 7}),
        (3, None, [], "[2]", {"A": 3, "B": 7}),
    ]


def test_the_local_writer_never_writes_onto_an_existing_segment(store: LogStore) -> None:
    out = store.new_segment_path("A", 1)
    append_local(store, "A", events=EVENTS, start_seq=1, cvv={}, out_rel=out)
    with pytest.raises(EnvironmentFailure, match="existing segment"):
        append_local(store, "A", events=EVENTS, start_seq=1, cvv={}, out_rel=out)
    assert [e["key"] for e in read_local(store, [catalogued(store, out)])] == ["e1", None, "é"]
    # No staging folder is left behind, and the store lists the one segment.
    assert [p.name for p in store.local_path("A").iterdir()] == [out.split("/")[1]]


UNUSUAL: list[dict[str, Any]] = [
    {"type": "", "key": "", "tags": [""], "payload": '""'},
    {"type": None, "key": 'quo"te\\back', "tags": ["\x00", "\u2028\u2029"], "payload": '{"a": "\\u0000"}'},
    {"type": "\ufeff\uffff", "key": "\U0010ffff😀", "tags": [], "payload": None},
    {"type": "t", "key": None, "tags": ["\t\n\r"], "payload": "[" + ",".join(["1"] * 500) + "]"},
]


def test_both_writers_agree_on_unusual_text_at_a_location_between_others_in_sliced_json(
    spark: Any, store: LogStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The JSON lines of the local writer: empty strings stay empty (never null), control and non-BMP characters,
    # quotes and backslashes survive; vt keys sort on both sides of the location; and a batch parsed in several
    # slices (each line one here) is the batch parsed whole.
    from replctl.adapters.logstore import writer

    monkeypatch.setattr(writer, "_SLICE_BYTES", 1)
    cvv = {"A": 2, "C": 1}
    by_spark, by_arrow = store.new_segment_path("B", 3), store.new_segment_path("B", 3)
    spark_stats = append_events(spark, store, "B", events=UNUSUAL, start_seq=3, cvv=cvv, out_rel=by_spark)
    arrow_stats = append_local(store, "B", events=UNUSUAL, start_seq=3, cvv=cvv, out_rel=by_arrow)
    assert arrow_stats == spark_stats
    assert (
        _parquet(store.local_path(by_arrow)).schema_arrow == _parquet(store.local_path(by_spark)).schema_arrow
    )
    by_arrow_read = read_local(store, [catalogued(store, by_arrow)])
    assert _without_instant(read_log(spark, store, [catalogued(store, by_arrow)])) == _without_instant(
        read_local(store, [catalogued(store, by_spark)])
    )
    assert [(e["seq"], e["vt"]) for e in by_arrow_read] == [
        (3, {"A": 2, "B": 3, "C": 1}),
        (4, {"A": 2, "B": 4, "C": 1}),
        (5, {"A": 2, "B": 5, "C": 1}),
        (6, {"A": 2, "B": 6, "C": 1}),
    ]
    assert [(e["type"], e["key"], e["tags"], e["payload"]) for e in by_arrow_read] == [
        (x["type"], x["key"], x["tags"], x["payload"]) for x in UNUSUAL
    ]
    assert len({e["emitted_at"] for e in by_arrow_read}) == 1
