"""The data plane a service uses: the log store and a lazily started Spark session."""

from __future__ import annotations

from typing import Any

from replctl.adapters.logstore import LogStore
from replctl.config import Settings


class Engine:
    """Store + Spark; Spark starts on the first job only (commands that need none never import pyspark)."""

    def __init__(self, store: LogStore, settings: Settings, *, progress: bool = False) -> None:
        self.store = store
        self.settings = settings
        self._progress_wanted = progress
        self._progress: Any = None

    def spark(self) -> Any:
        """The process-wide SparkSession for these settings (and the progress display, when wanted)."""
        from replctl.adapters.spark.session import SparkSettings, get_session

        session = get_session(
            SparkSettings(
                master=self.settings.spark_master,
                remote=self.settings.spark_remote,
                conf=self.settings.spark_conf,
                home=self.settings.home,
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
