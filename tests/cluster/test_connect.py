"""The story through a Spark Connect server (`--spark-remote sc://...`): the jobs run on the server's Spark,
each `replctl` process is only a Connect client, and the logs come out exactly as on `local[2]`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from spark_session import HOME

from cluster.cluster_scenario import EXPECTED_KEYS, run_story, stored_keys, subprocess_invoker
from cluster.spark_services import connect_server, spark_env

pytestmark = [pytest.mark.slow, pytest.mark.spark]

# The Connect client accepts only the save modes append, overwrite, error and ignore; the jobs write with
# `mode("errorifexists")`, the classic alias of `error`, so every job that writes is refused on Connect.


@pytest.fixture(scope="module")
def remote_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The module's Connect server; stopped (process group killed) when the module ends, however it ends."""
    with connect_server(tmp_path_factory.mktemp("connect")) as url:
        yield url


@pytest.fixture(scope="module")
def connect_story(remote_url: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The story run through the Connect server, one `replctl` process per command."""
    root: Path = tmp_path_factory.mktemp("connect-story")
    env = spark_env(
        REPLCTL_DB=f"sqlite:///{root / 'catalog.db'}",
        REPLCTL_STORE=str(root / "logs"),
        REPLCTL_HOME=str(HOME),
        NO_COLOR="1",
    )
    return run_story(subprocess_invoker(root, env, ["--spark-remote", remote_url]))


def test_the_story_through_spark_connect_stores_exactly_the_expected_events(
    request: pytest.FixtureRequest,
) -> None:
    # Requested inside the test, so that the defect above is reported as the expected failure it is.
    story: dict[str, Any] = request.getfixturevalue("connect_story")
    for location, expected in EXPECTED_KEYS.items():
        assert stored_keys(story, location) == expected
    assert story["verify"]["ok"] is True


def test_the_story_through_spark_connect_reads_back_the_same_as_on_local_spark(
    request: pytest.FixtureRequest, local_story: dict[str, Any]
) -> None:
    assert request.getfixturevalue("connect_story") == local_story
