"""The JVM-free reader of `log show` returns exactly what the Spark reader returns."""

from __future__ import annotations

from typing import Any

from segment_rows import catalogued_all

from replctl.adapters.logstore import LogStore
from replctl.adapters.logstore.reader import read_local
from replctl.adapters.spark import jobs


def test_local_reader_and_spark_reader_agree_on_every_column(spark: Any, store: LogStore) -> None:
    paths = []
    for first, n in ((1, 3), (4, 2)):
        out = store.new_segment_path("A", first)
        jobs.append_events(
            spark,
            store,
            "A",
            events=None,
            parquet_path=None,
            generate=n,
            seed=first,
            start_seq=first,
            cvv={"B": 7},
            out_rel=out,
        )
        paths.append(out)
    for from_seq, limit in ((0, None), (2, 2), (5, None), (9, None)):
        segments = catalogued_all(store, paths)
        expected = jobs.read_log(spark, store, segments, from_seq=from_seq, limit=limit)
        assert read_local(store, segments, from_seq=from_seq, limit=limit) == expected
    assert [e["seq"] for e in read_local(store, catalogued_all(store, paths))] == [1, 2, 3, 4, 5]
    assert read_local(store, catalogued_all(store, paths))[0]["vt"] == {"A": 1, "B": 7}
