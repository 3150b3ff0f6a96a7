"""Every benchmark in one command: the figures the issues ask for, side by side, as a table and as JSON.

Runs each `bench_*.py` of this folder in its own process (a Spark master and the JVM's warm state are per
process, and the cold-start figures need fresh processes anyway), collects the figures each writes with
`--json`, then prints one table (figure, value, target, met) and writes one JSON document.

    python tests/benchmarks/bench_all.py                   # full sizes (1M and 10M events): tens of minutes
    python tests/benchmarks/bench_all.py --quick           # small sizes: a smoke run of every script
    python tests/benchmarks/bench_all.py --skip scaling --json figures.json

Each script's own output goes to stderr as it runs, so the progress is visible and stdout holds the table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures import machine

HERE = Path(__file__).resolve().parent

# name → (script, arguments at full size, arguments of the quick smoke run)
BENCHES: dict[str, tuple[str, list[str], list[str]]] = {
    "validate-core": ("bench_validate_core.py", ["1000", "100000"], ["200", "10000"]),
    "cli-cold-start": ("bench_cli_cold_start.py", ["--runs", "5"], ["--runs", "1"]),
    "spark-cold-start": ("bench_cold_start.py", ["--runs", "3"], ["--runs", "1"]),
    "engine": ("bench_engine.py", ["--runs", "3"], ["--runs", "1"]),
    "replicate": (
        "bench_replicate.py",
        ["--n", "1000000", "10000000", "--runs", "3", "--no-admission"],
        ["--n", "50000", "100000", "--runs", "1", "--no-admission"],
    ),
    "delete": (
        "bench_delete.py",
        ["--sizes", "1000000", "10000000", "--runs", "3"],
        ["--sizes", "20000", "100000", "--chunk", "10000", "--runs", "1"],
    ),
    "bootstrap": (
        "bench_bootstrap.py",
        ["--n", "1000000", "--runs", "3"],
        ["--n", "40000", "--chunk", "20000", "--runs", "1"],
    ),
    "backup": (
        "bench_backup.py",
        ["--n", "10000000", "--runs", "3"],
        ["--n", "100000", "--chunk", "20000", "--runs", "1"],
    ),
    "scaling": (
        "bench_scaling.py",
        ["--n", "10000000", "--runs", "3"],
        [
            "--n",
            "100000",
            "--cores",
            "1",
            "2",
            "--locations",
            "3",
            "10",
            "--locations-n",
            "50000",
            "--runs",
            "1",
        ],
    ),
}


def run_bench(name: str, quick: bool, workdir: Path) -> dict[str, Any]:
    """Run one script with --json and return its document, with its wall time and exit status."""
    script, full, smoke = BENCHES[name]
    out = workdir / f"{name}.json"
    command = [sys.executable, str(HERE / script), *(smoke if quick else full), "--json", str(out)]
    print(f"== {name}: {' '.join(command[1:])}", file=sys.stderr, flush=True)
    start = time.perf_counter()
    status = subprocess.run(command, stdout=sys.stderr, check=False).returncode
    elapsed = time.perf_counter() - start
    doc: dict[str, Any] = json.loads(out.read_text()) if status == 0 and out.exists() else {"figures": []}
    return {**doc, "bench": name, "exit": status, "elapsed_s": round(elapsed, 1)}


def format_value(value: float, unit: str) -> str:
    """A figure as an operator reads it: ratios with an x, rates with thousands separators."""
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "events/s":
        return f"{value:,.0f} events/s"
    return f"{value:.3f} {unit}" if value < 1 else f"{value:.2f} {unit}"


def print_table(results: list[dict[str, Any]]) -> None:
    """One line per figure, grouped by benchmark, with the target and whether it is met."""
    rows = [("benchmark", "figure", "value", "target", "met")]
    for result in results:
        if result["exit"] != 0:
            rows.append((result["bench"], f"FAILED (exit {result['exit']})", "", "", ""))
        for f in result["figures"]:
            met = "" if f["met"] is None else ("yes" if f["met"] else "NO")
            rows.append(
                (result["bench"], f["what"], format_value(f["value"], f["unit"]), f["target"] or "", met)
            )
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    for i, row in enumerate(rows):
        print(
            "  ".join(
                cell.ljust(w) if j < 2 else cell.rjust(w)
                for j, (cell, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if i == 0:
            print("  ".join("-" * w for w in widths))


def main() -> int:
    """Run the chosen benchmarks; exit 1 when one of them failed (a missed target is a figure, not a failure)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes: check that every script runs")
    parser.add_argument("--only", nargs="+", choices=list(BENCHES), help="run only these")
    parser.add_argument("--skip", nargs="+", choices=list(BENCHES), default=[], help="leave these out")
    parser.add_argument(
        "--json", metavar="PATH", default="test-output/bench.json", help="where the JSON goes"
    )
    args = parser.parse_args()

    names = [n for n in (args.only or list(BENCHES)) if n not in args.skip]
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    with tempfile.TemporaryDirectory(prefix="replctl-bench-all-") as tmp:
        results = [run_bench(name, args.quick, Path(tmp)) for name in names]
    print_table(results)
    where = machine()
    doc = {
        "started": started,
        "profile": "quick" if args.quick else "full",
        "machine": where,
        "benches": results,
    }
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"\nfigures as JSON: {path}  (machine: {where['cores']} cores)")
    return 1 if any(r["exit"] != 0 for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
