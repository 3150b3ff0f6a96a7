"""Cold-process time of Spark work: a trivial job with Spark's defaults, tuned, and tuned + CDS archive, and
`replctl replicate` of a 10-event log (medians).

Each measurement is a fresh Python process. The trivial job builds a session and runs
`spark.range(1000).count()`; the `replicate` runs are the real command on a fresh copy of a prepared catalog
and store (two locations, one connection, 10 events at the source), with the replctl home (and so the CDS
archive) that the preparation's `log append` left. The time includes interpreter start, the JVM launch and the
process exit.

    python tests/benchmarks/bench_cold_start.py [--runs 3]

Target (replication engine issue): `replicate` of a 10-event log in a cold process under 8 s, against about
19 s for a trivial job with Spark's defaults.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures import Figure, write_figures

_DEFAULTS = """
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[*]").getOrCreate()
assert spark.range(1000).count() == 1000
"""

_TUNED = """
import sys
from pathlib import Path
from replctl.adapters.spark.session import SparkSettings, get_session
spark = get_session(SparkSettings(home=Path(sys.argv[1]), cds=sys.argv[2] == "cds"))
assert spark.range(1000).count() == 1000
"""


def _time(code: str, *args: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", code, *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return time.perf_counter() - start


def _replctl(env: dict[str, str], folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    where = ["--db", f"sqlite:///{folder / 'catalog.db'}", "--store", str(folder / "logs")]
    return subprocess.run(
        [sys.executable, "-m", "replctl", *where, *args], env=env, check=True, capture_output=True, text=True
    )


def cold_replicate_times(work: Path, runs: int, *, spark_pass: bool, local_pass: bool = False) -> list[float]:
    """Wall seconds of `replctl replicate` in a cold process, each on a fresh copy of a 10-event log A → B.

    With `spark_pass`, B holds an event of its own, so a pass runs, on Spark (`local_limit` 0); with `local_pass`
    too, the same pass runs without Spark, as a command does by default with so few events (issue 17);
    otherwise B is empty and the fast bootstrap copies A's segment files without starting Spark.
    """
    env = {**os.environ, "REPLCTL_HOME": str(work / "home")}
    if spark_pass and not local_pass:
        env["REPLCTL_LOCAL_LIMIT"] = "0"
    template = work / f"template-{spark_pass}-{local_pass}"
    template.mkdir()
    setup = [
        ("init",),
        ("location", "add", "A"),
        ("location", "add", "B"),
        ("topology", "add", "A", "B"),
        ("log", "append", "A", "--generate", "10"),
    ]
    if spark_pass:
        setup.append(("log", "append", "B", "--generate", "1"))
    for args in setup:
        _replctl(env, template, *args)
    times = []
    for run in range(runs):
        folder = work / f"run-{spark_pass}-{local_pass}-{run}"
        shutil.copytree(template, folder)
        start = time.perf_counter()
        outcome = json.loads(_replctl(env, folder, "--json", "replicate").stdout)
        times.append(time.perf_counter() - start)
        shown = json.loads(_replctl(env, folder, "--json", "log", "show", "B").stdout)
        # The run replicated the whole log, the way it was meant to.
        assert len(shown["events"]) == 10 + spark_pass, shown
        assert [p["action"] for p in outcome["passes"]] == ["ran" if spark_pass else "copied"], outcome
    return times


def main() -> None:
    """Print the median cold-process time of each variant."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        variants: dict[str, tuple[str, ...]] = {
            "defaults": (_DEFAULTS,),
            "tuned": (_TUNED, home, "plain"),
            "tuned+CDS": (_TUNED, home, "cds"),
        }
        # The first CDS process writes the archive; it is reported apart, not in the median.
        first = _time(_TUNED, home, "cds")
        archives = sorted(p.name for p in Path(home).glob("spark-cds-*.jsa"))
        print(f"tuned+CDS first run (writes the archive): {first:6.2f} s  archive: {archives or 'MISSING'}")
        figures = []
        for name, command in variants.items():
            times = [_time(*command) for _ in range(args.runs)]
            med = statistics.median(times)
            print(f"{name:<10} median {med:6.2f} s  runs: {', '.join(f'{t:.2f}' for t in times)}")
            target = ("< 8", med < 8) if name == "tuned+CDS" else (None, None)
            figures.append(Figure(f"cold Spark process, trivial job: {name}", med, "s", *target))
        for spark_pass, name in ((True, "a Spark pass"), (False, "fast bootstrap, no Spark")):
            times = cold_replicate_times(Path(home), args.runs, spark_pass=spark_pass)
            med = statistics.median(times)
            print(f"replicate, {name:<24} median {med:6.2f} s  runs: {', '.join(f'{t:.2f}' for t in times)}")
            target = ("< 8", med < 8) if spark_pass else (None, None)
            figures.append(Figure(f"cold replctl replicate, 10-event log: {name}", med, "s", *target))
    write_figures(args.json, "spark-cold-start", vars(args), figures)


if __name__ == "__main__":
    main()
