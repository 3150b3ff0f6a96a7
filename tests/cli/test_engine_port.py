"""`replctl engine start` on a port another program holds (issue 17): refused before anything starts.

The start used to launch a server that could not bind, wait until "its" port answered, which the other program's
did at once, and record that other program as this home's engine."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path


def test_engine_start_on_a_port_in_use_exits_6_with_a_hint_and_records_nothing(tmp_path: Path) -> None:
    env = {**os.environ, "REPLCTL_HOME": str(tmp_path / "home"), "NO_COLOR": "1"}
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "replctl", "engine", "start", "--port", str(port), "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 6, done.stderr
    doc = json.loads(done.stdout)
    assert doc["error"]["message"] == (
        f"cannot start the Spark engine: port {port} on 127.0.0.1 is in use by another program"
    )
    assert doc["error"]["hint"] == "choose a free port: replctl engine start --port N"
    assert not (tmp_path / "home" / "engine.json").exists()
    assert not (tmp_path / "home" / "engine.log").exists()  # no server was launched
