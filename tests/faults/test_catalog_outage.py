"""The catalog goes away and comes back (cli.md exit 6; architecture.md, Concurrency and faults).

A dedicated throwaway PostgreSQL server (not the session's shared one) is stopped under replctl: commands then
exit 6 with one line naming the catalog and why, never a traceback. One operation loses the server while it
holds its lease; after the restart the operator's re-run goes through at once (its holder's process is gone)
and converges.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from clitool import Replctl
from pg import ServerUnavailable, ThrowawayServer, find_server_binaries, unavailable
from sqlalchemy import create_engine, text

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


class Server:
    """A throwaway server that can be stopped and started again on the same port with its data."""

    def __init__(self, throwaway: ThrowawayServer) -> None:
        self.throwaway = throwaway
        self.url = throwaway.start().render_as_string(hide_password=False)

    def stop(self) -> None:
        done = self.throwaway._run("pg_ctl", "-D", str(self.throwaway.data), "-m", "fast", "-w", "stop")
        assert done.returncode == 0, done.stderr

    def start(self) -> None:
        t = self.throwaway
        options = f"-c listen_addresses=127.0.0.1 -p {t.port} -k {t.base} -c fsync=off"
        done = t._run("pg_ctl", "-D", str(t.data), "-l", str(t.log), "-o", options, "-w", "-t", "60", "start")
        assert done.returncode == 0, done.stderr


@pytest.fixture
def server() -> Iterator[Server]:
    bindir = find_server_binaries()
    if bindir is None:
        unavailable("no PostgreSQL server binaries to start a dedicated server")
    throwaway = None
    try:
        throwaway = ThrowawayServer(bindir)
        own = Server(throwaway)
    except (ServerUnavailable, OSError, subprocess.SubprocessError) as exc:
        if throwaway is not None:
            throwaway.stop()
        unavailable(str(exc))
    try:
        yield own
    finally:
        throwaway.stop()


def assert_clean_exit_6(out_code: int, stderr: str) -> None:
    assert out_code == 6, stderr
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert lines[0].startswith("error: catalog ") and "is unreachable" in lines[0], stderr
    assert all(line.startswith("hint: ") for line in lines[1:]), stderr


def wait_for_lease(url: str, resource: str, timeout: float = 60) -> None:
    engine = create_engine(url)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with engine.connect() as conn:
                found = conn.execute(
                    text("SELECT 1 FROM leases WHERE resource = :r AND released_at IS NULL"), {"r": resource}
                ).first()
            if found:
                return
            time.sleep(0.1)
        raise AssertionError(f"no lease on {resource} within {timeout} s")
    finally:
        engine.dispose()


def test_a_stopped_catalog_exits_6_in_one_line_and_a_rerun_after_restart_finishes(
    server: Server, tmp_path: Path
) -> None:
    rc = Replctl(tmp_path, db_url=server.url)
    rc("init")
    rc("location", "add", "A")
    rc("location", "add", "B")

    # An operation that holds its leases when the server goes away.
    env = {
        **os.environ,
        **rc.env,
        "REPLCTL_FAILPOINT": "operation.after-lease",
        "REPLCTL_FAILPOINT_MODE": "pause:2",
    }
    child = subprocess.Popen(
        [sys.executable, "-m", "replctl", "topology", "add", "A", "B"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for_lease(server.url, "topology")
    server.stop()
    _, err = child.communicate(timeout=120)
    assert_clean_exit_6(child.returncode, err)

    # While it is down, every command that needs it says so, in text and in JSON.
    for args in (("status",), ("topology", "add", "A", "B"), ("location", "add", "C")):
        out = rc(*args, expect=None)
        assert_clean_exit_6(out.code, out.stderr)
    doc = rc.json("status", expect=6)
    assert doc["ok"] is False
    assert doc["error"]["code"] == "catalog-unreachable"
    assert "\n" not in doc["error"]["message"]

    server.start()
    # The interrupted operation's process is gone, so its leases do not make the operator wait.
    rc("topology", "add", "A", "B")
    status = rc.json("status")
    assert [(c["source"], c["target"], c["state"]) for c in status["connections"]] == [("A", "B", "active")]
    kinds = [c["kind"] for c in rc.json("topology", "history")["changes"]]
    assert kinds.count("connection-added") == 1
    ops = rc.json("ops", "list")["operations"]
    interrupted = [op for op in ops if op["command"] == "topology add" and op["outcome"] == "failed"]
    assert len(interrupted) == 1
    assert interrupted[0]["error"]["code"] == "holder-died"
