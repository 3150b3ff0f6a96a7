"""Spark jobs that ask which location stores an event (rules.md DR0, RET1): narrow scans of the identity.

A CVV covers events its location deleted physically (EM2) or never received (a filtered connection covers by
causality), so "held elsewhere" is decided on what is stored: the identity (origin, origin_time) of M3, read
from its own two columns (Parquet reads only those) and anti-joined.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from replctl.adapters.logstore.inventory import held
from replctl.adapters.spark.schema import read_events
from replctl.adapters.spark.session import spark_failures

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from replctl.adapters.logstore import LogStore
    from replctl.core.model import Segment


def unheld(
    spark: SparkSession,
    store: LogStore,
    segments: Sequence[Segment],
    *,
    seq_from: int,
    seq_below: int | None,
    elsewhere: Sequence[Segment],
    origin: str | None = None,
) -> dict[str, list[int]]:
    """Per origin, the sorted origin times of the events of `segments` with seq in [`seq_from`,
    `seq_below`) (of `origin` only, when given) that no segment of `elsewhere` stores."""
    with spark_failures("finding the events no other location stores (DR0, RET1)"):
        cut = _identities(spark, store, segments).where(F.col("seq") >= F.lit(seq_from))
        if seq_below is not None:
            cut = cut.where(F.col("seq") < F.lit(seq_below))
        if origin is not None:
            cut = cut.where(F.col("origin") == F.lit(origin))
        stored = _identities(spark, store, elsewhere).select("origin", "origin_time")
        rows = (
            cut.select("origin", "origin_time")
            .join(stored, ["origin", "origin_time"], "left_anti")
            .distinct()
            .collect()
        )
    out: dict[str, list[int]] = {}
    for row in rows:
        out.setdefault(str(row["origin"]), []).append(int(row["origin_time"]))
    return {o: sorted(times) for o, times in sorted(out.items())}


def origin_times(
    spark: SparkSession,
    store: LogStore,
    segments: Sequence[Segment],
    origin: str,
    *,
    above: int,
    upto: int,
    seq_below: int | None = None,
) -> set[int]:
    """The origin times in (`above`, `upto`] of the events of `origin` that `segments` store (with seq <
    `seq_below`, when given)."""
    with spark_failures("reading the stored events of one origin (DR0)"):
        events = _identities(spark, store, segments)
        if seq_below is not None:
            events = events.where(F.col("seq") < F.lit(seq_below))
        rows = (
            events.where(
                (F.col("origin") == F.lit(origin))
                & (F.col("origin_time") > F.lit(above))
                & (F.col("origin_time") <= F.lit(upto))
            )
            .select("origin_time")
            .distinct()
            .collect()
        )
    return {int(row["origin_time"]) for row in rows}


def _identities(spark: SparkSession, store: LogStore, segments: Sequence[Segment]) -> DataFrame:
    """seq and identity of the events of `segments`, from the catalogued files the store still holds (a
    location a disaster hit stores only what survived)."""
    readable = [p for p in (held(store, s) for s in segments) if p is not None]
    return read_events(spark, store, readable).select("seq", "origin", "origin_time")
