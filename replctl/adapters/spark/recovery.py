"""Spark jobs for disaster drills and recovery (rules.md DR0–DR1): census of what survives, and truncation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from replctl.adapters.spark.jobs import write_segment
from replctl.adapters.spark.results import SegmentStats
from replctl.adapters.spark.schema import read_events
from replctl.adapters.spark.session import spark_failures

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from replctl.adapters.logstore import LogStore


def census(spark: SparkSession, store: LogStore, segment_paths: Sequence[str]) -> dict[str, tuple[int, int]]:
    """Rows and max seq actually stored per segment (relative path); absent segments are left out.

    One scan of the seq column, grouped by the file each row came from (Parquet footers make it cheap).
    """
    present = [p for p in segment_paths if store.exists(p)]
    if not present:
        return {}
    with spark_failures("checking the stored segments (DR0)"):
        rows = (
            read_events(spark, store, present)
            .select("seq", F.col("_metadata.file_path").alias("file"))
            .groupBy("file")
            .agg(F.count(F.lit(1)).alias("n"), F.max("seq").alias("hi"))
            .collect()
        )
    found: dict[str, tuple[int, int]] = {}
    for row in rows:
        path = next((p for p in present if f"/{p}/" in str(row["file"])), None)
        if path is None:
            continue
        n, hi = found.get(path, (0, 0))
        found[path] = (n + int(row["n"]), max(hi, int(row["hi"])))
    return found


def truncate_below(
    spark: SparkSession,
    store: LogStore,
    segment_path: str,
    keep_below: int,
    out_rel: str,
    *,
    keys: Sequence[str],
    identity_origins: Sequence[str] = (),
) -> SegmentStats | None:
    """Write the events of one segment with seq < `keep_below` as a new segment (None when none survive).

    `keys` and `identity_origins` are as for `jobs.write_segment`.
    """
    if not store.exists(segment_path):
        return None
    with spark_failures("keeping the survivors of a damaged segment"):
        events = read_events(spark, store, [segment_path]).where(F.col("seq") < F.lit(keep_below))
        return write_segment(spark, store, events, out_rel, keys, identity_origins=identity_origins)
