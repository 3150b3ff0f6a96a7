"""Whether a connection filter itself fails on the events a pass reads (issue 14: a failing filter).

Used after a replication pass failed in Spark: the pass's error alone does not say whether the filter (an
allowed function that raises on some event, e.g. a cast under ANSI rules) or the environment (disk, store,
memory) is at fault. Evaluating the filter alone over the same events answers it. A dry run asks the same
question before the pass, so that it reports the failure the run would meet.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from replctl.adapters.spark.admission import first_block
from replctl.adapters.spark.schema import read_events
from replctl.adapters.spark.session import raise_if_connect_lost
from replctl.adapters.spark.transforms import covered_by_identity

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from replctl.adapters.logstore import LogStore
    from replctl.core.model import Segment


def filter_failure(  # noqa: PLR0917 (the port's signature)
    spark: SparkSession,
    store: LogStore,
    segments: Sequence[Segment],
    progress: int,
    filter_sql: str,
    target_cvv: Mapping[str, int] | None = None,
    *,
    admission: Sequence[str] = (),
) -> str | None:
    """The first line of Spark's error when `filter_sql` fails on the events after `progress`, else None.

    With `target_cvv`, only the events the pass evaluates the filter on count: the pass decides CF1 first and
    Spark's CASE evaluates the filter only where CF1 does not skip (`transforms.classify`). With an RFC2
    admission projection too (the pass's `admission`), only those up to the block: the pass stops there
    (REP1 (3)) and examines nothing after it (`admission.first_block`).
    The same events are read first without the filter, every column it may see included: when that read
    fails too, the store or the environment is at fault, not the filter, and None is returned.
    """
    seen = [F.col(name).isNotNull() for name in ("origin", "origin_time", "type", "key", "tags", "payload")]
    try:
        events = read_events(spark, store, segments).where(F.col("seq") > F.lit(progress))
        if target_cvv is not None:
            events = events.where(~covered_by_identity(target_cvv))
        events.select(F.count_if(F.greatest(*seen))).collect()
    except Exception:
        return None
    if admission and target_cvv is not None:
        try:
            block = first_block(
                events, target_cvv=target_cvv, filter_sql=filter_sql, admission=admission, keys=None
            )
        except Exception as exc:
            raise_if_connect_lost(exc, f"checking the filter {filter_sql!r}")
            return _first_line(exc)
        if block is not None:
            events = events.where(F.col("seq") < F.lit(block))
    try:
        events.select(F.count_if(F.coalesce(F.expr(filter_sql), F.lit(False)))).collect()
    except Exception as exc:
        raise_if_connect_lost(exc, f"checking the filter {filter_sql!r}")
        return _first_line(exc)
    return None


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
