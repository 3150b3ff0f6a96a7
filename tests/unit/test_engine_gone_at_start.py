"""A session on the managed engine that has stopped (between the check that it answers and the session's first
call) fails within seconds, exit 6: the client's own retries last ten minutes, and a command that starts just
as the engine stops held its leases that long in silence.

Run in a fresh interpreter: pyspark refuses a Spark Connect session in a process that holds a classic one, as the
test session's other tests do."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pg import free_port

PROBE = """
import json, sys
from pathlib import Path
from pyspark.sql.connect.session import SparkSession as RemoteSession
from replctl.adapters.spark import session
from replctl.errors import EnvironmentFailure

settings = session.SparkSettings(remote=sys.argv[1], managed=True, home=Path(sys.argv[2]))
try:
    session._build_connect(settings)
except EnvironmentFailure as failure:
    print(json.dumps({"code": failure.code, "message": str(failure),
                      "default_left": RemoteSession.getActiveSession() is not None}))
"""


def test_a_managed_engine_gone_before_the_session_options_are_set_fails_within_seconds(
    tmp_path: Path,
) -> None:
    address = f"sc://127.0.0.1:{free_port()}"  # nothing listens there: the engine stopped
    done = subprocess.run(
        [sys.executable, "-c", PROBE, address, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,  # the client's own retries would take ten minutes
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "code": "spark-unreachable",
        "message": f"cannot reach Spark Connect at {address}: it does not answer",
        # The dead session is not left as pyspark's default, which the next session would be handed.
        "default_left": False,
    }
