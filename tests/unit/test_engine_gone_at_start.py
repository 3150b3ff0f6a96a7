"""A session on the managed engine that has stopped (between the check that it answers and the session's first
call) fails within seconds, exit 6: the client's own retries last ten minutes, and a command that starts just
as the engine stops held its leases that long in silence."""

from __future__ import annotations

from pathlib import Path

import pytest
from pg import free_port

from replctl.adapters.spark import session
from replctl.errors import EnvironmentFailure


@pytest.mark.timeout(120)
def test_a_managed_engine_gone_before_the_session_options_are_set_fails_within_seconds(
    tmp_path: Path,
) -> None:
    port = free_port()  # nothing listens there: the engine stopped
    settings = session.SparkSettings(remote=f"sc://127.0.0.1:{port}", managed=True, home=tmp_path)
    with pytest.raises(EnvironmentFailure) as raised:
        session._build_connect(settings)
    assert raised.value.code == "spark-unreachable"
    assert str(raised.value) == f"cannot reach Spark Connect at sc://127.0.0.1:{port}: it does not answer"
    # The dead session is not left as pyspark's default, which the next session would be handed.
    from pyspark.sql.connect.session import SparkSession as RemoteSession

    assert RemoteSession.getActiveSession() is None
