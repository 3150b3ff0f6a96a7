"""The story on a real Spark standalone cluster (a master and one worker on loopback), driven by `replctl`
processes with `--spark-master spark://...`: executors on the worker read and write the store, the driver in
each CLI process plans and commits, and the logs come out exactly as on `local[2]`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from spark_session import HOME

from cluster.cluster_scenario import EXPECTED_KEYS, run_story, stored_keys, subprocess_invoker
from cluster.spark_services import spark_env, standalone_cluster

pytestmark = [pytest.mark.slow, pytest.mark.spark]


@pytest.fixture(scope="module")
def master_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The module's cluster; stopped (process groups killed) when the module ends, however it ends."""
    with standalone_cluster(tmp_path_factory.mktemp("standalone")) as url:
        yield url


@pytest.fixture(scope="module")
def cluster_story(master_url: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The story run on the cluster, one `replctl` process per command."""
    root: Path = tmp_path_factory.mktemp("cluster-story")
    # The store is an absolute local path: the driver and the worker's executors share this machine.
    env = spark_env(
        REPLCTL_DB=f"sqlite:///{root / 'catalog.db'}",
        REPLCTL_STORE=str(root / "logs"),
        REPLCTL_HOME=str(HOME),
        NO_COLOR="1",
    )
    return run_story(subprocess_invoker(root, env, ["--spark-master", master_url]))


def test_the_story_on_a_standalone_cluster_stores_exactly_the_expected_events(
    cluster_story: dict[str, Any],
) -> None:
    for location, expected in EXPECTED_KEYS.items():
        assert stored_keys(cluster_story, location) == expected
    assert cluster_story["A"]["deleted_upto"] == 2
    assert cluster_story["verify"]["ok"] is True


def test_the_story_on_a_standalone_cluster_reads_back_the_same_as_on_local_spark(
    cluster_story: dict[str, Any], local_story: dict[str, Any]
) -> None:
    assert cluster_story == local_story
