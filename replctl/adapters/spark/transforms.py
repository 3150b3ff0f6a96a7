"""DataFrame → DataFrame steps of the jobs (no I/O, no actions), each tied to the rule it implements.

Vector comparisons are Spark SQL higher-order functions over the `vt` map (architecture.md, "Spark"), never
Python UDFs, so every step runs inside the JVM, unchanged on a cluster or a Spark Connect server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F

from replctl.adapters.spark.schema import own_entry, stored_vector, vector_literal, vt_entries, vt_entry

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# Decisions of REP1, in the order it takes them.
SKIP_CAUSAL = 0  # (1) CVV-Y covers the event (CF1, through its identity: RET4)
SKIP_FILTER = 1  # (2) the connection filter rejects it
CANDIDATE = 2  # (3)/(4) admitted unless the admission check blocks it

_TYPES = ("created", "updated", "deleted", "moved", "tagged")


def emit(inputs: DataFrame, *, location: str, start_seq: int, cvv: Mapping[str, int]) -> DataFrame:
    """EM1 for a batch: the i-th input row (column `i`, from 0) becomes seq = origin_time = start_seq + i.

    Every row gets vt = CVV ⊔ {location: seq}: the same base CVV serves the whole batch because event i's own
    entry already dominates every earlier event of the batch, so the batch is a causal chain as EM1 demands.
    The vt's keys are written sorted (`schema.stored_vector`), zero entries dropped (VT1).
    """
    seq = F.lit(start_seq).cast("bigint") + F.col("i")
    entries = {k: F.lit(int(v)).cast("bigint") for k, v in cvv.items() if k != location and int(v)}
    entries[location] = F.greatest(seq, F.lit(int(cvv.get(location, 0))).cast("bigint"))
    vt = stored_vector(entries)
    return inputs.select(
        seq.alias("seq"),
        F.lit(location).alias("origin"),
        seq.alias("origin_time"),
        vt.alias("vt"),
        F.col("type"),
        F.col("key"),
        F.coalesce(F.col("tags"), F.expr("cast(array() as array<string>)")).alias("tags"),
        F.col("payload"),
        F.current_timestamp().alias("emitted_at"),
    )


def generated_inputs(spark: SparkSession, count: int, seed: int) -> DataFrame:
    """`count` synthetic inputs (columns i, type, key, tags, payload), pseudo-random from `seed`.

    Built from `spark.range` so it scales to tens of millions of rows without touching the driver; the
    values are deterministic per (seed, i).
    """
    partitions = max(1, min(64, -(-count // 1_000_000)))
    i = F.col("id")
    h = F.xxhash64(F.lit(seed), i)
    return spark.range(0, count, 1, partitions).select(
        i.alias("i"),
        F.element_at(
            F.array(*[F.lit(t) for t in _TYPES]), (F.pmod(h, F.lit(len(_TYPES))) + 1).cast("int")
        ).alias("type"),
        F.concat(F.lit("k"), F.pmod(F.xxhash64(F.lit(seed + 1), i), F.lit(1000)).cast("string")).alias("key"),
        F.when(F.pmod(h, F.lit(10)) == 0, F.array(F.lit("ext")))
        .otherwise(F.expr("cast(array() as array<string>)"))
        .alias("tags"),
        F.format_string('{"n":%d,"v":%d}', i, F.pmod(F.xxhash64(F.lit(seed + 2), i), F.lit(1_000_000))).alias(
            "payload"
        ),
    )


def covered_by(vt: Column, bound: Column) -> Column:
    """VT2 `vt ≤ bound` for map columns; a missing key is 0 (VT1)."""
    return F.forall(
        F.map_entries(vt),
        lambda e: e["value"] <= F.coalesce(F.element_at(bound, e["key"]), F.lit(0).cast("bigint")),
    )


def with_vt_entries(events: DataFrame, keys: Sequence[str]) -> DataFrame:
    """Add `_vt0`, `_vt1`, ... = vt[k] for each k of `keys` (NULL when absent) and `_vt_other`, the number of
    vt keys outside `keys`.

    The lookups (`schema.vt_entries`: by position when a vt holds exactly `keys`) run once per row in a
    code-generated projection and are shared by the causality check, the admission check and the statistics
    of the write; `keys` are the keys the vts are expected to hold (CVV-X for X's events), sorted.
    """
    entries = [entry.alias(f"_vt{i}") for i, entry in enumerate(vt_entries(keys))]
    present: Column = F.lit(0)
    for i in range(len(keys)):
        present = present + F.col(f"_vt{i}").isNotNull().cast("int")
    return events.select("*", *entries).withColumn("_vt_other", F.size(F.col("vt")) - present)


def covered_by_identity(target_cvv: Mapping[str, int]) -> Column:
    """CF1 / REP1 (1) through the event's identity (RET4): `CVV-Y[origin] ≥ origin_time`.

    One lookup in a literal map per row. Before any clock pruning it decides exactly as `vt ≤ CVV-Y` (the
    event that raised `CVV-Y[origin]` that far is e or follows it, I3); after one it is the only test that
    still sees a pruned origin's events, whose vts lost their own entry (RET2).
    """
    known = F.coalesce(F.element_at(vector_literal(target_cvv), F.col("origin")), F.lit(0).cast("bigint"))
    return known >= F.col("origin_time")


def classify(events: DataFrame, *, target_cvv: Mapping[str, int], filter_sql: str | None) -> DataFrame:
    """Add `decision` per REP1 steps (1) and (2): SKIP_CAUSAL, SKIP_FILTER or CANDIDATE.

    Step (1) is CF1 through the identity (`covered_by_identity`), one lookup per row whatever the width of the
    vectors. A filter that evaluates to NULL rejects the event (a filter admits only what it affirms).
    """
    decision = F.when(covered_by_identity(target_cvv), F.lit(SKIP_CAUSAL))
    if filter_sql is not None:
        decision = decision.when(~F.coalesce(F.expr(filter_sql), F.lit(False)), F.lit(SKIP_FILTER))
    return events.withColumn("decision", decision.otherwise(F.lit(CANDIDATE)))


def admission_refused(
    admission: Sequence[str], target_cvv: Mapping[str, int], keys: Sequence[str] | None = None
) -> Column:
    """RFC2 / REP1 (3): `(vt ⊔ identity)|P ≰ CVV-Y`, i.e. the event depends on (or is) an event of Y's side
    that Y lacks.

    P is small and known, so this is a conjunction over P's keys (VT1: a missing key is 0), not a lambda.
    With `keys`, the events carry `with_vt_entries(keys)` and P's entries among them are read from there. The
    identity is merged per key (RET4): an event of P's side whose vt lost its own entry to a pruning is still
    the event of that side it is.
    """
    index = {k: i for i, k in enumerate(keys or ())}
    refused = F.lit(False)
    for k in sorted(set(admission)):
        entry = F.coalesce(F.col(f"_vt{index[k]}"), F.lit(0).cast("bigint")) if k in index else vt_entry(k)
        entry = F.greatest(entry, own_entry(k))
        refused = refused | (entry > F.lit(int(target_cvv.get(k, 0))).cast("bigint"))
    return refused


def renumber(written: DataFrame, *, progress: int, target_seq: int) -> DataFrame:
    """Target seqs for replicated events: seq' = target_seq + (seq − progress).

    Every examined source event has seq > progress, so seq' > target_seq, and the map is strictly increasing,
    so X's order is kept (REP1 (4)) and Y's seqs stay strictly increasing (M4, I7). It is row-local: no
    global sort, no single-partition window, no count pass to make the numbers dense; the price is a gap for
    every skipped or filtered event, which M4 allows. Gaps grow Y's seq at most by the span of X's seqs
    examined, far from the int64 limit.
    """
    return written.withColumn("seq", F.lit(target_seq).cast("bigint") + (F.col("seq") - F.lit(progress)))
