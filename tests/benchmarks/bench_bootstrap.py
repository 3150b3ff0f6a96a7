"""Bootstrap of a new location from an N-event log: fast path vs an ordinary pass vs `cp -r` (target: fast
path within 1.3x of cp -r), medians side by side in one run.

Usage: .venv/bin/python tests/benchmarks/bench_bootstrap.py [--n 1000000] [--chunk 100000] [--runs 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from clitool import Replctl
from figures import Figure, write_figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--chunk", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="replctl-boot-"))
    rc = Replctl(root, spark_master="local[*]")
    rc("init")
    rc("location", "add", "A")
    for i in range(args.n // args.chunk):
        rc("log", "append", "A", "--generate", str(args.chunk), "--seed", str(i))
    rc("log", "show", "A", "--limit", "1")  # warm the session and the file cache alike
    results: dict[str, list[float]] = {"fast path": [], "ordinary pass": [], "cp -r": []}
    for run in range(args.runs):
        for label, filt in (("fast path", None), ("ordinary pass", "true")):
            name = f"{'F' if filt is None else 'S'}{run}"
            rc("location", "add", name)
            rc("topology", "add", "A", name, *(["--filter", filt] if filt else []))
            start = time.perf_counter()
            doc = rc.json("replicate", "A", name)
            results[label].append(time.perf_counter() - start)
            assert doc["passes"][0]["written"] == args.n, doc
        start = time.perf_counter()
        shutil.copytree(rc.store / "A", root / f"copy{run}")
        results["cp -r"].append(time.perf_counter() - start)
    base = statistics.median(results["cp -r"])
    print(f"bootstrap of {args.n:,} events, medians of {args.runs}:")
    figures = []
    for label, times in results.items():
        med = statistics.median(times)
        print(f"  {label:<14} {med:7.2f} s  {med / base:6.2f}x cp -r   runs {[round(t, 2) for t in times]}")
        figures.append(Figure(f"bootstrap {args.n:,} events: {label}", med, "s"))
    fast = statistics.median(results["fast path"]) / base
    figures.append(
        Figure(f"bootstrap {args.n:,} events: fast path / cp -r", fast, "x", "<= 1.3", fast <= 1.3)
    )
    write_figures(args.json, "bootstrap", vars(args), figures)


if __name__ == "__main__":
    main()
