"""Cold start of commands that need no Spark, beside `python -c pass`, and what the imports cost.

Usage: .venv/bin/python tests/benchmarks/bench_cli_cold_start.py [--runs 7]
Target (foundation issue): `replctl topology validate` under 0.5 s more than `python -c pass`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures import Figure, write_figures


def median_time(cmd: list[str], env: dict[str, str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, env=env, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="replctl-bench-"))
    env = {
        **os.environ,
        "REPLCTL_DB": f"sqlite:///{root / 'catalog.db'}",
        "REPLCTL_STORE": str(root / "logs"),
    }
    rc = [sys.executable, "-m", "replctl"]
    for step in (
        ["init"],
        *[["location", "add", n] for n in "ABCDE"],
        ["topology", "add", "A", "B", "--both"],
        ["topology", "add", "B", "C", "--both"],
        ["topology", "add", "C", "A", "--both"],
        ["topology", "add", "C", "D", "--filter", "key = 'x'"],
        ["topology", "add", "B", "E"],
    ):
        subprocess.run(rc + step, env=env, check=True, capture_output=True)
    rows = [
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ("import sqlalchemy", [sys.executable, "-c", "import sqlalchemy.orm"]),
        ("import networkx", [sys.executable, "-c", "import networkx"]),
        ("import typer, rich", [sys.executable, "-c", "import typer, rich.console"]),
        ("replctl --help", [*rc, "--help"]),
        ("replctl status", [*rc, "status"]),
        ("replctl topology validate", [*rc, "topology", "validate"]),
        ("replctl location list", [*rc, "location", "list"]),
        ("replctl ops list", [*rc, "ops", "list"]),
    ]
    base = None
    figures = []
    print(f"{'command':<28} {'median s':>9} {'over python':>12}   ({args.runs} runs each)")
    for name, cmd in rows:
        t = median_time(cmd, env, args.runs)
        base = t if base is None else base
        print(f"{name:<28} {t:9.3f} {t - base:12.3f}")
        if name != "python -c pass":
            # Issue 17: the light commands within 0.5 s over `python -c pass`.
            light = name in {
                "replctl status",
                "replctl topology validate",
                "replctl location list",
                "replctl ops list",
            }
            target = ("< 0.5", t - base < 0.5) if light else (None, None)
            figures.append(Figure(f"cold start over python: {name}", t - base, "s", *target))
    write_figures(args.json, "cli-cold-start", vars(args), figures)


if __name__ == "__main__":
    main()
