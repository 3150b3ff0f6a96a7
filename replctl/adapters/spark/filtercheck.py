"""Whether a connection filter itself fails on the events a pass reads (issue 14: a failing filter).

Used only after a replication pass failed in Spark: the pass's error alone does not say whether the filter
(an allowed function that raises on some event, e.g. a cast under ANSI rules) or the environment (disk, store,
memory) is at fault. Evaluating the filter alone over the same events answers it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from replctl.adapters.spark.schema import read_events

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from replctl.adapters.logstore import LogStore
    from replctl.core.model import Segment


def filter_failure(
    spark: SparkSession, store: LogStore, segments: Sequence[Segment], progress: int, filter_sql: str
) -> str | None:
    """The first line of Spark's error when `filter_sql` fails on the events after `progress`, else None.

    The same events are read first without the filter, every column it may see included: when that read
    fails too, the store or the environment is at fault, not the filter, and None is returned.
    """
    seen = [F.col(name).isNotNull() for name in ("origin", "origin_time", "type", "key", "tags", "payload")]
    try:
        events = read_events(spark, store, segments).where(F.col("seq") > F.lit(progress))
        events.select(F.count_if(F.greatest(*seen))).collect()
    except Exception:
        return None
    try:
        events.select(F.count_if(F.coalesce(F.expr(filter_sql), F.lit(False)))).collect()
    except Exception as exc:
        text = str(exc).strip()
        return text.splitlines()[0] if text else type(exc).__name__
    return None
