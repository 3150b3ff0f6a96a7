"""The real data plane on the test run's one Spark session (tests/spark_session.py), for tests that call it
directly: the service contract stories and the data plane's own tests."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from replctl.adapters.dataplane import Engine
from replctl.adapters.logstore import LogStore
from replctl.config import Settings


def bare_settings(*, db: str, store: str, home: Path, **settings: Any) -> Settings:
    """The settings of a bare command (no configuration file, no options) on catalog `db` and store `store`;
    `settings` override the rest."""
    base = Settings(
        db=db,
        store=store,
        backup_store="",
        spark_master="local[2]",
        spark_remote=None,
        spark_conf=(),
        output="text",
        file_mode=0o600,
        home=home,
        config_path=None,
    )
    return replace(base, **settings)


class SharedSessionEngine(Engine):
    """`Engine` whose jobs run on `session`; `settings` override the defaults of a bare command (e.g.
    `local_limit=0` to run every job on Spark)."""

    def __init__(self, store: LogStore, session: Any, home: Path, **settings: Any) -> None:
        # `home` unused: the session is given.
        super().__init__(store, bare_settings(db="", store=str(store.root), home=home, **settings))
        self._session = session

    def spark(self) -> Any:
        """The shared session, never another."""
        return self._session
