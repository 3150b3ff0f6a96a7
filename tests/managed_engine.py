"""`pytest --engine`: the in-process CLI (`clitool.Replctl`) runs every command against a managed engine.

The option starts one engine (`replctl engine start`) under a home of its own for the run and stops it at the
end; `Replctl` then gives no Spark master, so each command finds the engine itself, as an operator's would
(`adapters.dataplane.choose_spark`). Without the option the tests run on the shared local session. The slow pass
runs the scenario and CLI tests once more this way: their assertions on exact logs then hold on both.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import pytest

# Set for the run while the engine is up: the home `Replctl` points commands at.
ENGINE_HOME_VAR = "REPLCTL_TEST_ENGINE_HOME"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--engine",
        action="store_true",
        default=False,
        help="run the in-process CLI against a managed Spark engine (replctl engine start) instead of local Spark",
    )


def pytest_sessionstart(session: pytest.Session) -> None:
    if not session.config.getoption("--engine"):
        return
    home = tempfile.mkdtemp(prefix="replctl-test-engine-")
    done = _engine(home, "start", "--port", str(_free_port()))
    if done.returncode != 0:
        raise pytest.UsageError(f"--engine: the managed engine did not start:\n{done.stdout}{done.stderr}")
    os.environ[ENGINE_HOME_VAR] = home


def pytest_sessionfinish(session: pytest.Session) -> None:
    home = os.environ.pop(ENGINE_HOME_VAR, None)
    if home is not None:
        from replctl.adapters.spark.session import stop_session

        # The in-process Connect session first: stopping it releases its session on the server.
        stop_session()
        _engine(home, "stop")
        shutil.rmtree(home, ignore_errors=True)


def _engine(home: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPLCTL_")}
    return subprocess.run(
        [sys.executable, "-m", "replctl", "engine", *args],
        env={**env, "REPLCTL_HOME": home},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
