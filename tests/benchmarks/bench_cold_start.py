"""Cold-process time of a trivial Spark job: defaults vs tuned vs tuned + CDS archive (medians).

Each measurement is a fresh Python process that builds a session and runs `spark.range(1000).count()`;
the time includes interpreter start, the JVM launch and the process exit (when the JVM writes a new archive).

    python tests/benchmarks/bench_cold_start.py [--runs 3]
"""

from __future__ import annotations

import argparse
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
    write_figures(args.json, "spark-cold-start", vars(args), figures)


if __name__ == "__main__":
    main()
