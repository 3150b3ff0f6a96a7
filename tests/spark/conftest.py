"""One local Spark session for the whole Spark test run (local[2], small data, real Parquet under tmp_path)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from replctl.adapters.logstore import LogStore
from replctl.adapters.spark.session import SparkSettings, get_session, stop_session


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The shared session.

    Test jobs are tiny, so the driver JVM runs with the quick C1 compiler only, and its class-data-sharing
    archive is kept in the system temp folder across runs (the first run writes it as it exits).
    """
    settings = SparkSettings(
        master="local[2]",
        home=Path(tempfile.gettempdir()) / "replctl-test-spark",
        conf=(("spark.sql.shuffle.partitions", "2"), ("spark.default.parallelism", "2")),
        java_options=("-XX:TieredStopAtLevel=1",),
    )
    session = get_session(settings)
    yield session
    stop_session()


@pytest.fixture
def store(tmp_path: Path) -> LogStore:
    """An empty local log store."""
    return LogStore(tmp_path / "logs")
