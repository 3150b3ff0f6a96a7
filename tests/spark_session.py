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
def _spark_run() -> Iterator[None]:
    """Stops the cached session once the run ends."""
    from replctl.adapters.spark.session import stop_session

    yield
    stop_session()


@pytest.fixture
def spark(_spark_run: None) -> Any:
    """The shared local session (small data: two cores, few partitions).

    Asked of the process-wide cache for each test: a CLI test that ran with other settings (`--spark-conf`)
    replaced the cached session, and a session held from before would be a stopped one.
    """
    from replctl.adapters.spark.session import SparkSettings, get_session

    return get_session(SparkSettings(master=MASTER, home=HOME))
