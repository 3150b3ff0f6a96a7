"""The vt column helpers of `schema`: how a stored vt is written and read (VT1), on real Spark columns."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import functions as F
from segment_rows import catalogued

from replctl.adapters.logstore import LogStore
from replctl.adapters.spark.jobs import append_events
from replctl.adapters.spark.schema import read_events, vt_entries

pytestmark = pytest.mark.spark

# Each vt as a SQL map literal, in the key order it is stored in.
VTS = {
    "exactly the keys, sorted": "map('A', 1, 'B', 2, 'C', 3)",
    "exactly the keys, another order": "map('C', 3, 'A', 1, 'B', 2)",
    "two keys swapped": "map('B', 2, 'A', 1, 'C', 3)",
    "a subset": "map('A', 1, 'C', 3)",
    "one key more": "map('A', 1, 'B', 2, 'C', 3, 'D', 4)",
    "the same count, one key outside": "map('A', 1, 'B', 2, 'D', 4)",
    "empty": "map()",
    "a NULL value": "map('A', 1, 'B', NULL, 'C', 3)",
    "no vt at all": "NULL",
}


def test_vt_entries_read_every_order_and_shape_like_a_lookup_per_key(spark: Any) -> None:
    keys = ["A", "B", "C"]
    rows = spark.sql(
        " UNION ALL ".join(
            f"SELECT '{name}' AS name, cast({vt} AS map<string,bigint>) AS vt" for name, vt in VTS.items()
        )
    )
    positional = [entry.alias(f"p{i}") for i, entry in enumerate(vt_entries(keys))]
    searched = [F.element_at("vt", F.lit(k)).alias(f"s{i}") for i, k in enumerate(keys)]
    got = {r["name"]: r for r in rows.select("name", *positional, *searched).collect()}
    assert set(got) == set(VTS)
    for name, row in got.items():
        assert [row[f"p{i}"] for i in range(3)] == [row[f"s{i}"] for i in range(3)], name
    assert [got["exactly the keys, another order"][f"p{i}"] for i in range(3)] == [1, 2, 3]
    assert [got["a subset"][f"p{i}"] for i in range(3)] == [1, None, 3]
    assert [got["the same count, one key outside"][f"p{i}"] for i in range(3)] == [1, 2, None]
    assert [got["a NULL value"][f"p{i}"] for i in range(3)] == [1, None, 3]
    assert [got["no vt at all"][f"p{i}"] for i in range(3)] == [None, None, None]


def test_vt_entries_refuse_repeated_keys() -> None:
    with pytest.raises(ValueError, match="distinct keys"):
        vt_entries(["A", "B", "A"])


def test_appended_vts_are_stored_with_sorted_keys(spark: Any, store: LogStore) -> None:
    # B is neither the first nor the last key: a vt built as "the others, then the own entry" would be out
    # of order and miss vt_entries' positional read.
    out = store.new_segment_path("B", 1)
    append_events(
        spark,
        store,
        "B",
        events=[{"key": "e1"}, {"key": "e2"}],
        start_seq=1,
        cvv={"A": 4, "C": 2, "D": 0},
        out_rel=out,
    )
    stored = (
        read_events(spark, store, [catalogued(store, out)])
        .orderBy("seq")
        .select(F.map_entries("vt").alias("e"))
        .collect()
    )
    assert [[(e["key"], e["value"]) for e in r["e"]] for r in stored] == [
        [("A", 4), ("B", 1), ("C", 2)],
        [("A", 4), ("B", 2), ("C", 2)],
    ]
