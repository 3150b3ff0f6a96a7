"""A replication pass of a whole log to an empty target vs a plain Spark Parquet copy of the same data.

Builds a source log of N events whose vts hold 10 locations, then times (medians of --runs, after a warm-up)
`replicate_pass` (classify with CF1, renumber, write, gather the statistics) against
`spark.read.parquet(src).write.parquet(dst)`, and, for information, the pass with an admission projection
(one more aggregation over the source). Besides wall time it reports the CPU time of the local driver JVM,
which a busy shared machine disturbs much less.

    python tests/benchmarks/bench_replicate.py [--n 1000000] [--runs 3] [--master local[*]]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from replctl.adapters.logstore import LogStore
from replctl.adapters.spark.jobs import replicate_pass
from replctl.adapters.spark.results import PassSpec
from replctl.adapters.spark.schema import EVENT_COLUMNS
from replctl.adapters.spark.session import SparkSettings, get_session

LOCATIONS = [f"L{i}" for i in range(10)]


def build_source(spark: Any, store: LogStore, n: int) -> str:
    """N stored events of 10 origins; every vt has all 10 entries, growing with the position."""
    from pyspark.sql import functions as F

    rel = store.new_segment_path("SRC", 1)
    i = F.col("id")
    origin_index = F.pmod(i, F.lit(len(LOCATIONS)))
    vt = F.create_map(
        *[part for j, loc in enumerate(LOCATIONS) for part in (F.lit(loc), (i + F.lit(10 - j)) / 10)]
    )
    events = spark.range(0, n, 1, max(1, n // 1_000_000) * 2).select(
        (i + 1).alias("seq"),
        F.concat(F.lit("L"), origin_index.cast("string")).alias("origin"),
        (F.floor(i / 10) + 1).alias("origin_time"),
        F.transform_values(vt, lambda _k, v: F.floor(v).cast("bigint") + 1).alias("vt"),
        F.lit("updated").alias("type"),
        F.concat(F.lit("k"), F.pmod(F.xxhash64(i), F.lit(1000)).cast("string")).alias("key"),
        F.array(F.lit("ext")).alias("tags"),
        F.format_string('{"n":%d}', i).alias("payload"),
        F.current_timestamp().alias("emitted_at"),
    )
    events.select(*EVENT_COLUMNS).write.parquet(store.uri(rel))
    return rel


def jvm_cpu_reader(spark: Any) -> Callable[[], float]:
    """CPU seconds used so far by the local driver JVM (0 when unknown, e.g. on a cluster).

    On a shared machine wall times swing with the neighbours' load; the JVM's own CPU time does much less.
    """
    proc = getattr(getattr(getattr(spark, "_sc", None), "_gateway", None), "proc", None)
    stat = Path(f"/proc/{proc.pid}/stat") if proc is not None else None
    ticks = os.sysconf("SC_CLK_TCK")

    def read() -> float:
        if stat is None or not stat.exists():
            return 0.0
        fields = stat.read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / ticks

    return read


def main() -> None:
    """Print the medians side by side with their ratio and throughput."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--master", default="local[*]")
    args = parser.parse_args()

    spark = get_session(SparkSettings(master=args.master, home=Path(tempfile.gettempdir()) / "replctl-bench"))
    root = Path(tempfile.mkdtemp(prefix="replctl-bench-"))
    try:
        store = LogStore(root)
        src = build_source(spark, store, args.n)

        def copy(run: int) -> None:
            spark.read.parquet(store.uri(src)).write.parquet(store.uri(f"COPY/run-{run}-{time.time_ns()}"))

        def replicate(run: int, admission: list[str] | None = None) -> None:
            out = store.new_segment_path("DST", 1)
            # With P, the target already holds P's part (a group member), so nothing blocks.
            cvv = dict.fromkeys(admission or [], args.n)
            spec = PassSpec([src], 0, cvv, None, admission or [], 0, out, LOCATIONS)
            result = replicate_pass(spark, store, spec)
            assert result.written == args.n, result

        cpu = jvm_cpu_reader(spark)
        variants: dict[str, Callable[[int], object]] = {
            "plain Parquet copy": copy,
            "replicate_pass": replicate,
            "replicate_pass with admission P": lambda run: replicate(run, ["L0", "L1"]),
        }
        walls: dict[str, list[float]] = {name: [] for name in variants}
        cpus: dict[str, list[float]] = {name: [] for name in variants}
        # Warm-up (JIT, code generation), then the variants interleaved so that drifting load hits all alike.
        for run in range(-1, args.runs):
            for name, action in variants.items():
                cpu_start, start = cpu(), time.perf_counter()
                action(run + 1)
                if run >= 0:
                    walls[name].append(time.perf_counter() - start)
                    cpus[name].append(cpu() - cpu_start)
        print(f"events: {args.n:,}  master: {args.master}  runs: {args.runs} (medians)")
        print(f"{'':<34}{'wall s':>8}{'events/s':>12}{'JVM CPU s':>11}")
        for name in variants:
            wall, jvm = statistics.median(walls[name]), statistics.median(cpus[name])
            print(f"{name:<34}{wall:8.2f}{args.n / wall:12,.0f}{jvm:11.2f}")
        base_wall, base_cpu = (
            statistics.median(walls["plain Parquet copy"]),
            statistics.median(cpus["plain Parquet copy"]),
        )
        for name in list(variants)[1:]:
            print(
                f"ratio {name} / copy: wall {statistics.median(walls[name]) / base_wall:.2f}x, "
                f"JVM CPU {statistics.median(cpus[name]) / base_cpu if base_cpu else float('nan'):.2f}x"
            )
        for name in variants:
            print(
                f"  {name}: wall {[round(t, 2) for t in walls[name]]} cpu {[round(t, 2) for t in cpus[name]]}"
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
