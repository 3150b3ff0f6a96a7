"""How replication scales: with the number of Spark cores, and with the number of locations in the vts.

Each configuration is a fresh `bench_replicate.py` process (a Spark master is fixed for the life of its JVM), so
the figures are the same medians, beside the same plain Parquet copy, that the replication benchmark prints.
Cores default to 1, 2, 4, ... up to this machine's count.

    python tests/benchmarks/bench_scaling.py [--n 10000000] [--cores 1 2] [--locations 3 10 50]
        [--locations-n 1000000] [--runs 3] [--json FIGURES.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures import Figure, write_figures

HERE = Path(__file__).resolve().parent


def default_cores() -> list[int]:
    """1, 2, 4, ... up to the machine's core count, and the count itself."""
    total = os.cpu_count() or 1
    cores, c = [], 1
    while c < total:
        cores.append(c)
        c *= 2
    return [*cores, total]


def replicate_figures(n: int, runs: int, master: str, locations: int) -> dict[str, float]:
    """Run one `bench_replicate.py` configuration and return its figures by name."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "figures.json"
        command = [sys.executable, str(HERE / "bench_replicate.py"), "--n", str(n), "--runs", str(runs)]
        command += ["--master", master, "--locations", str(locations), "--no-admission", "--json", str(out)]
        subprocess.run(command, check=True, stdout=sys.stderr)
        doc: dict[str, Any] = json.loads(out.read_text())
    named = {f["what"]: float(f["value"]) for f in doc["figures"]}
    return {
        "pass": named[f"replicate_pass, {n:,} events"],
        "copy": named[f"plain Parquet copy, {n:,} events"],
        "ratio": named[f"replicate_pass / copy, {n:,} events, wall"],
        "cpu_ratio": named[f"replicate_pass / copy, {n:,} events, JVM CPU"],
    }


def main() -> None:
    """Print the two scaling tables and, with --json, write their figures."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=10_000_000, help="events for the cores table")
    parser.add_argument("--cores", type=int, nargs="+", default=default_cores())
    parser.add_argument("--locations", type=int, nargs="+", default=[3, 10, 50])
    parser.add_argument("--locations-n", type=int, default=1_000_000, help="events for the locations table")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()

    figures: list[Figure] = []
    by_cores = {c: replicate_figures(args.n, args.runs, f"local[{c}]", 10) for c in args.cores}
    one = by_cores[min(by_cores)]["pass"]
    print(
        f"replication of {args.n:,} events (10 locations in the vts) vs Spark cores, medians of {args.runs}:"
    )
    print(f"{'cores':>6}{'pass s':>9}{'copy s':>9}{'ratio':>8}{'events/s':>12}{'speedup':>9}")
    for c, f in by_cores.items():
        speedup = one / f["pass"]
        print(
            f"{c:>6}{f['pass']:9.2f}{f['copy']:9.2f}{f['ratio']:7.2f}x{args.n / f['pass']:12,.0f}{speedup:8.2f}x"
        )
        figures.append(Figure(f"replicate {args.n:,} events on {c} core(s)", f["pass"], "s"))
        figures.append(Figure(f"replicate / copy {args.n:,} events on {c} core(s)", f["ratio"], "x"))
        figures.append(Figure(f"speedup on {c} core(s) vs {min(by_cores)}", speedup, "x"))

    by_locations = {k: replicate_figures(args.locations_n, args.runs, "local[*]", k) for k in args.locations}
    print(f"replication of {args.locations_n:,} events vs locations in the vts, medians of {args.runs}:")
    print(f"{'locations':>10}{'pass s':>9}{'copy s':>9}{'ratio':>8}{'JVM CPU ratio':>15}")
    for k, f in by_locations.items():
        print(f"{k:>10}{f['pass']:9.2f}{f['copy']:9.2f}{f['ratio']:7.2f}x{f['cpu_ratio']:14.2f}x")
        figures.append(Figure(f"replicate {args.locations_n:,} events, {k} locations", f["pass"], "s"))
        figures.append(
            Figure(f"replicate / copy {args.locations_n:,} events, {k} locations", f["ratio"], "x")
        )
    write_figures(args.json, "scaling", vars(args), figures)


if __name__ == "__main__":
    main()
