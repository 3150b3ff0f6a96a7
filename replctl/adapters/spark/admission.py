"""RFC2's admission block (REP1 (3)) found without asking the connection's filter past it.

REP1 decides a pass's events in seq order and stops at the first one the admission check blocks: the events
after it are not examined, so the filter is never asked about them. A filter that raises on some event (an
allowed cast under ANSI rules) fails the pass only when the pass examines that event; one behind the block
must not, in the run as in its dry run (`filtercheck`).

The block is the first event past the progress that CF1 does not skip, that the filter admits and that the
admission check refuses. One aggregation finds it, asking the filter only of the events CF1 keeps and the
check refuses (a CASE evaluates its branch only where its condition holds). Should the filter raise there, the
seq range is halved until either a block shows up below the failing event (the pass stops before it) or the
failing event is the first of them the pass examines (the pass fails on it, and the error is raised).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from replctl.adapters.spark.transforms import admission_refused, covered_by_identity

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


def first_block(
    events: DataFrame,
    *,
    target_cvv: Mapping[str, int],
    filter_sql: str | None,
    admission: Sequence[str],
    keys: Sequence[str] | None,
) -> int | None:
    """The seq of the first of `events` (a pass's, past its progress) that REP1 (3) blocks, or None.

    REP1 (3) compares vt|P with CVV-Y as it grows during the pass, but its P-part never grows: an event is
    written only if vt|P ≤ CVV-Y|P, so merging its vt leaves CVV-Y|P unchanged, and by induction CVV-Y|P is
    the value at the start of the pass for every event of it. So no prefix maximum over earlier writes is
    needed: the block is the smallest seq CF1 keeps, the filter admits and vt|P ≰ CVV-Y|P.
    `keys` are those of `with_vt_entries` when the events carry them (None: the vt map is read). Raises
    Spark's error when the filter fails on an event the check refuses and the pass reaches (no block before it).
    """
    refused = ~covered_by_identity(target_cvv) & admission_refused(admission, target_cvv, keys)
    if filter_sql is None:
        return _first(events, F.when(refused, F.col("seq")))
    admits = F.coalesce(F.expr(filter_sql), F.lit(False))
    blocked = F.when(refused, F.when(admits, F.col("seq")))
    try:
        return _first(events, blocked)
    except Exception as failure:
        if not _raised_by_spark(failure):
            raise
        return _search(events, refused, blocked, failure)


def _search(events: DataFrame, refused: Column, blocked: Column, failure: Exception) -> int | None:
    """Halve the seq range of the refused events until a block lies below every event the filter fails on,
    or the first refused event the pass reaches fails it (then raised, as the pass's failure)."""
    try:
        # Without the filter: when even this fails, the environment is at fault, not the filter.
        [row] = events.agg(
            F.min(F.when(refused, F.col("seq"))).alias("lo"), F.max(F.when(refused, F.col("seq"))).alias("hi")
        ).collect()
    except Exception:
        raise failure from None
    if row["lo"] is None:
        raise failure
    lo, hi = int(row["lo"]), int(row["hi"])
    # Invariant: the filter fails on some refused event in [lo, hi] and admits none of them below lo.
    while lo < hi:
        mid = (lo + hi) // 2
        try:
            found = _first(events.where(F.col("seq").between(lo, mid)), blocked)
        except Exception as lower:
            if not _raised_by_spark(lower):
                raise
            failure, hi = lower, mid
            continue
        if found is not None:
            return found
        lo = mid + 1
    raise failure


def _first(events: DataFrame, blocked: Column) -> int | None:
    first = events.agg(F.min(blocked).alias("blocked")).first()
    return None if first is None or first["blocked"] is None else int(first["blocked"])


def _raised_by_spark(error: Exception) -> bool:
    # A Spark job's own error (a filter raising under ANSI rules among them); replctl's errors and bugs pass.
    return type(error).__module__.startswith(("pyspark", "py4j"))
