"""Fixtures of the cluster tests: the reference outcome of the story on the run's local session.

Each test module starts the Spark service it needs itself, once per module (spark_services.py); the reference
is computed once per run, in process, on the shared `local[2]` session, since it is the same for every module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from clitool import Replctl

from cluster.cluster_scenario import in_process_invoker, run_story


@pytest.fixture(scope="session")
def local_story(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What the story reads back when it runs on the run's `local[2]` session."""
    root: Path = tmp_path_factory.mktemp("local-story")
    return run_story(in_process_invoker(Replctl(root)))
