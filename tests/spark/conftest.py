"""Fixtures of the Spark job tests; the session itself is the run-wide `spark` fixture (tests/spark_session.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from replctl.adapters.logstore import LogStore


@pytest.fixture
def store(tmp_path: Path) -> LogStore:
    """An empty local log store."""
    return LogStore(tmp_path / "logs")
