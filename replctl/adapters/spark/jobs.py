"""Spark jobs: read → transform → write → report. DataFrame-only (no RDD, no SparkContext), so each job runs
unchanged on local Spark, a cluster or Spark Connect (architecture.md, "Spark").

Jobs take plain values (relative segment paths, vectors as dicts, numbers) and return the frozen dataclasses of
`results`; the services layer commits them to the catalog. A job writes only a new segment directory, never
changes an existing one, so a job that dies leaves at most an orphan directory that no catalog row points to
(garbage, collected, never read).

Statistics are gathered in the job that writes (`DataFrame.observe`), not by extra scans.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql import Observation
from pyspark.sql import functions as F

from replctl.adapters.logstore.sourcechecks import (
    damage_explains,
    is_wide,
    outside_keys_failure,
    refuse_missing,
)
from replctl.adapters.spark.admission import first_block
from replctl.adapters.spark.schema import (
    EVENT_COLUMNS,
    FILTER_DDL,
    INPUT_COLUMNS,
    extra_keys_column,
    identity_columns,
    lub_by_scan,
    lub_with_identities,
    read_checked,
    read_events,
    read_written,
    vt_entries,
)
from replctl.adapters.spark.session import raise_if_connect_lost, spark_failures
from replctl.adapters.spark.transforms import (
    CANDIDATE,
    SKIP_CAUSAL,
    SKIP_FILTER,
    classify,
    emit,
    generated_inputs,
    renumber,
    with_vt_entries,
)
from replctl.core.events import not_an_object
from replctl.core.jobs import (
    PassResult,
    PassSpec,
    RewriteResult,
    SegmentStats,
    appended_stats,
)
from replctl.errors import BadFilter, DamagedLog, InvalidInput

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from replctl.adapters.logstore import LogStore
    from replctl.adapters.spark.schema import CheckedRead
    from replctl.core.model import Segment

_INPUT_DDL = "i BIGINT, type STRING, key STRING, tags ARRAY<STRING>, payload STRING"


# --- append (EM1) -------------------------------------------------------------------------------------------


def append_events(
    spark: SparkSession,
    store: LogStore,
    location: str,
    *,
    events: list[dict[str, Any]] | None = None,
    parquet_path: str | None = None,
    generate: int | None = None,
    seed: int = 0,
    start_seq: int,
    cvv: Mapping[str, int],
    out_rel: str,
) -> SegmentStats:
    """Append new local events to `location` as one segment at `out_rel` (EM1).

    Exactly one source: `events` (objects with optional type, key, tags, payload), a `.parquet` file or
    directory (those columns only, kept in file order), or `generate` synthetic events from `seed`. The i-th
    event gets seq = origin_time = start_seq + i and vt = cvv ⊔ {location: seq}.
    """
    if sum(x is not None for x in (events, parquet_path, generate)) != 1:
        raise InvalidInput("give exactly one of events, a parquet file or --generate N")
    if start_seq < 1:
        raise InvalidInput(f"the first seq of an append is at least 1, got {start_seq}")
    with spark_failures(f"append to {location}"):
        if events is not None:
            rows = [_input_row(i, event) for i, event in enumerate(events)]
            if not rows:
                raise InvalidInput("no events to append")
            # A handful of events from the command line: one file is enough.
            inputs = spark.createDataFrame(rows, _INPUT_DDL).coalesce(1)
            count = len(rows)
        elif generate is not None:
            if generate < 1:
                raise InvalidInput(f"--generate needs a positive number, got {generate}")
            inputs, count = generated_inputs(spark, generate, seed), generate
        else:
            assert parquet_path is not None
            inputs, count = _parquet_inputs(spark, parquet_path)
        emit(inputs, location=location, start_seq=start_seq, cvv=cvv).write.mode("error").parquet(
            store.uri(out_rel)
        )
    # The statistics follow from EM1 without looking at the data.
    return appended_stats(location, start_seq, count, cvv)


def _input_row(i: int, event: Mapping[str, Any]) -> tuple[int, str | None, str | None, list[str], str | None]:
    if not isinstance(event, Mapping):
        # The words of the parsing boundary (`core.events`), which refuses it first for --event and .jsonl.
        raise not_an_object(event, f"event {i + 1}")
    unknown = sorted(set(event) - set(INPUT_COLUMNS))
    if unknown:
        raise InvalidInput(
            f"event {i + 1}: unknown field(s) {', '.join(unknown)}; an event has only "
            f"{', '.join(INPUT_COLUMNS)} (the tool assigns seq, origin, origin_time and vt, EM1)"
        )
    for name in ("type", "key"):
        if event.get(name) is not None and not isinstance(event[name], str):
            raise InvalidInput(f"event {i + 1}: {name} must be a string")
    tags = event.get("tags")
    if tags is None:
        tags = []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise InvalidInput(f"event {i + 1}: tags must be a list of strings")
    payload = event.get("payload")
    if payload is not None and not isinstance(payload, str):
        # The payload is stored as JSON text (M2); a structured value is serialised as such.
        payload = json.dumps(payload, separators=(",", ":"), sort_keys=True)
    return (i, event.get("type"), event.get("key"), list(tags), payload)


def _parquet_inputs(spark: SparkSession, path: str) -> tuple[DataFrame, int]:
    try:
        raw = (
            spark.read
            # The union of every file's columns (M2): without it Spark takes the columns of one footer (a
            # summary file's or one part file's), and a column missing there is read as null in every file.
            .option("mergeSchema", "true")
            # Every file below the folder, as `adapters.eventfile` checks them: without it, files in a
            # subfolder are left out and a folder named `key=x` becomes a column that overrides the files'.
            .option("recursiveFileLookup", "true")
            # Spark's default for the names it skips, pinned: `adapters.eventfile` checks the files this rule
            # lists, and a `--spark-conf spark.sql.files.ignoredPathSegmentRegex` must not let others in.
            .option("ignoredPathSegmentRegex", "^[._]")
            .parquet(path)
        )
        fields = {f.name: f.dataType.simpleString() for f in raw.schema.fields}
    except Exception as exc:
        raise InvalidInput(f"cannot read the event file {path}: {str(exc).splitlines()[0]}") from exc
    wrong = [
        f"{name} ({kind})" for name, kind in fields.items() if INPUT_COLUMNS.get(name.lower()) != kind.lower()
    ]
    if wrong:
        allowed = ", ".join(f"{n} {t}" for n, t in INPUT_COLUMNS.items())
        raise InvalidInput(f"{path}: unexpected or mistyped column(s) {', '.join(wrong)}; allowed: {allowed}")
    located = raw.select(
        *[
            F.col(name) if name in fields else F.lit(None).cast(kind).alias(name)
            for name, kind in INPUT_COLUMNS.items()
        ],
        F.col("_metadata.file_path").alias("_file"),
        F.col("_metadata.row_index").alias("_row"),
    )
    # File order without a sort: the files in path order, each file in row order. The per-file counts are
    # a metadata-sized job; the offsets become a literal map, so the index is row-local.
    counts = sorted((r["_file"], r["count"]) for r in located.groupBy("_file").count().collect())
    total = sum(c for _, c in counts)
    if total == 0:
        raise InvalidInput(f"{path}: no events to append")
    offsets: list[Any] = []
    running = 0
    for file, c in counts:
        offsets += [F.lit(file), F.lit(running).cast("bigint")]
        running += c
    index = F.element_at(F.create_map(*offsets), F.col("_file")) + F.col("_row")
    return located.select(index.alias("i"), *INPUT_COLUMNS), total


# --- reading --------------------------------------------------------------------------------------------------


def read_log(
    spark: SparkSession,
    store: LogStore,
    segments: Sequence[Segment],
    *,
    from_seq: int = 0,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """The stored events with seq ≥ `from_seq`, in seq order, at most `limit` (for `log show`).

    The segments' files are read whole (the sort sees every row) and their rows counted: a segment that
    holds fewer or more rows than its catalog row is damage (DamagedLog), never a shorter page (DR0).
    """
    if not segments:
        return []
    with damage_explains(store, segments), spark_failures("reading the log"):
        read = read_checked(spark, store, segments)
        events = read.events.where(F.col("seq") >= F.lit(from_seq)).orderBy("seq")
        if limit is not None:
            events = events.limit(limit)
        rows = events.collect()
        read.check()
    out: list[dict[str, Any]] = []
    for row in rows:
        event = row.asDict(recursive=True)
        event["vt"] = dict(sorted((event["vt"] or {}).items()))
        event["tags"] = list(event["tags"] or [])
        out.append(event)
    return out


# --- replication (REP1, REP2, CF1, RFC2) ----------------------------------------------------------------------


def validate_filter(spark: SparkSession, filter_sql: str) -> None:
    """Raise BadFilter unless `filter_sql` is a boolean Spark SQL expression over the filter columns.

    Analysis only (an empty relation), no job is run.
    """
    try:
        kind = (
            spark.createDataFrame([], FILTER_DDL).select(F.expr(filter_sql).alias("f")).schema["f"].dataType
        )
    except Exception as exc:
        # On Spark Connect the analysis is a call to the server: a server that is gone says nothing about the
        # filter, and must not get the connection marked failed for it (issue 14).
        raise_if_connect_lost(exc, f"checking the filter {filter_sql!r}")
        raise BadFilter(f"bad filter {filter_sql!r}: {str(exc).strip().splitlines()[0]}") from exc
    if kind.simpleString() != "boolean":
        raise BadFilter(f"bad filter {filter_sql!r}: it is {kind.simpleString()}, not boolean")


def replicate_pass(spark: SparkSession, store: LogStore, spec: PassSpec) -> PassResult:
    """One replication pass X→Y over X's events with seq > progress, in seq order (REP1).

    Each event is (1) skipped if CVV-Y covers it, asked through its identity (CF1, RET4), (2) skipped if the
    filter rejects it (NULL rejects), (3) with an admission projection P, blocks the pass if
    (vt ⊔ identity)|P ≰ CVV-Y ⊔ the vts written earlier in the pass (RFC2), (4) else written at Y with a new
    seq (see `transforms.renumber`). The new progress is the seq of the last event decided before any block
    (REP2). Re-running from an older progress meets only events that CF1 skips, because CVV-Y then covers
    them (REP3).

    Steps (1) compares with CVV-Y as it was when the pass started, not with CVV-Y grown by this pass's writes:
    an event covered only by events written earlier in the pass would causally precede one of them while
    being stored after it at X, which EM3 (I1) rules out, so both readings decide alike on a valid log.
    The written segment's LUB is that of `vt ⊔ identity` (RET4): the vt entries over `spec.source_keys`,
    and for the origins in `spec.identity_origins` (retired ids, whose vts may lack their own entry) the
    largest origin_time.

    One job reads, classifies, writes and counts (`observe`); with a non-empty P, one aggregation before it
    finds the blocking event (`admission.first_block`, which asks the filter of no event past the block). A
    source vt holding a key outside `spec.source_keys` means the source's catalog and store disagree: the
    pass then writes nothing and raises EnvironmentFailure.
    """
    if not spec.source_segments:
        return PassResult(0, 0, 0, 0, None, spec.progress, None)
    with damage_explains(store, spec.source_segments), spark_failures("replication pass"):
        if spec.filter_sql is not None:
            validate_filter(spark, spec.filter_sql)
        keys = sorted(set(spec.source_keys))
        origins = sorted(set(spec.identity_origins))
        wide = is_wide(keys)

        # Before any job reads the source, as `read_checked` would: a missing file is damage (DR0).
        refuse_missing(store, spec.source_segments)
        blocked_at = None
        if spec.admission:
            after = read_events(spark, store, spec.source_segments).where(F.col("seq") > F.lit(spec.progress))
            # It runs before the write because the write must stop at the block.
            blocked_at = first_block(
                after if wide else with_vt_entries(after, keys),
                target_cvv=spec.target_cvv,
                filter_sql=spec.filter_sql,
                admission=spec.admission,
                keys=None if wide else keys,
            )
        # The rows this pass examines: past the progress, before the block.
        examined_row = F.col("seq") > F.lit(spec.progress)
        if blocked_at is not None:
            examined_row = examined_row & (F.col("seq") < F.lit(blocked_at))

        def decided(read: DataFrame) -> DataFrame:
            # Every row read gets its columns, but only an examined row a decision: the filter is evaluated
            # only under the condition (CASE WHEN), so a row at or below the progress is never asked again.
            classified = classify(
                read if wide else with_vt_entries(read, keys),
                target_cvv=spec.target_cvv,
                filter_sql=spec.filter_sql,
            )
            return classified.withColumn("decision", F.when(examined_row, F.col("decision")))

        # One observation over every row read (DR0, issue 19) and the pass's statistics as conditional
        # aggregates: the counts, the scan end (REP2), and the seq range and vt LUB of the written rows (the
        # write renumbers by a shift, so its range follows from theirs on the driver).
        written_row = F.col("decision") == CANDIDATE
        # Wide vectors: the LUB comes from one aggregation over the new segment instead (see is_wide).
        lub_aggregates = (
            []
            if wide
            else [
                *[F.max(F.when(written_row, F.col(f"_vt{i}"))).alias(f"lub{i}") for i in range(len(keys))],
                *identity_columns(origins, where=written_row),
                F.coalesce(F.max(F.when(examined_row, F.col("_vt_other"))), F.lit(0)).alias("extra_keys"),
            ]
        )
        read = read_checked(
            spark,
            store,
            spec.source_segments,
            prepare=decided,
            observed=[
                *_decision_counts(spec, blocked_at, examined_row),
                F.min(F.when(written_row, F.col("seq"))).alias("lo"),
                F.max(F.when(written_row, F.col("seq"))).alias("hi"),
                *lub_aggregates,
            ],
        )
        scan = read.observation
        examined = read.events
        written = renumber(examined.where(written_row), progress=spec.progress, target_seq=spec.target_seq)
        written.select(*EVENT_COLUMNS).write.mode("error").parquet(store.uri(spec.out_rel))
        try:
            # DR0: a pass never writes, nor advances progress or CVV over, a partial read of its source.
            read.check()
        except DamagedLog:
            if store.is_local:
                store.remove(spec.out_rel)
            raise
        stats = _with_derived_counts(scan.get)
        if not stats["written"]:
            lub: dict[str, int] = {}
        elif wide:
            lub = lub_by_scan(read_written(spark, store, spec.out_rel))
        else:
            lub = lub_with_identities(stats, keys, origins)
        outside_keys = bool(set(lub) - set(keys) - set(origins)) if wide else bool(stats["extra_keys"])
        if outside_keys:
            if store.is_local:
                store.remove(spec.out_rel)
            raise outside_keys_failure()
        segment = _written_segment(store, spec, stats, lub)
    count = int(stats["examined"] or 0)
    return PassResult(
        examined=count,
        written=segment.count if segment else 0,
        skipped_causal=int(stats["causal"] or 0),
        skipped_filter=int(stats["filtered"] or 0),
        blocked_at=blocked_at,
        progress=int(stats["last"]) if count else spec.progress,
        segment=segment,
    )


def _decision_counts(spec: PassSpec, blocked_at: int | None, examined_row: Column) -> list[Column]:
    """The observed aggregates behind the pass's counts and its new progress (REP2), as few as are exact.

    An observation updates each of its aggregates row by row outside Spark's generated code, so every one costs
    the pass a measurable share (README, "Performance"); those that follow from others are left to
    `_with_derived_counts`: the written count (examined = causal + filtered + written: `classify` gives an
    examined row exactly one decision, its CASE ending in CANDIDATE), the filtered count
    without a filter (0), and without a block the last examined seq is the largest seq read when any row was
    examined (the examined rows are then those above the progress).
    """
    last = F.col("seq") if blocked_at is None else F.when(examined_row, F.col("seq"))
    return [
        F.count_if(examined_row).alias("examined"),
        F.count_if(F.col("decision") == SKIP_CAUSAL).alias("causal"),
        *(
            [F.count_if(F.col("decision") == SKIP_FILTER).alias("filtered")]
            if spec.filter_sql is not None
            else []
        ),
        F.max(last).alias("last"),
    ]


def _with_derived_counts(observed: Mapping[str, Any]) -> dict[str, Any]:
    """The observation of a pass with the counts `_decision_counts` leaves out put back."""
    stats = dict(observed)
    examined = int(stats["examined"] or 0)
    stats["causal"] = int(stats["causal"] or 0)
    stats["filtered"] = int(stats.get("filtered") or 0)
    stats["written"] = examined - stats["causal"] - stats["filtered"]
    if not examined:
        stats["last"] = None
    return stats


def _written_segment(
    store: LogStore, spec: PassSpec, stats: Mapping[str, Any], lub: dict[str, int]
) -> SegmentStats | None:
    """The statistics of the pass's new segment from its observation; no segment is left when it is empty."""
    if not stats["written"]:
        if store.is_local:
            store.remove(spec.out_rel)
        return None
    shift = spec.target_seq - spec.progress  # transforms.renumber
    return SegmentStats(int(stats["written"]), int(stats["lo"]) + shift, int(stats["hi"]) + shift, lub)


# --- maintenance -----------------------------------------------------------------------------------------------


def compact(
    spark: SparkSession,
    store: LogStore,
    segments: Sequence[Segment],
    out_rel: str,
    *,
    keys: Sequence[str] | None = None,
    identity_origins: Sequence[str] = (),
) -> SegmentStats:
    """Merge (small) segments into one segment at `out_rel` with the same rows, sorted by seq.

    `keys` (the keys the log's vts may hold) lets the LUB be gathered in the write; without them a small pass
    finds them. `identity_origins`: see `write_segment`. A read that got other rows than the segments' rows
    hold leaves no merged segment and raises DamagedLog (DR0).
    """
    if not segments:
        raise InvalidInput("no segments to compact")
    with damage_explains(store, segments), spark_failures("compaction"):
        keys = keys if keys is not None else _vt_keys(read_events(spark, store, segments))
        read = read_checked(spark, store, segments)
        merged = read.events.coalesce(1).sortWithinPartitions("seq")
        stats = write_segment(spark, store, merged, out_rel, keys, identity_origins=identity_origins)
        _check_or_discard(read, store, out_rel)
    if stats is None:
        raise InvalidInput("the segments to compact hold no events")
    return stats


def rewrite_from(
    spark: SparkSession,
    store: LogStore,
    segment: Segment,
    keep_from_seq: int,
    out_rel: str,
    *,
    keys: Sequence[str] | None = None,
    identity_origins: Sequence[str] = (),
) -> RewriteResult:
    """Rewrite the segment that straddles a physical-deletion cut (DEL1): keep the events with seq ≥ `keep_from_seq`.

    Reports the kept part (None when nothing remains, and then no segment is left behind) and the dropped part,
    whose LUB of `vt ⊔ identity` is what DEL2 merges into the DVV (RET4); both are gathered in the one job that
    writes. `identity_origins`: see `write_segment`.
    """
    with damage_explains(store, [segment]), spark_failures("rewriting a segment"):
        read = read_checked(spark, store, [segment])
        events = read.events
        keys = sorted(set(keys)) if keys is not None else _vt_keys(read_events(spark, store, [segment]))
        origins = sorted(set(identity_origins))
        wide = is_wide(keys)
        cut = F.col("seq") < F.lit(keep_from_seq)
        dropped_obs = Observation("dropped")
        observed = events.observe(
            dropped_obs,
            F.count_if(cut).alias("count"),
            F.min(F.when(cut, F.col("seq"))).alias("lo"),
            F.max(F.when(cut, F.col("seq"))).alias("hi"),
            # Wide vectors: the dropped part's LUB is one aggregation of its own below (see is_wide).
            *(
                []
                if wide
                else [
                    *[F.max(F.when(cut, entry)).alias(f"lub{i}") for i, entry in enumerate(vt_entries(keys))],
                    *identity_columns(origins, where=cut),
                    extra_keys_column(keys, where=cut),
                ]
            ),
        )
        kept = write_segment(spark, store, observed.where(~cut), out_rel, keys, identity_origins=origins)
        # DEL2: the DVV merges what the read dropped; a partial read must not decide it (DR0).
        _check_or_discard(read, store, out_rel)
        d = dropped_obs.get
        dropped: SegmentStats | None = None
        if d["count"]:
            exact = wide or d["extra_keys"]
            lub = lub_by_scan(events.where(cut)) if exact else lub_with_identities(d, keys, origins)
            dropped = SegmentStats(int(d["count"]), int(d["lo"]), int(d["hi"]), lub)
    return RewriteResult(kept=kept, dropped=dropped)


# --- shared steps ------------------------------------------------------------------------------------------------


def write_segment(
    spark: SparkSession,
    store: LogStore,
    events: DataFrame,
    out_rel: str,
    keys: Sequence[str],
    *,
    entries_ready: bool = False,
    identity_origins: Sequence[str] = (),
) -> SegmentStats | None:
    """Write `events` as a new segment and return its statistics, gathered during the write.

    The LUB is that of `vt ⊔ identity` (RET4): max(vt[k]) per k in `keys` (from `with_vt_entries`, already
    present when `entries_ready`), and max(origin_time) per origin in `identity_origins` (the retired ids,
    whose vts may have lost their own entry to a pruning); should a vt hold a key outside `keys`, the LUB is
    recomputed from the new segment, so the statistics are right even when `keys` is incomplete. An empty
    result leaves no segment (on a remote store the empty directory is an orphan that no catalog row names,
    and is collected).
    """
    keys = sorted(set(keys))
    origins = sorted(set(identity_origins))
    wide = is_wide(keys)
    if not entries_ready and not wide:
        events = with_vt_entries(events, keys)
    wrote = Observation("written")
    observed = events.observe(
        wrote,
        F.count(F.lit(1)).alias("count"),
        F.min("seq").alias("lo"),
        F.max("seq").alias("hi"),
        # Wide vectors: no per-key aggregates; the LUB is taken from the new segment below (see is_wide).
        *(
            []
            if wide
            else [
                *[F.max(f"_vt{i}").alias(f"lub{i}") for i in range(len(keys))],
                *identity_columns(origins),
                F.coalesce(F.max("_vt_other"), F.lit(0)).alias("extra_keys"),
            ]
        ),
    )
    observed.select(*EVENT_COLUMNS).write.mode("error").parquet(store.uri(out_rel))
    stats = wrote.get
    if not stats["count"]:
        if store.is_local:
            store.remove(out_rel)
        return None
    if wide or stats["extra_keys"]:
        lub = lub_by_scan(read_written(spark, store, out_rel))
    else:
        lub = lub_with_identities(stats, keys, origins)
    return SegmentStats(int(stats["count"]), int(stats["lo"]), int(stats["hi"]), lub)


def _check_or_discard(read: CheckedRead, store: LogStore, out_rel: str) -> None:
    """`CheckedRead.check` after a write from the read: on damage the written segment goes (never committed)."""
    try:
        read.check()
    except DamagedLog:
        if store.is_local:
            store.remove(out_rel)
        raise


def _vt_keys(events: DataFrame) -> list[str]:
    return sorted(r[0] for r in events.select(F.explode(F.map_keys("vt"))).distinct().collect())
