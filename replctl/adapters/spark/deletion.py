"""The DEL3 check as one Spark job: for each target, the first event it may still need (rules.md DEL3/DEL4)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from replctl.adapters.logstore.sourcechecks import damage_explains
from replctl.adapters.spark.schema import read_checked
from replctl.adapters.spark.session import spark_failures
from replctl.adapters.spark.transforms import covered_by_identity

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from replctl.adapters.logstore import LogStore
    from replctl.core.model import Segment


def first_needed(
    spark: SparkSession,
    store: LogStore,
    segments: Sequence[Segment],
    *,
    upto: int,
    targets: Mapping[str, tuple[int, Mapping[str, int]]],
) -> dict[str, int | None]:
    """For each target i (progress(i,X), CVV-i): the smallest seq ≤ `upto` with seq > progress that CVV-i does
    not cover.

    An event with seq ≤ progress(i,X) or covered by CVV-i may go (DEL3); the first one that may not bounds the
    deletable prefix. Coverage is asked through the identity, `CVV-i[origin] ≥ origin_time` (RET4), so a
    location added after a clock pruning still holds back the events of the pruned origin it lacks. All
    targets are answered by one scan of the seq and identity columns, whose row count is compared with the
    segments' rows: no deletion is decided from a partial read (DR0, DamagedLog).
    """
    if not segments or not targets:
        return dict.fromkeys(targets)
    names = sorted(targets)
    with damage_explains(store, segments), spark_failures("checking what targets still need (DEL3)"):
        read = read_checked(spark, store, segments)
        events = read.events.select("seq", "origin", "origin_time").where(F.col("seq") <= F.lit(upto))
        aggregates = []
        for i, name in enumerate(names):
            progress, cvv = targets[name]
            needed = (F.col("seq") > F.lit(progress)) & ~covered_by_identity(cvv)
            aggregates.append(F.min(F.when(needed, F.col("seq"))).alias(f"t{i}"))
        row = events.agg(*aggregates).first()
        read.check()
    return {
        name: (None if row is None or row[f"t{i}"] is None else int(row[f"t{i}"]))
        for i, name in enumerate(names)
    }


def last_seq_emitted_before(
    spark: SparkSession, store: LogStore, segments: Sequence[Segment], cutoff: datetime
) -> int | None:
    """The last seq of the longest prefix whose events were all emitted before `cutoff`.

    The wall clock only chooses the cut (a retention policy); it never orders anything. The prefix stops at the
    first newer event, so a replicated old event stored after newer ones does not drag newer ones along.
    """
    if not segments:
        return None
    with damage_explains(store, segments), spark_failures("choosing the cut for --older-than"):
        read = read_checked(spark, store, segments)
        events = read.events.select("seq", "emitted_at")
        first_new = events.where(F.col("emitted_at") >= F.lit(cutoff)).agg(F.min("seq")).first()
        read.check()
        limit = None if first_new is None else first_new[0]
        old = events if limit is None else events.where(F.col("seq") < F.lit(limit))
        row = old.agg(F.max("seq")).first()
    return None if row is None or row[0] is None else int(row[0])


def dropped_lub(spark: SparkSession, store: LogStore, segment: Segment, *, upto: int) -> dict[str, int]:
    """DEL2 for a dry run: the LUB of `vt ⊔ identity` (RET4) of the events seq ≤ `upto` of one segment, i.e.
    what the run's rewrite of the straddling segment drops and merges into the DVV."""
    from replctl.adapters.spark.schema import lub_by_scan

    with damage_explains(store, [segment]), spark_failures("the deletion plan"):
        read = read_checked(spark, store, [segment])
        dropped = lub_by_scan(read.events.where(F.col("seq") <= upto))
        read.check()
    return dropped
