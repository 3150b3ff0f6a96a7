"""Backups (rules.md BK1, BK3): a full backup against `cp -r` of the same segment files, an incremental backup
after 1% new events against the full one, and recoverability for many locations and backups.

Targets (issue 16): full backup within 1.3x of `cp -r`; incremental under 5% of the full one; BK3 for 50
locations with 100 backups under 0.2 s. The log is built by appends of --chunk events (bounded segments).

Each run times, side by side: `cp -r` of the segment folders, `cp` of their data files only (what a backup
copies: `.crc` side files and `_SUCCESS` markers are not data), `backup create` through the CLI in this process,
and the same backup through the service (`services.backups.create`, the Python API runbooks call). The targets
are judged on the service: the CLI adds a fixed cost per command (building the command tree, opening the
catalog) that no backup size changes, and that the cold-start figures of `bench_cli.py` already track.

Every timed step starts with nothing waiting to be written (`os.sync()` before it, untimed): each step pays for
its own writes only. Without it a backup, whose fsyncs must reach the disk (BK1), also waited for the writeback
of what the copies before it had left in the page cache (270 MB each at 10M events). `cp -r` returns before its
data is on disk; a durable copy (`cp -r`, then an fsync of every file and folder it made) is timed beside it.

Usage: .venv/bin/python tests/benchmarks/bench_backup.py [--n 10000000] [--chunk 100000] [--runs 3]
       [--world DIR]   (a world an earlier run built with --keep-world: the same log for a before/after pair)
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from clitool import Replctl
from figures import Figure, write_figures

from replctl.core.backups import BackupSegment, Manifest, recoverability_all
from replctl.core.model import Change, ChangeKind, Connection, ConnectionState, Location
from replctl.core.topology import fold
from replctl.core.vectortime import VectorTime

if TYPE_CHECKING:
    from replctl.adapters.catalog.repository import Catalog


def build(root: Path, size: int, chunk: int) -> Replctl:
    rc = Replctl(root, spark_master="local[*]")
    rc("init")
    rc("location", "add", "A")
    for i in range(max(1, size // chunk)):
        rc("log", "append", "A", "--generate", str(min(chunk, size)), "--seed", str(i))
    return rc


def settled() -> None:
    """Flush what earlier steps left in the page cache, so that the next timed step pays for its own writes."""
    os.sync()


def timed_copy(source: Path, target: Path) -> float:
    settled()
    start = time.perf_counter()
    subprocess.run(["cp", "-r", str(source), str(target)], check=True)
    return time.perf_counter() - start


def timed_durable_copy(source: Path, target: Path) -> float:
    """`cp -r`, then an fsync of every file and folder it made: the same bytes on disk, as a backup has them."""
    settled()
    start = time.perf_counter()
    subprocess.run(["cp", "-r", str(source), str(target)], check=True)
    for path in [*sorted(target.rglob("*"), key=lambda p: p.is_dir()), target]:
        descriptor = os.open(path, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
    return time.perf_counter() - start


def timed_data_copy(source: Path, target: Path) -> float:
    """`cp` of the segments' data files only, into folders of the same names."""
    settled()
    start = time.perf_counter()
    subprocess.run(
        f"mkdir -p {target} && cd {source} && cp --parents */*.parquet {target}", shell=True, check=True
    )
    return time.perf_counter() - start


def timed_backup(rc: Replctl, store: Path) -> tuple[float, dict[str, Any]]:
    settled()
    start = time.perf_counter()
    doc = rc.json("backup", "create", "A", "--to", str(store))["backups"][0]
    return time.perf_counter() - start, doc


def timed_service_backup(rc: Replctl, store: Path) -> tuple[float, dict[str, Any]]:
    """The same backup through the service API, on the catalog this process keeps open (as a runbook does)."""
    from replctl.adapters.backupstore import BackupStore
    from replctl.adapters.logbackups import LogBackups
    from replctl.adapters.logstore import LogStore
    from replctl.services import backups

    live = LogStore(rc.store)
    target = LogBackups(BackupStore(store), live, _no_reader)
    settled()
    start = time.perf_counter()
    doc = backups.create(_catalog(rc.db_url), live, target, ["A"]).to_json()["backups"][0]
    return time.perf_counter() - start, doc


def _no_reader(copies: object) -> Any:
    """`backup create` reads no backed-up event: the backup store's data plane is never asked for."""
    raise AssertionError(f"a backup read the events of {copies}")


@functools.cache
def _catalog(url: str) -> Catalog:
    from replctl.adapters.catalog.repository import Catalog

    return Catalog(url)


def recoverability_time(locations: int, backups: int, runs: int) -> float:
    """BK3 over a ring of `locations` (both ways, unfiltered), `backups` manifests spread over them."""
    names = [f"L{i:03d}" for i in range(locations)]
    pairs = [(names[i], names[(i + 1) % locations]) for i in range(locations)]
    changes = [
        Change(ChangeKind.CONNECTION_ADDED, source=s, target=t) for a, b in pairs for s, t in ((a, b), (b, a))
    ]
    state = fold(changes)
    conns = [Connection(c.source or "", c.target or "", ConnectionState.ACTIVE) for c in changes]
    cvv = VectorTime(dict.fromkeys(names, 1000))
    locs = [Location(n, seq=1000, cvv=cvv, dvv=VectorTime({n: 500})) for n in names]
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    seg = BackupSegment("x/seg", 1, 1000, 1000, cvv, 1, "d")
    manifests = [
        Manifest(
            f"b{i}",
            names[i % locations],
            1,
            1000,
            cvv,
            VectorTime(),
            0,
            0,
            (seg,),
            "0",
            (t0 + timedelta(minutes=i)).isoformat(),
            "op",
        )
        for i in range(backups)
    ]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        recoverability_all(state, locs, conns, manifests, lambda x: True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--chunk", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--locations", type=int, default=50)
    parser.add_argument("--backups", type=int, default=100)
    parser.add_argument("--world", metavar="DIR", help="reuse a world built by --keep-world (copied first)")
    parser.add_argument("--keep-world", metavar="DIR", help="also keep the built world there")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix=f"replctl-backup-{args.n}-"))
    if args.world:
        shutil.copytree(args.world, root / "world")
        rc = Replctl(root / "world", spark_master="local[*]")
    else:
        rc = build(root / "world", args.n, args.chunk)
        if args.keep_world:
            shutil.copytree(root / "world", args.keep_world)
    cps, durable_cps, data_cps, fulls, services = [], [], [], [], []
    for run in range(args.runs):
        cps.append(timed_copy(rc.store / "A", root / f"cp-{run}"))
        durable_cps.append(timed_durable_copy(rc.store / "A", root / f"durable-{run}"))
        data_cps.append(timed_data_copy(rc.store / "A", root / f"data-{run}"))
        fulls.append(timed_backup(rc, root / f"full-{run}")[0])
        services.append(timed_service_backup(rc, root / f"service-{run}")[0])
    rc("log", "append", "A", "--generate", str(max(1, args.n // 100)), "--seed", "999")
    incrementals: list[float] = []
    service_incrementals: list[float] = []
    for run in range(args.runs):
        for kind, timer, out in (
            ("full", timed_backup, incrementals),
            ("service", timed_service_backup, service_incrementals),
        ):
            store = root / f"incr-{kind}-{run}"
            shutil.copytree(root / f"{kind}-{run}", store)
            seconds, doc = timer(rc, store)
            assert doc["segments_reused"] == doc["segments"] - 1, doc
            out.append(seconds)
    cp, durable_cp, data_cp, full, service, incr, service_incr = (
        statistics.median(x)
        for x in (cps, durable_cps, data_cps, fulls, services, incrementals, service_incrementals)
    )
    bk3 = recoverability_time(args.locations, args.backups, args.runs)
    shutil.rmtree(root, ignore_errors=True)
    print(
        f"{args.n:,} events: cp -r {cp:.3f} s, cp -r + fsync {durable_cp:.3f} s, cp of the data files "
        f"{data_cp:.3f} s; backup service {service:.3f} s ({service / cp:.2f}x cp -r, "
        f"{service / durable_cp:.2f}x cp -r + fsync), incremental after 1% {service_incr:.3f} s "
        f"({service_incr / service:.1%}); CLI in-process: full {full:.3f} s ({full / cp:.2f}x), incremental "
        f"{incr:.3f} s ({incr / full:.1%}); BK3 {args.locations} locations, {args.backups} backups: "
        f"{bk3 * 1000:.1f} ms"
    )
    figures = [
        Figure(f"full backup of {args.n:,} events / cp -r", service / cp, "x", "< 1.3", service / cp < 1.3),
        Figure(
            "incremental backup after 1% / full",
            service_incr / service,
            "x",
            "< 0.05",
            service_incr / service < 0.05,
        ),
        Figure(f"full backup of {args.n:,} events / cp -r + fsync", service / durable_cp, "x"),
        Figure(f"full backup of {args.n:,} events / cp of the data files", service / data_cp, "x"),
        Figure(f"`backup create` (CLI, in-process) of {args.n:,} events / cp -r", full / cp, "x"),
        Figure("`backup create` (CLI, in-process) incremental after 1% / full", incr / full, "x"),
        Figure(
            f"recoverability, {args.locations} locations, {args.backups} backups",
            bk3,
            "s",
            "< 0.2",
            bk3 < 0.2,
        ),
    ]
    write_figures(args.json, "backup", vars(args), figures)


if __name__ == "__main__":
    main()
