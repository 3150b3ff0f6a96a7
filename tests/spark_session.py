"""The one Spark session of a test run, shared by the Spark job tests and every in-process CLI invocation.

The CLI builds its session from its settings (`REPLCTL_SPARK_MASTER`, `REPLCTL_HOME`); the harness in
`clitool.py` sets exactly these, so `get_session` finds this session in its cache instead of starting another.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

MASTER = "local[2]"
# The class-data-sharing archive lives here across runs (the first run writes it as it exits).
HOME = Path(tempfile.gettempdir()) / "replctl-test-spark"


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The shared local session (small data: two cores, few partitions)."""
    from replctl.adapters.spark.session import SparkSettings, get_session, stop_session

    yield get_session(SparkSettings(master=MASTER, home=HOME))
    stop_session()
