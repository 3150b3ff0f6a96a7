"""Physical deletion of the first 10% of a log, at two log sizes, side by side (target: ratio under 1.5).

Logs are built once per size by appends of --chunk events, so segments have a bounded size, as replication
passes and appends leave them. Each run deletes the next 10% slice, its cut in the middle of a segment: every
run drops whole segments and rewrites exactly one, the same work at each size but for the number of files.

Usage: .venv/bin/python tests/benchmarks/bench_delete.py [--sizes 1000000 10000000] [--chunk 100000] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from clitool import Replctl
from figures import Figure, write_figures


def build(root: Path, size: int, chunk: int) -> Replctl:
    rc = Replctl(root, spark_master="local[*]")
    rc("init")
    rc("location", "add", "A")
    for i in range(size // chunk):
        rc("log", "append", "A", "--generate", str(chunk), "--seed", str(i))
    return rc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--chunk", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()
    medians = {}
    for size in args.sizes:
        times = []
        rc = build(Path(tempfile.mkdtemp(prefix=f"replctl-del-{size}-")), size, args.chunk)
        for run in range(args.runs):
            cut = (run + 1) * size // 10 + args.chunk // 2  # mid-segment: one rewrite
            start = time.perf_counter()
            doc = rc.json("delete", "A", "--upto", str(cut))
            times.append(time.perf_counter() - start)
            assert doc["deleted_upto"] == cut, doc
        medians[size] = statistics.median(times)
        print(f"log {size:>11,} events: delete first ~10% median {medians[size]:6.2f} s  runs {times}")
    sizes = sorted(medians)
    figures = [Figure(f"delete 10% of {size:,} events", medians[size], "s") for size in sizes]
    if len(sizes) >= 2:
        ratio = medians[sizes[-1]] / medians[sizes[0]]
        print(f"ratio {sizes[-1]:,} / {sizes[0]:,}: {ratio:.2f} (target < 1.5)")
        figures.append(
            Figure(f"delete cost {sizes[-1]:,} / {sizes[0]:,} events", ratio, "x", "< 1.5", ratio < 1.5)
        )
    write_figures(args.json, "delete", vars(args), figures)


if __name__ == "__main__":
    main()
