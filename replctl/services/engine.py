"""The data plane a service uses: the log store and a lazily started Spark session."""

from __future__ import annotations

from typing import Any

from replctl.adapters.logstore import LogStore
from replctl.config import Settings


class Engine:
    """Store + Spark; Spark starts on the first job only (commands that need none never import pyspark)."""

    def __init__(self, store: LogStore, settings: Settings) -> None:
        self.store = store
        self.settings = settings

    def spark(self) -> Any:
        """The process-wide SparkSession for these settings."""
        from replctl.adapters.spark.session import SparkSettings, get_session

        return get_session(
            SparkSettings(
                master=self.settings.spark_master,
                remote=self.settings.spark_remote,
                conf=self.settings.spark_conf,
                home=self.settings.home,
            )
        )
