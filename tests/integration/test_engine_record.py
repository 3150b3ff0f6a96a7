"""`engine stop` and `engine status` act on the server recorded under this home, never on another one.

A stand-in process carries a server's command line (its class and its port setting, as `engine start` launches
it) so that no JVM is needed: what is checked is how a recorded pid is told apart from a reused one.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from replctl.adapters.spark import server


@pytest.fixture
def other_homes_server() -> Iterator[subprocess.Popen[bytes]]:
    """A process whose command line is a server's bound to port 15095 (another home's engine)."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time; time.sleep(120)",
            "--conf",
            "spark.connect.grpc.binding.port=15095",
            "--class",
            server.SERVER_CLASS,
        ],
        start_new_session=True,
    )
    # Until the child has exec'd, /proc shows the parent's command line.
    deadline = time.monotonic() + 30
    while server.SERVER_CLASS.encode() not in Path(f"/proc/{proc.pid}/cmdline").read_bytes():
        assert time.monotonic() < deadline, "the stand-in server did not start"
        time.sleep(0.05)
    yield proc
    proc.kill()
    proc.wait()


def _record(home: Path, pid: int, port: int) -> None:
    home.mkdir(parents=True, exist_ok=True)
    record = {
        "address": f"sc://127.0.0.1:{port}",
        "pid": pid,
        "version": "4.3.0",
        "started_at": "2026-01-01T00:00:00+00:00",
        "master": "local[*]",
        "log": str(home / server.LOG),
    }
    (home / server.RECORD).write_text(json.dumps(record))


def test_a_stale_record_whose_pid_is_another_homes_server_stops_nothing(
    tmp_path: Path, other_homes_server: subprocess.Popen[bytes]
) -> None:
    home = tmp_path / "home"
    _record(home, other_homes_server.pid, 15094)
    assert not server.state(home).alive
    stopped = server.stop(home)
    assert stopped is not None and stopped.pid == other_homes_server.pid
    assert other_homes_server.poll() is None  # the other home's server still runs
    assert server.read_record(home) is None  # the stale record is forgotten


def test_the_recorded_server_is_stopped(tmp_path: Path, other_homes_server: subprocess.Popen[bytes]) -> None:
    home = tmp_path / "home"
    _record(home, other_homes_server.pid, 15095)
    assert server.state(home).alive
    server.stop(home)
    assert other_homes_server.wait(timeout=30) is not None
    assert server.read_record(home) is None
