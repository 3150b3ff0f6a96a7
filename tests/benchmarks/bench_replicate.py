"""A replication pass of a whole log to an empty target vs a plain Spark Parquet copy of the same data.

For each N of --n, builds a source log of N events whose vts hold --locations locations, then times (medians of
--runs, after a warm-up, the variants interleaved) `replicate_pass` (classify with CF1, renumber, write, gather
the statistics) against `spark.read.parquet(src).write.parquet(dst)`, and, for information, the pass with an
admission projection (one more aggregation over the source). Besides wall time it reports the CPU time of the
local driver JVM, which a busy shared machine disturbs much less. With several N it also reports how the time
per event grows with N (1.00 is linear).

    python tests/benchmarks/bench_replicate.py [--n 1000000 10000000] [--runs 3] [--locations 10]
        [--master local[*]] [--no-admission] [--json FIGURES.json]

Target (replication engine issue): the pass within 1.5x of the plain copy at 1M and 10M, and linear in N.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from replctl.adapters.logstore import LogStore
from replctl.adapters.spark.jobs import replicate_pass
from replctl.adapters.spark.schema import EVENT_COLUMNS
from replctl.adapters.spark.session import SparkSettings, get_session
from replctl.core.jobs import PassSpec

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from figures import Figure, write_figures
from segment_rows import catalogued


def location_names(count: int) -> list[str]:
    """The origins of the synthetic log: L0, L1, ..."""
    return [f"L{i}" for i in range(count)]


def build_source(spark: Any, store: LogStore, n: int, locations: int = 10) -> str:
    """N stored events of `locations` origins, round robin; every vt has all entries, growing with the position."""
    from pyspark.sql import functions as F

    names = location_names(locations)
    rel = store.new_segment_path("SRC", 1)
    i = F.col("id")
    origin_index = F.pmod(i, F.lit(locations))
    vt = F.create_map(
        *[
            part
            for j, loc in enumerate(names)
            for part in (F.lit(loc), (i + F.lit(locations - j)) / locations)
        ]
    )
    events = spark.range(0, n, 1, max(1, n // 1_000_000) * 2).select(
        (i + 1).alias("seq"),
        F.concat(F.lit("L"), origin_index.cast("string")).alias("origin"),
        (F.floor(i / locations) + 1).alias("origin_time"),
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


COPY, PASS, PASS_P = "plain Parquet copy", "replicate_pass", "replicate_pass with admission P"


def measure(
    spark: Any, store: LogStore, n: int, locations: int, runs: int, *, admission: bool = True
) -> dict[str, dict[str, float]]:
    """Median wall and JVM CPU seconds of each variant for one log of `n` events."""
    names = location_names(locations)
    src = build_source(spark, store, n, locations)
    # The pass reads the catalogued files and counts them against the row (issue 19), as in production.
    source = catalogued(store, src)

    def copy() -> str:
        out = f"COPY/{time.time_ns()}"
        spark.read.parquet(store.uri(src)).write.parquet(store.uri(out))
        return out

    def replicate(admission: list[str] | None = None) -> str:
        out = store.new_segment_path("DST", 1)
        # With P, the target already holds P's part (a group member), so nothing blocks, and CF1 skips the
        # events of P's origins: the pass writes the others.
        cvv = dict.fromkeys(admission or [], n)
        result = replicate_pass(
            spark, store, PassSpec([source], 0, cvv, None, admission or [], 0, out, names)
        )
        held = sum(1 for i in range(locations) if names[i] in cvv) * (n // locations)
        assert n % locations == 0 and result.blocked_at is None, result
        assert (result.written, result.skipped_causal) == (n - held, held), result
        return out

    cpu = jvm_cpu_reader(spark)
    variants: dict[str, Callable[[], str]] = {COPY: copy, PASS: replicate}
    if admission:
        variants[PASS_P] = lambda: replicate(names[:2])
    walls: dict[str, list[float]] = {name: [] for name in variants}
    cpus: dict[str, list[float]] = {name: [] for name in variants}
    # A warm-up (JIT, code generation), then the variants interleaved so that drifting load hits all alike.
    for run in range(-1, runs):
        for name, action in variants.items():
            cpu_start, start = cpu(), time.perf_counter()
            out = action()
            if run >= 0:
                walls[name].append(time.perf_counter() - start)
                cpus[name].append(cpu() - cpu_start)
            store.remove(out)  # keeps the disk footprint at one copy whatever N and --runs are
    for name in variants:
        print(f"  {name}: wall {[round(t, 2) for t in walls[name]]} cpu {[round(t, 2) for t in cpus[name]]}")
    store.remove("SRC")
    return {
        name: {"wall": statistics.median(walls[name]), "cpu": statistics.median(cpus[name])}
        for name in variants
    }


def main() -> None:
    """Print the medians side by side with their ratios, throughput and growth with N."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--locations", type=int, default=10)
    parser.add_argument("--master", default="local[*]")
    parser.add_argument(
        "--no-admission", action="store_true", help="skip the pass with an admission projection"
    )
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()

    spark = get_session(SparkSettings(master=args.master, home=Path(tempfile.gettempdir()) / "replctl-bench"))
    root = Path(tempfile.mkdtemp(prefix="replctl-bench-"))
    figures: list[Figure] = []
    per_event: dict[int, float] = {}
    try:
        store = LogStore(root)
        for n in args.n:
            print(f"events: {n:,}  locations: {args.locations}  master: {args.master}  runs: {args.runs}")
            medians = measure(spark, store, n, args.locations, args.runs, admission=not args.no_admission)
            print(f"{'':<34}{'wall s':>8}{'events/s':>12}{'JVM CPU s':>11}")
            for name, m in medians.items():
                print(f"{name:<34}{m['wall']:8.2f}{n / m['wall']:12,.0f}{m['cpu']:11.2f}")
            base = medians[COPY]
            for name in [v for v in (PASS, PASS_P) if v in medians]:
                wall_ratio = medians[name]["wall"] / base["wall"]
                cpu_ratio = medians[name]["cpu"] / base["cpu"] if base["cpu"] else float("nan")
                print(f"ratio {name} / copy: wall {wall_ratio:.2f}x, JVM CPU {cpu_ratio:.2f}x")
                target = ("< 1.5x", wall_ratio < 1.5) if name == PASS else (None, None)
                figures.append(Figure(f"{name} / copy, {n:,} events, wall", wall_ratio, "x", *target))
                figures.append(Figure(f"{name} / copy, {n:,} events, JVM CPU", cpu_ratio, "x"))
            figures.append(Figure(f"{PASS}, {n:,} events", medians[PASS]["wall"], "s"))
            figures.append(Figure(f"{COPY}, {n:,} events", base["wall"], "s"))
            figures.append(Figure(f"{PASS} throughput, {n:,} events", n / medians[PASS]["wall"], "events/s"))
            per_event[n] = medians[PASS]["wall"] / n
        smallest = min(per_event)
        for n in sorted(per_event)[1:]:
            # Time per event relative to the smallest N: 1.00 is linear growth, above it is worse than linear.
            growth = per_event[n] / per_event[smallest]
            print(f"time per event at {n:,} vs {smallest:,}: {growth:.2f} (1.00 = linear)")
            figures.append(
                Figure(
                    f"{PASS} time per event, {n:,} vs {smallest:,}",
                    growth,
                    "x",
                    "<= 1.2 (linear)",
                    growth <= 1.2,
                )
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    write_figures(args.json, "replicate", vars(args), figures)


if __name__ == "__main__":
    main()
