"""Clock pruning of one log as a Spark job (rules.md RET2): every vt loses the retired key, nothing else changes.

Each segment to prune is rewritten into a new segment directory with the same rows, seqs and identities
(origin, origin_time stay, M3); only the `vt` map loses one key. Old segments are never changed: the caller
commits the new rows and removes the old files afterwards, so a job that dies leaves only orphans that no
catalog row names (garbage, never read).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from replctl.adapters.logstore.sourcechecks import damage_explains
from replctl.adapters.spark.jobs import write_segment
from replctl.adapters.spark.schema import EVENT_COLUMNS, read_checked
from replctl.adapters.spark.session import spark_failures
from replctl.core.jobs import SegmentRewrite, SegmentStats

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from replctl.adapters.logstore import LogStore


def without_key(events: DataFrame, key: str) -> DataFrame:
    """RET2 on a DataFrame of events: drop `key` from every vt; every other column is kept as it is."""
    return events.withColumn("vt", F.map_filter("vt", lambda k, _v: k != F.lit(key))).select(*EVENT_COLUMNS)


def prune_log(
    spark: SparkSession,
    store: LogStore,
    rewrites: Sequence[SegmentRewrite],
    *,
    key: str,
    keys: Sequence[str],
    identity_origins: Sequence[str] = (),
) -> list[SegmentStats | None]:
    """Rewrite each segment of one log without `key` in its vts; returns each new segment's statistics.

    `keys` are the keys the pruned vts may hold (the log's CVV keys without `key`), so each write gathers its
    LUB as it goes (`jobs.write_segment`); the LUB keeps `key` through the identities of its events (RET4),
    as it keeps the other `identity_origins`. The rows of a segment are mapped one to one, without a shuffle,
    so each file keeps its seq order; the seq range and count come back unchanged for the caller to check.
    A segment that held no rows yields None.
    """
    kept = sorted(set(keys) - {key})
    out: list[SegmentStats | None] = []
    sources = [r.source for r in rewrites]
    with damage_explains(store, sources), spark_failures(f"pruning {key} from the clocks of a log"):
        for rewrite in rewrites:
            read = read_checked(spark, store, [rewrite.source])
            out.append(
                write_segment(
                    spark,
                    store,
                    without_key(read.events, key),
                    rewrite.target,
                    kept,
                    identity_origins=sorted({*identity_origins, key}),
                )
            )
            # The pruned copy replaces the segment: a partial read must not (DR0); nothing is committed yet.
            read.check()
    return out
