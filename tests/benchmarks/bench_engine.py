"""Interactive speed (issue 17): a cold `replctl replicate` of a 10-event log as a Spark pass on a warm managed
engine, the same on local Spark, and the same pass as a command runs it by default (the local pass, no Spark);
and a `log append` of 10 events (no JVM) beside `python -c pass` (medians).

Each measurement is a fresh `replctl` process; the engine is started once (`replctl engine start`) and warmed
by one replicate that is not counted, then stopped; the local figures are taken after it, on the same home.

    python tests/benchmarks/bench_engine.py [--runs 3]

Targets: replicate on the warm engine under 1.5 s (the Spark pass; the default local pass is shown beside it);
the append under 0.5 s over `python -c pass`.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_cold_start import cold_replicate_times
from figures import Figure, write_figures


def _engine(home: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPLCTL_")}
    subprocess.run(
        [sys.executable, "-m", "replctl", "engine", *args],
        env={**env, "REPLCTL_HOME": str(home)},
        check=True,
        capture_output=True,
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def append_times(work: Path, runs: int) -> tuple[list[float], list[float]]:
    """Wall seconds of `python -c pass` and of `log append` of 10 `--event`s, each in a fresh process."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("REPLCTL_")},
        "REPLCTL_DB": f"sqlite:///{work / 'append.db'}",
        "REPLCTL_STORE": str(work / "append-logs"),
        "REPLCTL_HOME": str(work / "append-home"),
    }
    rc = [sys.executable, "-m", "replctl"]
    for step in (["init"], ["location", "add", "A"]):
        subprocess.run(rc + step, env=env, check=True, capture_output=True)
    events = [arg for i in range(10) for arg in ("--event", f'{{"key": "k{i}"}}')]
    base: list[float] = []
    append: list[float] = []
    for _ in range(runs):
        for cmd, out in (
            ([sys.executable, "-c", "pass"], base),
            ([*rc, "log", "append", "A", *events], append),
        ):
            start = time.perf_counter()
            subprocess.run(cmd, env=env, check=True, capture_output=True)
            out.append(time.perf_counter() - start)
    return base, append


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()
    figures = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        base, append = append_times(work, args.runs)
        over = statistics.median(append) - statistics.median(base)
        print(f"log append of 10 events: median {statistics.median(append):.2f} s, {over:.2f} s over python")
        figures.append(
            Figure("cold log append of 10 events over python -c pass", over, "s", "< 0.5", over < 0.5)
        )

        warm, local = work / "engine", work / "local"
        warm.mkdir()
        local.mkdir()
        _engine(warm / "home", "start", "--port", str(_free_port()))
        try:
            # The first run warms the engine (its first query compiles what later ones reuse): not counted.
            on_engine = cold_replicate_times(warm, args.runs + 1, spark_pass=True)[1:]
        finally:
            _engine(warm / "home", "stop")
        on_local = cold_replicate_times(local, args.runs, spark_pass=True)
        without = cold_replicate_times(local, args.runs, spark_pass=True, local_pass=True)
        for name, times, target in (
            (
                "a Spark pass on a warm managed engine",
                on_engine,
                ("< 1.5", statistics.median(on_engine) < 1.5),
            ),
            ("a Spark pass on local Spark", on_local, (None, None)),
            ("the local pass (no Spark, the default)", without, ("< 1.5", statistics.median(without) < 1.5)),
        ):
            med = statistics.median(times)
            print(
                f"cold replicate, 10 events, {name:<40} median {med:6.2f} s  "
                f"runs: {', '.join(f'{t:.2f}' for t in times)}"
            )
            figures.append(Figure(f"cold replctl replicate, 10-event log, {name}", med, "s", *target))
    write_figures(args.json, "engine", vars(args), figures)


if __name__ == "__main__":
    main()
