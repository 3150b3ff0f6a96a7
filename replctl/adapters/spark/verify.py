"""`log verify`: the invariants of rules.md §9 that need the stored events (I1, I2, I3, I7), plus the
agreement of each segment with its catalog row. Every check is an aggregation or a partitioned window, never a
pairwise (O(n²)) comparison; each reports the first violating seq.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from replctl.adapters.logstore.inventory import held
from replctl.adapters.logstore.sourcechecks import is_wide
from replctl.adapters.spark.schema import (
    covering_vector,
    extra_keys_column,
    lub_by_scan,
    lub_columns,
    read_events,
    vector_literal,
)
from replctl.adapters.spark.session import spark_failures
from replctl.adapters.spark.transforms import covered_by
from replctl.core.jobs import InvariantViolation
from replctl.core.model import Segment
from replctl.core.vectortime import VectorTime
from replctl.localfiles import file_digest

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from replctl.adapters.logstore import LogStore


def verify_log(
    spark: SparkSession,
    store: LogStore,
    segment_paths: Sequence[str],
    *,
    seq: int,
    cvv: Mapping[str, int],
    dvv: Mapping[str, int],
    baseline: Mapping[str, int],
    segments_meta: Sequence[Segment] | None = None,
    described_by: str = "the catalog",
) -> list[InvariantViolation]:
    """Check one location's stored log against its catalog state; an empty list means it is consistent.

    `segment_paths` are the log's segments in catalog (seq) order; `seq` is the last seq the catalog assigned;
    `segments_meta` (optional) are the catalog's segment rows, whose seq range, count and vt LUB are compared
    with the data. `described_by` names where those rows come from in messages (a backup's manifest).
    """
    violations: list[InvariantViolation] = []
    by_path = {m.path: m for m in segments_meta or ()}
    # A path without a row is read as its folder (a row made before rows named their files reads so too).
    rows = [by_path.get(p) or Segment(0, "", p, 0, 0, 0) for p in segment_paths]
    present = list(rows)
    unread: set[str] = set()  # segments a file of which is not read: their count is not compared
    if store.is_local:
        reported, present = set(), []
        for row in rows:
            found, rotted = (
                ([InvariantViolation("SEG", f"segment {row.path} is missing from the store")], set())
                if not store.exists(row.path)
                else _check_files(store, row)
            )
            if found:
                reported.add(row.path)
            if rotted:
                unread.add(row.path)
            violations += found
            # A file truncated or overwritten is reported as damage (DR0), as a missing one is; `held` leaves
            # out one that is no Parquet file any more, where Spark would fail on its bytes instead of the
            # report, and so is one whose bytes differ from its digest (reported above): it may not decode.
            kept_row = held(store, row, leave_out=rotted)
            if kept_row is not None:
                present.append(kept_row)
        # A segment `held` left out that nothing above reported (a row older than revision 0005 records no
        # digest, one older than 0004 no files, so a zeroed or removed data file went unnoticed): it holds no
        # events, where `log verify` said ok.
        kept = {r.path for r in present}
        violations += [
            _holds_none(r, described_by) for r in rows if r.path not in kept | reported and r.count
        ]
    expected = VectorTime(dvv).merge(baseline)
    if not present:
        violations += _check_cvv(cvv, expected, first_beyond=None)
        return violations
    with spark_failures("verifying the log"):
        events = read_events(spark, store, present).withColumn(
            "segment", F.regexp_extract(F.col("_metadata.file_path"), r"([^/]+)/[^/]*$", 1)
        )
        per_segment = _segment_summaries(
            events, keys=sorted(set(cvv) | set(dvv) | set(baseline)), cvv=cvv, seq=seq
        )
        stored_lub = _stored_lub(events, per_segment)
        violations += _check_segments(
            [r.path for r in present], per_segment, segments_meta, seq, described_by, unread=unread
        )
        violations += _check_cvv(
            cvv, expected.merge(stored_lub), first_beyond=_first(per_segment, "beyond_cvv")
        )
        violations += _check_duplicates(events)
        violations += _check_storage_order(events)
    return sorted(violations, key=lambda v: (v.code, v.seq if v.seq is not None else -1))


def _check_files(store: LogStore, row: Segment) -> tuple[list[InvariantViolation], set[str]]:
    """Each data file the row names against the store: there, of its size, of its SHA-256 (issue 19); and
    the names of those of their size whose digest differs, which are not to be read.

    `log verify` reads the bytes anyway, so the digest is checked here, and only here, in copies and in
    recovery's census.
    """
    if row.files is None:
        return [], set()
    stored = store.segment_files(row.path) or {}
    out, rotted = [], set()
    for f in row.files:
        where = f"{row.path}/{f.name}"
        if f.name not in stored:
            problem = "is missing from the store"
        elif stored[f.name] != f.size:
            problem = f"holds {stored[f.name]} bytes, its catalog row says {f.size}"
        elif f.sha256 is not None and file_digest(store.local_path(where)) != f.sha256:
            problem = "differs from its catalog row's SHA-256"
            rotted.add(f.name)
        else:
            continue
        out.append(InvariantViolation("SEG", f"file {where} {problem}", seq=f.seq_lo or row.seq_lo))
    return out, rotted


def _segment_summaries(
    events: DataFrame, *, keys: list[str], cvv: Mapping[str, int], seq: int
) -> dict[str, dict[str, Any]]:
    """One aggregation: per segment its count, seq range, vt LUB over `keys`, and the first offending seqs.

    Wide vectors (`transforms.is_wide`) get their LUBs from a second aggregation over the exploded entries
    instead of one aggregate per key, which would make the stage's code too large for the JVM to compile.
    """
    wide = is_wide(keys)
    rows = (
        events.groupBy("segment")
        .agg(
            F.count(F.lit(1)).alias("count"),
            F.min("seq").alias("lo"),
            F.max("seq").alias("hi"),
            F.min(F.when(~covered_by(covering_vector(), vector_literal(cvv)), F.col("seq"))).alias(
                "beyond_cvv"
            ),
            F.min(F.when(F.col("seq") > F.lit(seq), F.col("seq"))).alias("beyond_seq"),
            *([] if wide else [extra_keys_column(keys), *lub_columns(keys)]),
        )
        .collect()
    )
    wide_lubs = _wide_lubs(events) if wide else {}
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        summary = row.asDict()
        segment = str(row["segment"])
        if wide:
            summary["lub"] = wide_lubs.get(segment, {})
            summary["extra_keys"] = len(set(summary["lub"]) - set(keys))
        else:
            summary["lub"] = {k: int(summary[f"lub{i}"]) for i, k in enumerate(keys) if summary[f"lub{i}"]}
        out[segment] = summary
    return out


def _wide_lubs(events: DataFrame) -> dict[str, dict[str, int]]:
    """Per segment, the LUB of `vt ⊔ identity` (VT4, RET4) over every key: one aggregation of the exploded
    entries."""
    rows = (
        events.select("segment", F.explode(covering_vector()))
        .groupBy("segment", "key")
        .agg(F.max("value").alias("v"))
    )
    lubs: dict[str, dict[str, int]] = {}
    for r in rows.collect():
        if r["v"]:
            lubs.setdefault(str(r["segment"]), {})[str(r["key"])] = int(r["v"])
    return lubs


def _stored_lub(events: DataFrame, per_segment: Mapping[str, Mapping[str, Any]]) -> VectorTime:
    if any(s["extra_keys"] for s in per_segment.values()):
        # A vt with a key outside every vector of the catalog: take the exact LUB (it breaks I3 anyway).
        return VectorTime(lub_by_scan(events))
    return VectorTime().merge(*[s["lub"] for s in per_segment.values()])


def _first(per_segment: Mapping[str, Mapping[str, Any]], column: str) -> int | None:
    found = [int(s[column]) for s in per_segment.values() if s[column] is not None]
    return min(found) if found else None


def _holds_none(row: Segment, described_by: str) -> InvariantViolation:
    """SEG: a segment of which no event reads, though its row counts some."""
    return InvariantViolation(
        "SEG", f"segment {row.path} holds no events, {described_by} says {row.count}", seq=row.seq_lo
    )


def _check_segments(
    paths: Sequence[str],
    per_segment: Mapping[str, Mapping[str, Any]],
    meta: Sequence[Segment] | None,
    seq: int,
    described_by: str,
    *,
    unread: Collection[str] = (),
) -> list[InvariantViolation]:
    """I7 across segments (ranges disjoint and increasing in catalog order, none beyond the location's seq)
    and each segment against its catalog row, but for those of `unread` (a file of theirs, reported
    already, was not read: their count and LUB fall short of the row's by it)."""
    out: list[InvariantViolation] = []
    by_path = {m.path: m for m in meta or ()}
    previous_hi: int | None = None
    for path in paths:
        summary = per_segment.get(path.rsplit("/", 1)[-1])
        row = None if path in unread else by_path.get(path)
        if summary is None:
            if row is not None and row.count:
                out.append(_holds_none(row, described_by))
            continue
        lo, hi, count = int(summary["lo"]), int(summary["hi"]), int(summary["count"])
        if previous_hi is not None and lo <= previous_hi:
            out.append(
                InvariantViolation(
                    "I7", f"seq not increasing: segment {path} starts at {lo} ≤ {previous_hi}", seq=lo
                )
            )
        previous_hi = hi if previous_hi is None else max(previous_hi, hi)
        if row is not None and (row.seq_lo, row.seq_hi, row.count) != (lo, hi, count):
            out.append(
                InvariantViolation(
                    "SEG",
                    f"segment {path} holds seq {lo}..{hi} ({count} events); {described_by} says "
                    f"{row.seq_lo}..{row.seq_hi} ({row.count} events)",
                    seq=min(lo, row.seq_lo),
                )
            )
        if (
            row is not None
            and VectorTime(row.vt_lub) != VectorTime(summary["lub"])
            and not summary["extra_keys"]
        ):
            out.append(
                InvariantViolation(
                    "SEG",
                    f"segment {path}: the LUB of its vts is {VectorTime(summary['lub'])}, {described_by} says "
                    f"{VectorTime(row.vt_lub)}",
                    seq=lo,
                )
            )
    beyond = _first(per_segment, "beyond_seq")
    if beyond is not None:
        out.append(
            InvariantViolation("I7", f"seq {beyond} is beyond the location's last seq {seq}", seq=beyond)
        )
    return out


def _check_cvv(
    cvv: Mapping[str, int], expected: VectorTime, *, first_beyond: int | None
) -> list[InvariantViolation]:
    """I3: CVV = LUB(stored `vt ⊔ identity`) ⊔ DVV ⊔ baselines (deleted ones are in the DVV, DEL2; RET4)."""
    actual = VectorTime(cvv)
    if actual == expected:
        return []
    keys = sorted(set(actual) | set(expected))
    diff = {k: {"cvv": actual[k], "expected": expected[k]} for k in keys if actual[k] != expected[k]}
    return [
        InvariantViolation(
            "I3",
            f"CVV {actual} ≠ LUB of the stored vts ⊔ DVV ⊔ baselines = {expected}",
            seq=first_beyond,
            details={"differences": diff},
        )
    ]


def _check_duplicates(events: DataFrame) -> list[InvariantViolation]:
    """I2 (identity (origin, origin_time), M3) and I7's uniqueness of seq, each as one aggregation."""
    out: list[InvariantViolation] = []
    dup_identity = (
        events.groupBy("origin", "origin_time")
        .agg(F.count(F.lit(1)).alias("n"), F.sort_array(F.collect_list("seq")).alias("seqs"))
        .where(F.col("n") > 1)
        .agg(F.min(F.struct(F.col("seqs")[1].alias("seq"), "origin", "origin_time")).alias("first"))
        .first()
    )
    if dup_identity is not None and dup_identity["first"] is not None:
        first = dup_identity["first"]
        out.append(
            InvariantViolation(
                "I2",
                f"event {first['origin']}:{first['origin_time']} is stored twice (again at seq {first['seq']})",
                seq=int(first["seq"]),
            )
        )
    dup_seq = (
        events.groupBy("seq")
        .agg(F.count(F.lit(1)).alias("n"))
        .where(F.col("n") > 1)
        .agg(F.min("seq"))
        .first()
    )
    if dup_seq is not None and dup_seq[0] is not None:
        out.append(InvariantViolation("I7", f"seq {dup_seq[0]} is assigned twice", seq=int(dup_seq[0])))
    return out


def _check_storage_order(events: DataFrame) -> list[InvariantViolation]:
    """I1 (EM3): no event is stored after an event that causally follows it.

    For an event e of origin o at time t, an earlier-stored event f with vt(f)[o] ≥ t has seen e (o's events
    form a causal chain, EM1), so e → f while f precedes e in storage. Exploding vt entries and partitioning by
    the entry's key compares each event of origin o with the running max of vt[o] over the events stored before
    it. The event's own entry is taken as its origin_time, the identity the check is about.
    """
    entries = events.select(
        "seq",
        "origin",
        "origin_time",
        F.explode(
            F.map_concat(
                F.map_filter("vt", lambda k, _v: k != F.col("origin")),
                F.create_map(F.col("origin"), F.col("origin_time")),
            )
        ).alias("k", "v"),
    )
    earlier = Window.partitionBy("k").orderBy("seq").rowsBetween(Window.unboundedPreceding, -1)
    first = (
        entries.withColumn("seen", F.max("v").over(earlier))
        .where((F.col("k") == F.col("origin")) & (F.col("origin_time") <= F.col("seen")))
        .agg(F.min(F.struct("seq", "origin", "origin_time")).alias("first"))
        .first()
    )
    if first is None or first["first"] is None:
        return []
    e = first["first"]
    return [
        InvariantViolation(
            "I1",
            f"event {e['origin']}:{e['origin_time']} at seq {e['seq']} is stored after an event that causally "
            "follows it (EM3)",
            seq=int(e["seq"]),
        )
    ]
