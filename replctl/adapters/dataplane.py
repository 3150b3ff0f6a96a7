"""The real data plane (the `services.ports.DataPlane` port): the log store and the Spark jobs, run on a lazily
started Spark session, on the Spark the command chose.

Built only by the composition root (`replctl.bootstrap` / the CLI's context); the services see the port.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from replctl.adapters.logstore import LogStore
from replctl.config import Settings
from replctl.core.jobs import (
    InvariantViolation,
    PassResult,
    PassSpec,
    RewriteResult,
    SegmentRewrite,
    SegmentStats,
)
from replctl.core.model import Segment, SegmentFile
from replctl.core.recovery import FileRead
from replctl.errors import EnvironmentFailure

# Spark settings that change the Parquet files Spark writes (`Engine._local_limit`).
_PARQUET_WRITER_SETTINGS = ("spark.sql.parquet.", "spark.hadoop.parquet.")


@dataclass(frozen=True)
class SparkChoice:
    """Which Spark a command uses and why (`config show`), plus a one-line warning when it fell back."""

    master: str
    remote: str | None
    why: str
    warning: str | None = None
    managed: bool = False  # `remote` is the managed engine


def choose_spark(settings: Settings) -> SparkChoice:
    """`--spark-master` / `--spark-remote` (flag, environment or config file) first; else the managed engine
    while it is up (`replctl engine start`); else local Spark.

    A recorded engine that is gone (stale pid, refused connection) gives a warning and local Spark; one whose
    Spark version differs from the client's exits 6 with the fix, as a Connect session would fail obscurely.
    """
    for name in ("spark_remote", "spark_master"):
        origin = settings.origins.get(name)
        if origin is not None and origin.source != "default" and origin.value:
            return SparkChoice(settings.spark_master, settings.spark_remote, f"{name} from {origin.source}")
    from replctl.adapters.spark import server

    found = server.state(settings.home)
    if found.record is None:
        return SparkChoice(settings.spark_master, None, "no managed engine: local Spark")
    if not found.up:
        reason = "its process is gone" if not found.alive else "it refuses connections"
        return SparkChoice(
            settings.spark_master,
            None,
            "managed engine down: local Spark",
            warning=f"warning: the managed Spark engine at {found.record.address} is down ({reason}); "
            "running on local Spark (replctl engine start restarts it)",
        )
    if found.record.version != server.client_version():
        raise EnvironmentFailure(
            f"the managed Spark engine runs Spark {found.record.version}, this replctl's client is "
            f"{server.client_version()}",
            code="engine-version",
            hint="restart it with this installation: replctl engine stop && replctl engine start",
        )
    return SparkChoice(
        settings.spark_master, found.record.address, "managed engine (replctl engine start)", managed=True
    )


class SparkChooser:
    """The Spark of one command, chosen on its first job (`choose_spark`) and then kept: every data plane the
    command opens (the live log's, a backup's copies') shares it, so a managed engine that is down is one
    warning on stderr, not one per data plane."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._choice: SparkChoice | None = None

    def choice(self) -> SparkChoice:
        """The command's Spark, its fall-back warning printed the first time."""
        if self._choice is None:
            self._choice = choose_spark(self.settings)
            if self._choice.warning:
                # One line, replctl's own: the command goes on as it would without an engine.
                print(self._choice.warning, file=sys.stderr)
        return self._choice


class Engine:
    """Store + Spark; Spark starts on the first job only (commands that need none never import pyspark).

    Implements `services.ports.DataPlane`: each job method imports its Spark module when called, so a command
    that runs no job never imports pyspark (architecture.md).
    """

    def __init__(
        self,
        store: LogStore,
        settings: Settings,
        *,
        progress: bool = False,
        chooser: SparkChooser | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self._progress_wanted = progress
        self._progress: Any = None
        # Shared with the command's other data planes (`SparkChooser`); a plane of its own otherwise.
        self._chooser = chooser if chooser is not None else SparkChooser(settings)

    def spark(self) -> Any:
        """The process-wide SparkSession for these settings (and the progress display, when wanted)."""
        from replctl.adapters.spark.session import SparkSettings, get_session

        choice = self._chooser.choice()
        session = get_session(
            SparkSettings(
                master=choice.master,
                remote=choice.remote,
                conf=self.settings.spark_conf,
                home=self.settings.home,
                managed=choice.managed,
            )
        )
        if self._progress_wanted and self._progress is None:
            from replctl.adapters.spark.progress import StageProgress

            self._progress = StageProgress(session).start()
        return session

    @contextmanager
    def _step(self, text: str) -> Iterator[Any]:
        """The session, its jobs described by `text` while the block runs: the progress line and the Spark
        UI name the replctl step ("replicate A→B: reading A, writing B"), not a call site (issue 18)."""
        from replctl.adapters.spark.progress import described

        session = self.spark()
        with described(session, text, self._progress):
            yield session

    def close(self) -> None:
        """End the progress display; the session stays for reuse in this process."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def record_files(self, relative: str) -> tuple[SegmentFile, ...] | None:
        """The inventory of a written segment that its catalog row records (DR0)."""
        from replctl.adapters.logstore.inventory import record_files

        return record_files(self.store, relative)

    def append_events(
        self,
        location: str,
        *,
        events: list[dict[str, Any]] | None = None,
        parquet_path: str | None = None,
        generate: int | None = None,
        seed: int = 0,
        start_seq: int,
        cvv: Mapping[str, int],
        out_rel: str,
    ) -> SegmentStats:
        """Append new local events (EM1): a small input on a local store without a JVM (`logstore.writer`, the
        same segment as the Spark job's), anything else with Spark."""
        from replctl.adapters.logstore.writer import append_local

        if self._writes_locally(events, parquet_path, generate):
            return append_local(
                self.store,
                location,
                events=events,
                parquet_path=None if parquet_path is None else Path(parquet_path),
                start_seq=start_seq,
                cvv=cvv,
                out_rel=out_rel,
            )
        from replctl.adapters.spark import jobs
        from replctl.adapters.spark.paths import literal_path

        with self._step(f"append to {location}") as spark:
            return jobs.append_events(
                spark,
                self.store,
                location,
                events=events,
                # The operator names one file or folder: Spark must not read it as a glob pattern (issue 19).
                parquet_path=None if parquet_path is None else literal_path(parquet_path),
                generate=generate,
                seed=seed,
                start_seq=start_seq,
                cvv=cvv,
                out_rel=out_rel,
            )

    def _local_limit(self) -> int:
        """`local_limit`, or 0 when a Spark setting changes how Parquet is written (its timestamp type, its
        codec): the JVM-free writers write Spark's defaults, so such a store's segments come from Spark."""
        if any(key.startswith(_PARQUET_WRITER_SETTINGS) for key, _ in self.settings.spark_conf):
            return 0
        return self.settings.local_limit

    def _writes_locally(
        self, events: list[dict[str, Any]] | None, parquet_path: str | None, generate: int | None
    ) -> bool:
        """Up to `local_limit` events (`config`) from `--event`, a `.jsonl` file or one Parquet file, on a local
        store; `--generate` and folders stay Spark's."""
        from replctl.adapters.logstore.writer import local_parquet_rows

        limit = self._local_limit()
        if not self.store.is_local or generate is not None or limit <= 0:
            return False
        if parquet_path is not None:
            rows = local_parquet_rows(Path(parquet_path))
            return rows is not None and rows <= limit
        return len(events or ()) <= limit

    def read_log(
        self, segments: Sequence[Segment], *, from_seq: int = 0, limit: int | None = None
    ) -> Iterator[dict[str, Any]]:
        """The stored events from `from_seq` in seq order; on a local store one segment at a time (no JVM, a
        long log is never held whole), else one Spark job that takes the limit itself."""
        if not segments:
            return
        if self.store.is_local:
            from replctl.adapters.logstore.reader import read_local

            for segment in segments:
                yield from read_local(self.store, [segment], from_seq=from_seq)
            return
        from replctl.adapters.spark import jobs

        with self._step(f"read {_named(segments)}") as spark:
            yield from jobs.read_log(spark, self.store, segments, from_seq=from_seq, limit=limit)

    def verify_log(
        self,
        segments: Sequence[Segment],
        *,
        seq: int,
        cvv: Mapping[str, int],
        dvv: Mapping[str, int],
        baseline: Mapping[str, int],
        described_by: str = "the catalog",
    ) -> list[InvariantViolation]:
        """I1–I4 and I7 of one stored log; see `adapters.spark.verify.verify_log`."""
        from replctl.adapters.spark import verify

        with self._step(f"verify {_named(segments)}") as spark:
            return verify.verify_log(
                spark,
                self.store,
                [s.path for s in segments],
                seq=seq,
                cvv=cvv,
                dvv=dvv,
                baseline=baseline,
                segments_meta=segments,
                described_by=described_by,
            )

    def replicate_pass(self, spec: PassSpec) -> PassResult:
        """One replication pass X→Y (REP1): a small unfiltered one on a local store without a JVM
        (`logstore.localpass`), any other as a Spark job (`adapters.spark.jobs.replicate_pass`)."""
        from replctl.adapters.logstore import localpass

        if localpass.runs_locally(self.store, spec, self._local_limit()):
            return localpass.replicate_pass(self.store, spec)
        from replctl.adapters.spark import jobs

        with self._step(
            f"replicate {spec.source}→{spec.target}: reading {spec.source}, writing {spec.target}"
        ) as spark:
            return jobs.replicate_pass(spark, self.store, spec)

    def filter_failure(
        self,
        segments: Sequence[Segment],
        progress: int,
        filter_sql: str,
        target_cvv: Mapping[str, int] | None = None,
        *,
        admission: Sequence[str] = (),
    ) -> str | None:
        """The first line of Spark's error when `filter_sql` fails on the events after `progress` (those CF1
        does not skip into `target_cvv`, when given, and with `admission`, up to RFC2's block), else None."""
        from replctl.adapters.spark.filtercheck import filter_failure

        with self._step(f"check the filter on {_named(segments)}") as spark:
            return filter_failure(
                spark, self.store, segments, progress, filter_sql, target_cvv, admission=admission
            )

    def first_needed(
        self,
        segments: Sequence[Segment],
        *,
        upto: int,
        targets: Mapping[str, tuple[int, Mapping[str, int]]],
    ) -> dict[str, int | None]:
        """For each target: the smallest seq ≤ `upto` after its progress it does not cover (DEL3)."""
        from replctl.adapters.spark.deletion import first_needed

        with self._step(f"delete at {_named(segments)}: what the targets still need (DEL3)") as spark:
            return first_needed(spark, self.store, segments, upto=upto, targets=targets)

    def dropped_lub(self, segment: Segment, *, upto: int) -> dict[str, int]:
        """DEL2 for a dry run: the LUB of what a rewrite of `segment` at `upto` drops."""
        from replctl.adapters.spark.deletion import dropped_lub

        with self._step(f"delete at {segment.location}: what a rewrite would drop (DEL2)") as spark:
            return dropped_lub(spark, self.store, segment, upto=upto)

    def rewrite_from(
        self,
        segment: Segment,
        keep_from_seq: int,
        out_rel: str,
        *,
        keys: Sequence[str] | None = None,
        identity_origins: Sequence[str] = (),
    ) -> RewriteResult:
        """Rewrite the segment that straddles a deletion cut (DEL1)."""
        from replctl.adapters.spark.jobs import rewrite_from

        with self._step(f"delete at {segment.location}: rewriting from seq {keep_from_seq}") as spark:
            return rewrite_from(
                spark,
                self.store,
                segment,
                keep_from_seq,
                out_rel,
                keys=keys,
                identity_origins=identity_origins,
            )

    def last_seq_emitted_before(self, segments: Sequence[Segment], cutoff: datetime) -> int | None:
        """The last seq of the longest prefix of events all emitted before `cutoff`."""
        from replctl.adapters.spark.deletion import last_seq_emitted_before

        with self._step(f"delete at {_named(segments)}: events emitted before the cutoff") as spark:
            return last_seq_emitted_before(spark, self.store, segments, cutoff)

    def prune_log(
        self,
        rewrites: Sequence[SegmentRewrite],
        *,
        key: str,
        keys: Sequence[str],
        identity_origins: Sequence[str] = (),
    ) -> list[SegmentStats | None]:
        """RET2 on one log; see `adapters.spark.prune.prune_log`."""
        from replctl.adapters.spark.prune import prune_log

        with self._step(f"prune clock {key}: rewriting {len(rewrites)} segment(s)") as spark:
            return prune_log(
                spark, self.store, rewrites, key=key, keys=keys, identity_origins=identity_origins
            )

    def census(self, segments: Sequence[Segment]) -> dict[str, dict[str, FileRead]]:
        """DR0: what the store still holds of `segments`; see `adapters.spark.recovery.census`."""
        from replctl.adapters.spark.recovery import census

        with self._step(f"recover {_named(segments)}: reading what the store holds") as spark:
            return census(spark, self.store, segments)

    def truncate_below(
        self,
        segment: Segment,
        keep_below: int,
        out_rel: str,
        *,
        keys: Sequence[str],
        identity_origins: Sequence[str] = (),
    ) -> SegmentStats | None:
        """DR1: the survivors of a damaged segment; see `adapters.spark.recovery.truncate_below`."""
        from replctl.adapters.spark.recovery import truncate_below

        with self._step(f"recover {segment.location}: keeping the events below seq {keep_below}") as spark:
            return truncate_below(
                spark,
                self.store,
                segment,
                keep_below,
                out_rel,
                keys=keys,
                identity_origins=identity_origins,
            )

    def survivors_below(self, segment: Segment, keep_below: int) -> SegmentStats | None:
        """DR1 on paper: what `truncate_below` would keep; see `adapters.spark.recovery.survivors_below`."""
        from replctl.adapters.spark.recovery import survivors_below

        return survivors_below(self.spark(), self.store, segment, keep_below)

    def unheld(
        self,
        segments: Sequence[Segment],
        *,
        seq_from: int,
        seq_below: int | None,
        elsewhere: Sequence[Segment],
        origin: str | None = None,
    ) -> dict[str, list[int]]:
        """DR0, RET1: what only `segments` store; see `adapters.spark.holding.unheld`."""
        from replctl.adapters.spark.holding import unheld

        with self._step(f"{_named(segments)}: finding the events no other location stores") as spark:
            return unheld(
                spark,
                self.store,
                segments,
                seq_from=seq_from,
                seq_below=seq_below,
                elsewhere=elsewhere,
                origin=origin,
            )

    def origin_times(
        self, segments: Sequence[Segment], origin: str, *, above: int, upto: int, seq_below: int | None = None
    ) -> set[int]:
        """DR0's report: the stored origin times of `origin`; see `adapters.spark.holding.origin_times`."""
        from replctl.adapters.spark.holding import origin_times

        with self._step(f"{_named(segments)}: reading the stored events of {origin}") as spark:
            return origin_times(
                spark, self.store, segments, origin, above=above, upto=upto, seq_below=seq_below
            )

    def cut_files(self, segment: Segment, from_seq: int) -> None:
        """`drill disaster`; see `adapters.logstore.drill.cut_files` (local files, no Spark)."""
        from replctl.adapters.logstore.drill import cut_files

        cut_files(self.store, segment, from_seq)

    def stored_from(self, segment: Segment, from_seq: int) -> bool:
        """`drill disaster`; see `adapters.logstore.drill.stored_from` (local files, no Spark)."""
        from replctl.adapters.logstore.drill import stored_from

        return stored_from(self.store, segment, from_seq)

    def compact(
        self,
        segments: Sequence[Segment],
        out_rel: str,
        *,
        keys: Sequence[str] | None = None,
        identity_origins: Sequence[str] = (),
    ) -> SegmentStats:
        """Merge segments into one at `out_rel` (compaction)."""
        from replctl.adapters.spark.jobs import compact

        with self._step(f"compact {_named(segments)}") as spark:
            return compact(spark, self.store, segments, out_rel, keys=keys, identity_origins=identity_origins)


def _named(segments: Sequence[Segment]) -> str:
    """The location whose segments a step reads, for its description."""
    names = sorted({s.location for s in segments})
    return ", ".join(names) if names else "an empty log"
