"""The stored event schema (rules.md M2/M3) and the column helpers every job shares."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, Observation
from pyspark.sql import functions as F

from replctl.adapters.logstore.sourcechecks import refuse_missing
from replctl.adapters.spark.paths import literal_path
from replctl.errors import DamagedLog

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from replctl.adapters.logstore import LogStore
    from replctl.core.model import Segment

# M2; identity is (origin, origin_time) in their own columns (M3), not only inside vt.
EVENT_COLUMNS = ("seq", "origin", "origin_time", "vt", "type", "key", "tags", "payload", "emitted_at")
EVENT_DDL = (
    "seq BIGINT, origin STRING, origin_time BIGINT, vt MAP<STRING, BIGINT>, type STRING, key STRING, "
    "tags ARRAY<STRING>, payload STRING, emitted_at TIMESTAMP"
)
# What an appended event may carry (cli.md); the tool assigns the rest (EM1).
INPUT_COLUMNS = {"type": "string", "key": "string", "tags": "array<string>", "payload": "string"}
# What a connection filter may read (cli.md).
FILTER_DDL = "origin STRING, origin_time BIGINT, type STRING, key STRING, tags ARRAY<STRING>, payload STRING"


def vector_literal(vector: Mapping[str, int]) -> Column:
    """A vector time as a `map<string,bigint>` literal, zero entries dropped (VT1), keys sorted."""
    entries = sorted((k, int(v)) for k, v in vector.items() if int(v))
    if not entries:
        return F.expr("cast(map() as map<string,bigint>)")
    return stored_vector({key: F.lit(value).cast("bigint") for key, value in entries})


def stored_vector(entries: Mapping[str, Column]) -> Column:
    """A `vt` map built from one column per key, its keys in sorted order: the order every vt is written in.

    Sorted keys let `vt_entries` read a vt's values by position instead of searching its keys (see there).
    """
    parts: list[Column] = []
    for key in sorted(entries):
        parts += [F.lit(key), entries[key]]
    return F.create_map(*parts)


def vt_entry(key: str, vt: str = "vt") -> Column:
    """vt[key] with a missing key read as 0 (VT1)."""
    return F.coalesce(F.element_at(F.col(vt), F.lit(key)), F.lit(0).cast("bigint"))


def vt_entries(keys: Sequence[str], vt: str = "vt") -> list[Column]:
    """vt[k] for each k of `keys`, NULL when absent, in the order of `keys`.

    A vt whose keys are exactly `keys`, in that order, is read by position: one comparison of its key list
    with a literal, then plain array reads. Any other vt is read key by key. The shortcut matters because
    Parquet stores the keys dictionary-encoded and every read of a key string decodes a fresh copy: a search
    per key reads about half the keys each time (measured at 10 keys: a replication pass went from 1.5x to
    1.3x a plain copy). vts are written with sorted keys (`stored_vector`), so passing sorted `keys` takes
    the shortcut for every vt that holds all of them.
    """
    if not keys:
        return []
    if len(set(keys)) != len(keys):
        # A repeated key would shift every later position against the vt's own keys.
        raise ValueError(f"vt_entries needs distinct keys, got {list(keys)}")
    column = F.col(vt)
    aligned = F.map_keys(column) == F.array(*[F.lit(k) for k in keys])
    values = F.map_values(column)
    return [F.when(aligned, values[i]).otherwise(F.element_at(column, F.lit(k))) for i, k in enumerate(keys)]


def lub_columns(keys: Sequence[str], vt: str = "vt", prefix: str = "lub") -> list[Column]:
    """Aggregates max over the events of `(vt ⊔ identity)[k]` per key k (VT4, RET4), named `<prefix>0`,
    `<prefix>1`, ... in the order of `keys`: exact whether or not a vt lost its own entry to a pruning."""
    return [
        F.max(F.greatest(F.coalesce(entry, F.lit(0).cast("bigint")), own_entry(k))).alias(f"{prefix}{i}")
        for i, (k, entry) in enumerate(zip(keys, vt_entries(keys, vt), strict=True))
    ]


def own_entry(key: str) -> Column:
    """The event's identity as an entry of key `key`: origin_time where origin = key, else 0 (RET4)."""
    return F.when(F.col("origin") == F.lit(key), F.col("origin_time")).otherwise(F.lit(0).cast("bigint"))


def identity_columns(
    origins: Sequence[str], *, where: Column | None = None, prefix: str = "own"
) -> list[Column]:
    """Aggregates max(origin_time) of the events of each origin in `origins`, named `<prefix>0`, ...

    RET2 removes a pruned id from every vt while the identity keeps it (M3), so a LUB gathered from vt entries
    alone would lose the events of a pruned origin; these aggregates give it back (RET4). `origins` are the
    retired ids (only their vts can lack their own entry), usually none or a few, so the cost is a few
    comparisons per row. `where` restricts them to the rows that satisfy a condition.
    """
    out = []
    for i, origin in enumerate(origins):
        mine = F.col("origin") == F.lit(origin)
        if where is not None:
            mine = mine & where
        out.append(F.max(F.when(mine, F.col("origin_time"))).alias(f"{prefix}{i}"))
    return out


def lub_with_identities(
    row: Mapping[str, Any], keys: Sequence[str], origins: Sequence[str], *, lub: str = "lub", own: str = "own"
) -> dict[str, int]:
    """The LUB of `vt ⊔ identity` from an observation holding `lub_columns`-like and `identity_columns`
    aggregates (None = no row)."""
    merged: dict[str, int] = {}
    for i, k in enumerate(keys):
        if row[f"{lub}{i}"]:
            merged[k] = int(row[f"{lub}{i}"])
    for i, origin in enumerate(origins):
        if row[f"{own}{i}"]:
            merged[origin] = max(merged.get(origin, 0), int(row[f"{own}{i}"]))
    return dict(sorted(merged.items()))


def covering_vector(vt: str = "vt") -> Column:
    """`vt ⊔ {origin: origin_time}` as a map column (RET4): what an event adds to a CVV or a DVV."""
    column = F.col(vt)
    own = F.greatest(F.col("origin_time"), F.coalesce(F.element_at(column, F.col("origin")), F.lit(0)))
    return F.map_concat(
        F.map_filter(column, lambda k, _v: k != F.col("origin")), F.create_map(F.col("origin"), own)
    )


def lub_by_scan(events: DataFrame) -> dict[str, int]:
    """VT4 over `vt ⊔ identity` of all `events` (RET4) without knowing the keys in advance (explode +
    aggregate)."""
    rows = events.select(F.explode(covering_vector())).groupBy("key").agg(F.max("value").alias("v")).collect()
    return {r["key"]: int(r["v"]) for r in sorted(rows, key=lambda r: str(r["key"])) if r["v"]}


def extra_keys_column(
    keys: Sequence[str], *, where: Column | None = None, vt: str = "vt", name: str = "extra_keys"
) -> Column:
    """Aggregate: the largest number of vt keys outside `keys` (0 when `keys` covers every vt).

    `where` restricts it to the rows that satisfy a condition (an `observe` sees every row).
    """
    known = F.array(*[F.lit(k) for k in keys]) if keys else F.expr("cast(array() as array<string>)")
    outside = F.size(F.map_filter(F.col(vt), lambda k, _v: ~F.array_contains(known, k)))
    if where is not None:
        outside = F.when(where, outside)
    return F.coalesce(F.max(outside), F.lit(0)).alias(name)


def segment_uris(store: LogStore, segments: Sequence[Segment]) -> list[str]:
    """What a read of catalogued segments opens: each row's data files by name, never a folder listing or a
    glob, so a file the row does not name is never read (issue 19). A row made before rows recorded their
    files is read as its folder."""
    uris: list[str] = []
    for seg in segments:
        names = seg.file_names
        if names is None:
            uris.append(literal_path(store.uri(seg.path)))
        else:
            uris += [literal_path(store.uri(f"{seg.path}/{name}")) for name in names]
    return uris


def read_events(spark: SparkSession, store: LogStore, segments: Sequence[Segment]) -> DataFrame:
    """The events of the given catalogued segments, read with the declared schema (no inference)."""
    uris = segment_uris(store, segments)
    if not uris:
        return spark.createDataFrame([], EVENT_DDL)
    return spark.read.schema(EVENT_DDL).parquet(*uris)


def read_written(spark: SparkSession, store: LogStore, relative: str) -> DataFrame:
    """The events of a segment this job has just written, before any row names its files."""
    return spark.read.schema(EVENT_DDL).parquet(literal_path(store.uri(relative)))


@dataclass(frozen=True)
class CheckedRead:
    """A read of catalogued segments that counts the rows it actually got (DR0, issue 19).

    The count is observed on the rows as read, before any filter (an observation stops a filter from being
    pushed below it, so every row of the segments is counted), and compared with the rows' counts after the
    job's action by `check`: a file lost, replaced or shortened after the census is found by the read that
    would have used it, and nothing the job computed is kept.
    """

    events: DataFrame
    observation: Observation
    segments: tuple[Segment, ...]

    def check(self) -> None:
        """Raise DamagedLog unless the read got exactly the rows the segments' catalog rows hold."""
        expected = sum(s.count for s in self.segments)
        got = int(self.observation.get["rows"] or 0) if self.segments else 0
        if got != expected:
            name = self.segments[0].location
            raise DamagedLog(
                name,
                f"{name}'s log is damaged: reading {len(self.segments)} segment(s) from seq "
                f"{self.segments[0].seq_lo} on gave {got} events, their catalog rows hold {expected}; "
                "nothing was decided or written from the read (DR0)",
            )


def read_checked(
    spark: SparkSession,
    store: LogStore,
    segments: Sequence[Segment],
    *,
    prepare: Callable[[DataFrame], DataFrame] | None = None,
    observed: Sequence[Column] = (),
) -> CheckedRead:
    """`read_events` with the count of rows read observed for `CheckedRead.check`.

    A catalogued file that is missing when the read starts is damage too (Spark would say only "path does
    not exist"); one removed while the job runs fails the job, whose caller asks `damaged_files` why.

    With `prepare` (columns computed per row, no filter: every row read must still be counted) the observation
    sits on the prepared rows and also gathers the `observed` aggregates, so a job needs one observation
    instead of two: each one is a step outside Spark's generated code that copies every row.
    """
    chosen = tuple(segments)
    refuse_missing(store, chosen)
    observation = Observation("read")
    read = read_events(spark, store, chosen)
    events = (read if prepare is None else prepare(read)).observe(
        observation, F.count(F.lit(1)).alias("rows"), *observed
    )
    return CheckedRead(events, observation, chosen)
