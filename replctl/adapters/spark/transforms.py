"""DataFrame → DataFrame steps of the jobs (no I/O, no actions), each tied to the rule it implements.

Vector comparisons are Spark SQL higher-order functions over the `vt` map (architecture.md, "Spark"), never
Python UDFs, so every step runs inside the JVM, unchanged on a cluster or a Spark Connect server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F

from replctl.adapters.spark.schema import stored_vector, vector_literal, vt_entries, vt_entry

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# Decisions of REP1, in the order it takes them.
SKIP_CAUSAL = 0  # (1) vt ≤ CVV-Y (CF1)
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


def classify(
    events: DataFrame, *, keys: Sequence[str], target_cvv: Mapping[str, int], filter_sql: str | None
) -> DataFrame:
    """Add `decision` per REP1 steps (1) and (2): SKIP_CAUSAL, SKIP_FILTER or CANDIDATE.

    `events` carry `with_vt_entries(keys)`, where `keys` are the keys of CVV-X, the only keys X's vts can
    hold (I3 at X). CF1's vt ≤ CVV-Y is then a code-generated conjunction over those entries. A lambda
    (`covered_by`) in the same expression would cost even on rows that never reach it (measured: the pass
    spent about twice the CPU of a plain copy), so a vt with a key outside `keys` is classified as not
    covered here and reported by `_vt_other`; the caller refuses such a pass rather than trust it.
    No separate test of the vt's own entry comes first: it would search the vt's keys once more per row,
    which costs more than the conjunction over entries already read.
    A filter that evaluates to NULL rejects the event (a filter admits only what it affirms).
    """
    causal: Column = F.col("_vt_other") == 0
    for i, k in enumerate(keys):
        causal = causal & (F.coalesce(F.col(f"_vt{i}"), F.lit(0)) <= F.lit(int(target_cvv.get(k, 0))))
    decision = F.when(causal, F.lit(SKIP_CAUSAL))
    if filter_sql is not None:
        decision = decision.when(~F.coalesce(F.expr(filter_sql), F.lit(False)), F.lit(SKIP_FILTER))
    return events.withColumn("decision", decision.otherwise(F.lit(CANDIDATE)))


# Above this many keys a vector is "wide": one column per key would make the generated code of a stage so large
# that the JVM stops compiling it (HotSpot skips methods over 8,000 bytes of bytecode) and every row runs
# interpreted. Measured: a pass over vts of 50 keys took 17x a plain copy with per-key columns.
WIDE_VECTOR_KEYS = 16


def is_wide(keys: Sequence[str]) -> bool:
    """Whether vectors over `keys` take the per-entry (lambda) path instead of one column per key."""
    return len(keys) > WIDE_VECTOR_KEYS


def classify_wide(events: DataFrame, *, target_cvv: Mapping[str, int], filter_sql: str | None) -> DataFrame:
    """`classify` for wide vectors: CF1 as a lambda over the vt's entries (`covered_by`), code of one size
    whatever the number of keys.

    The own-entry test comes first: a new event's own entry is ahead of the target, and the conjunction then
    stops before the lambda, so only the duplicates pay for it. A key outside the source's keys is read as
    VT1 says (0 at the target), so the decision is exact; the caller still refuses to record such a vector.
    """
    bound = vector_literal(target_cvv)
    own = F.coalesce(F.element_at(F.col("vt"), F.col("origin")), F.lit(0))
    causal = (own <= F.coalesce(F.element_at(bound, F.col("origin")), F.lit(0))) & covered_by(
        F.col("vt"), bound
    )
    decision = F.when(causal, F.lit(SKIP_CAUSAL))
    if filter_sql is not None:
        decision = decision.when(~F.coalesce(F.expr(filter_sql), F.lit(False)), F.lit(SKIP_FILTER))
    return events.withColumn("decision", decision.otherwise(F.lit(CANDIDATE)))


def admission_refused(
    admission: Sequence[str], target_cvv: Mapping[str, int], keys: Sequence[str] | None = None
) -> Column:
    """RFC2 / REP1 (3): vt|P ≰ CVV-Y, i.e. the event depends on an event of Y's side that Y lacks.

    P is small and known, so this is a conjunction over P's keys (VT1: a missing key is 0), not a lambda.
    With `keys`, the events carry `with_vt_entries(keys)` and P's entries among them are read from there.
    """
    index = {k: i for i, k in enumerate(keys or ())}
    refused = F.lit(False)
    for k in sorted(set(admission)):
        entry = F.coalesce(F.col(f"_vt{index[k]}"), F.lit(0).cast("bigint")) if k in index else vt_entry(k)
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
