"""The real data plane on the test run's one Spark session (tests/spark_session.py), for tests that call it
directly: the service contract stories and the data plane's own tests."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from replctl.adapters.dataplane import Engine
from replctl.adapters.logstore import LogStore
from replctl.config import Settings


class SharedSessionEngine(Engine):
    """`Engine` whose jobs run on `session`; `settings` override the defaults of a bare command (e.g.
    `local_limit=0` to run every job on Spark)."""

    def __init__(self, store: LogStore, session: Any, home: Path, **settings: Any) -> None:
        base = Settings(
            db="",
            store=str(store.root),
            backup_store="",
            spark_master="local[2]",
            spark_remote=None,
            spark_conf=(),
            output="text",
            file_mode=0o600,
            home=home,  # unused: the session is given
            config_path=None,
        )
        super().__init__(store, replace(base, **settings))
        self._session = session

    def spark(self) -> Any:
        """The shared session, never another."""
        return self._session
