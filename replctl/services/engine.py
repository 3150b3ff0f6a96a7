"""The data plane a service uses: the log store and a lazily started Spark session, on the Spark it chose."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from replctl.adapters.logstore import LogStore
from replctl.config import Settings
from replctl.errors import EnvironmentFailure


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


class Engine:
    """Store + Spark; Spark starts on the first job only (commands that need none never import pyspark)."""

    def __init__(self, store: LogStore, settings: Settings, *, progress: bool = False) -> None:
        self.store = store
        self.settings = settings
        self._progress_wanted = progress
        self._progress: Any = None
        self._choice: SparkChoice | None = None

    def spark(self) -> Any:
        """The process-wide SparkSession for these settings (and the progress display, when wanted)."""
        from replctl.adapters.spark.session import SparkSettings, get_session

        if self._choice is None:
            self._choice = choose_spark(self.settings)
            if self._choice.warning:
                # One line, replctl's own: the command goes on as it would without an engine.
                print(self._choice.warning, file=sys.stderr)
        choice = self._choice
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

    def close(self) -> None:
        """End the progress display; the session stays for reuse in this process."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
