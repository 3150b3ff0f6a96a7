"""Spark jobs for recovery (rules.md DR0–DR1): census of what survives, and the survivors of a segment."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from replctl.adapters.logstore.inventory import changed, held
from replctl.adapters.spark.jobs import write_segment
from replctl.adapters.spark.schema import lub_by_scan, read_events
from replctl.adapters.spark.session import spark_failures
from replctl.core.jobs import SegmentStats
from replctl.core.recovery import FileRead

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from replctl.adapters.logstore import LogStore
    from replctl.core.model import Segment


def census(
    spark: SparkSession, store: LogStore, segments: Sequence[Segment]
) -> dict[str, dict[str, FileRead]]:
    """Per segment path, per data file read: its rows and seq range (what `core.recovery.lost_from` takes).

    Only catalogued files the store holds are read; a segment or file that is gone is absent. One scan of
    the seq column, grouped by the file each row came from (Parquet footers make it cheap). A file whose
    bytes changed at its size (`inventory.changed`) is not read: it is there with no rows, `changed`.
    """
    rotted = {s.path: changed(store, s) for s in segments}
    found: dict[str, dict[str, FileRead]] = {
        path: dict.fromkeys(sorted(names), FileRead(0, None, None, changed=True))
        for path, names in rotted.items()
        if names
    }
    readable = [p for p in (held(store, s, leave_out=rotted[s.path]) for s in segments) if p is not None]
    if not readable:
        return found
    with spark_failures("checking the stored segments (DR0)"):
        rows = (
            read_events(spark, store, readable)
            .select("seq", F.col("_metadata.file_path").alias("file"))
            .groupBy("file")
            .agg(F.count(F.lit(1)).alias("n"), F.min("seq").alias("lo"), F.max("seq").alias("hi"))
            .collect()
        )
    folders = {seg.path.rsplit("/", 1)[-1]: seg.path for seg in readable}
    for row in rows:
        folder, name = str(row["file"]).rsplit("/", 2)[-2:]
        path = folders.get(folder)
        if path is not None:
            lo, hi = row["lo"], row["hi"]
            found.setdefault(path, {})[name] = FileRead(
                int(row["n"]), None if lo is None else int(lo), None if hi is None else int(hi)
            )
    return found


def truncate_below(
    spark: SparkSession,
    store: LogStore,
    segment: Segment,
    keep_below: int,
    out_rel: str,
    *,
    keys: Sequence[str],
    identity_origins: Sequence[str] = (),
) -> SegmentStats | None:
    """Write the events of one damaged segment with seq < `keep_below` as a new segment (None when none
    survive), read from the catalogued files it still holds.

    `keys` and `identity_origins` are as for `jobs.write_segment`.
    """
    readable = held(store, segment, leave_out=changed(store, segment))
    if readable is None:
        return None
    with spark_failures("keeping the survivors of a damaged segment"):
        events = _below(spark, store, readable, keep_below)
        return write_segment(spark, store, events, out_rel, keys, identity_origins=identity_origins)


def survivors_below(
    spark: SparkSession, store: LogStore, segment: Segment, keep_below: int
) -> SegmentStats | None:
    """What `truncate_below` would keep of one damaged segment, read and written nowhere (a dry run's DR1):
    the same rows (`_below`), their count, seq range and LUB of `vt ⊔ identity` (RET4); None when none survive.
    """
    readable = held(store, segment, leave_out=changed(store, segment))
    if readable is None:
        return None
    with spark_failures("reading the survivors of a damaged segment"):
        events = _below(spark, store, readable, keep_below)
        [row] = events.agg(
            F.count(F.lit(1)).alias("count"), F.min("seq").alias("lo"), F.max("seq").alias("hi")
        ).collect()
        if not row["count"]:
            return None
        return SegmentStats(int(row["count"]), int(row["lo"]), int(row["hi"]), lub_by_scan(events))


def _below(spark: SparkSession, store: LogStore, readable: Segment, keep_below: int) -> DataFrame:
    """The survivors of a damaged segment below the first lost seq, as both the run and its dry run read them."""
    return read_events(spark, store, [readable]).where(F.col("seq") < F.lit(keep_below))
