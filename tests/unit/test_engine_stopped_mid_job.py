"""A job on the managed engine that fails because `replctl engine stop` landed while it ran
(`adapters.spark.session.spark_failure`, `engine_gone`).

The server answers such a job itself, with its stopped SparkContext's error, not with a transport error: it was
reported as "replication pass failed in Spark: (java.lang.IllegalStateException) Cannot call methods on a stopped
SparkContext." with no hint, where an engine that stopped answering says so and that a re-run resumes. A Spark
failure on an engine that is still up stays Spark's.

A server restarted on the same port between two jobs of one command is another server: the session of the one
it connected to is gone with it (`EngineRecord.same_server`). It was taken for the same engine, being up at the
same address, and its refusal of the old session reported as a failure in Spark, without the re-run hint.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from pg import free_port
from pyspark.errors import PySparkRuntimeError
from pyspark.errors.exceptions.connect import SparkConnectGrpcException

from replctl.adapters.spark import server, session
from replctl.errors import EnvironmentFailure

# What the engine answered in the operator's trial: the server's SparkContext.assertNotStopped, as pyspark's
# Connect client raises it (its text as the client shows it, the server's stack cut short).
STOPPED_CONTEXT = (
    "(java.lang.IllegalStateException) Cannot call methods on a stopped SparkContext.\n"
    "This stopped SparkContext was created at:\n\n"
    "org.apache.spark.sql.connect.service.SparkConnectServer$.main(SparkConnectServer.scala:37)\n\n"
    "The currently active SparkContext was created at:\n\n(No active SparkContext.)\n"
)
# A failure that is the job's own, whatever the engine's state.
DIVIDE_BY_ZERO = (
    "[DIVIDE_BY_ZERO] Division by zero. Use `try_divide` to tolerate divisor being 0 and return NULL instead. "
    'If necessary set "spark.sql.ansi.enabled" to "false" to bypass this error. SQLSTATE: 22012'
)
ENGINE_LOST_HINT = (
    "check the engine with `replctl engine status` (and its log); re-run the command: it resumes where this "
    "one stopped, on local Spark while the engine is down"
)


def _answer(text: str) -> SparkConnectGrpcException:
    return SparkConnectGrpcException(message=text, grpc_status_code=grpc.StatusCode.INTERNAL)


def _on_the_engine(monkeypatch: pytest.MonkeyPatch, home: Path, address: str) -> None:
    """This process's session as `get_session` leaves it on the managed engine recorded under `home` (the
    record it connected to, read as `get_session` reads it)."""
    connected = server.read_record(home)
    monkeypatch.setattr(session, "_connect", (address, True))
    monkeypatch.setattr(session, "_engine_at", (home, address, connected))
    monkeypatch.setattr(session, "_failure_log", home / "engine.log")


def _record(home: Path, address: str, pid: int, started_at: str = "2026-01-01T00:00:00+00:00") -> None:
    home.mkdir(parents=True, exist_ok=True)
    record = {
        "address": address,
        "pid": pid,
        "version": server.client_version(),
        "started_at": started_at,
        "master": "local[*]",
        "log": str(home / "engine.log"),
    }
    (home / "engine.json").write_text(json.dumps(record))


def _listen(port: int) -> subprocess.Popen[bytes]:
    """A process that is, to `server.state`, the engine on `port`: its command line names the server class and
    its port, and the port answers (once this returns)."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import socket, sys, time\n"
            "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
            "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(); print(flush=True)\n"
            "time.sleep(120)",
            str(port),
            server.SERVER_CLASS,
            f"spark.connect.grpc.binding.port={port}",
        ],
        stdout=subprocess.PIPE,
    )
    assert process.stdout is not None
    process.stdout.readline()  # listening
    return process


def _end(process: subprocess.Popen[bytes]) -> None:
    process.kill()
    process.wait()


@pytest.fixture
def listening_server() -> Iterator[tuple[str, int]]:
    """A stand-in engine on a free port: its address and pid."""
    port = free_port()
    process = _listen(port)
    try:
        yield f"sc://127.0.0.1:{port}", process.pid
    finally:
        _end(process)


@pytest.fixture
def engine_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, listening_server: tuple[str, int]
) -> tuple[Path, str]:
    """This process on a recorded engine that is up: its home and address."""
    address, pid = listening_server
    home = tmp_path / "home"
    _record(home, address, pid)
    _on_the_engine(monkeypatch, home, address)
    return home, address


def _failure(answer: Exception) -> EnvironmentFailure:
    with pytest.raises(EnvironmentFailure) as raised, session.spark_failures("replication pass"):
        raise answer
    return raised.value


def test_the_engine_answering_with_its_stopped_context_is_the_engine_lost_with_its_hint(
    engine_up: tuple[Path, str],
) -> None:
    # The stop has stopped the server's SparkContext; its process and port may still be there.
    home, address = engine_up
    failure = _failure(_answer(STOPPED_CONTEXT))
    assert (str(failure), failure.code, failure.hint) == (
        f"replication pass failed: the managed Spark engine at {address} stopped answering "
        f"(Spark's log: {home / 'engine.log'})",
        "spark",
        ENGINE_LOST_HINT,
    )


def test_a_spark_failure_once_the_engine_is_stopped_is_the_engine_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    address = f"sc://127.0.0.1:{free_port()}"
    # `engine stop` forgot the engine: no record.
    _on_the_engine(monkeypatch, home, address)
    failure = _failure(_answer(DIVIDE_BY_ZERO))
    assert str(failure).startswith(f"replication pass failed: the managed Spark engine at {address} stopped")
    assert failure.hint == ENGINE_LOST_HINT


def test_a_spark_failure_waits_for_an_engine_stop_under_way(engine_up: tuple[Path, str]) -> None:
    home, _ = engine_up
    # `engine stop` holds the home's engine lock while the server shuts down, then forgets the record.
    stop = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time\n"
            "h = open(sys.argv[1] + '/engine.lock', 'a'); fcntl.flock(h, fcntl.LOCK_EX); print(flush=True)\n"
            "time.sleep(1.5); os.unlink(sys.argv[1] + '/engine.json')",
            str(home),
        ],
        stdout=subprocess.PIPE,
    )
    assert stop.stdout is not None
    stop.stdout.readline()  # the stop holds the lock
    started = time.monotonic()
    failure = _failure(_answer(DIVIDE_BY_ZERO))
    stop.wait()
    assert failure.hint == ENGINE_LOST_HINT
    assert time.monotonic() - started < 10


def test_a_spark_failure_on_an_engine_that_is_up_stays_spark_s(engine_up: tuple[Path, str]) -> None:
    home, _ = engine_up
    failure = _failure(_answer(DIVIDE_BY_ZERO))
    assert str(failure) == (
        f"replication pass failed in Spark: {DIVIDE_BY_ZERO} (Spark's log: {home / 'engine.log'})"
    )
    assert failure.hint is None


# What a server restarted on the session's address answers the session begun on the one before it (Spark's
# error-conditions.json): the server's own answer, not a transport error.
SESSION_CHANGED = (
    "[INVALID_HANDLE.SESSION_CHANGED] The handle 2f7c1e4a-9b3d-4c5e-8f6a-1b2c3d4e5f60 is invalid. "
    "The existing Spark server driver instance has restarted. Please reconnect. SQLSTATE: 08003"
)


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(_answer(SESSION_CHANGED), id="the-server-refuses-the-session"),
        # What the next job got in the trial (tests/cluster/test_engine.py): the client had closed the session
        # on the new server's refusal, and the job's DataFrame found none.
        pytest.param(
            PySparkRuntimeError(errorClass="NO_ACTIVE_SESSION", messageParameters={}),
            id="the-client-closed-the-session",
        ),
    ],
)
def test_a_server_restarted_on_the_same_port_between_two_jobs_is_the_engine_lost_with_its_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: Exception
) -> None:
    home = tmp_path / "home"
    port = free_port()
    address = f"sc://127.0.0.1:{port}"
    first = _listen(port)
    try:
        _record(home, address, first.pid, started_at="2026-01-01T00:00:00+00:00")
        _on_the_engine(monkeypatch, home, address)  # the command's first job ran on this one
    finally:
        _end(first)
    # `engine stop` and `engine start` on the same port before the command's second job.
    second = _listen(port)
    try:
        _record(home, address, second.pid, started_at="2026-01-01T00:05:00+00:00")
        assert server.state(home).up
        failure = _failure(answer)
    finally:
        _end(second)
    assert (str(failure), failure.code, failure.hint) == (
        f"replication pass failed: the managed Spark engine at {address} stopped answering "
        f"(Spark's log: {home / 'engine.log'})",
        "spark",
        ENGINE_LOST_HINT,
    )


def _engine_record(pid: int = 4242, started_at: str = "2026-01-01T00:00:00+00:00") -> server.EngineRecord:
    return server.EngineRecord(
        address="sc://127.0.0.1:15002",
        pid=pid,
        version="4.0.0",
        started_at=started_at,
        master="local[*]",
        log="/home/engine.log",
    )


def test_a_record_read_again_is_the_same_server() -> None:
    assert _engine_record().same_server(_engine_record())


def test_a_restart_with_a_new_pid_is_another_server() -> None:
    assert not _engine_record(pid=4242).same_server(_engine_record(pid=4343))


def test_a_restart_that_reused_the_pid_is_another_server_by_its_start_time() -> None:
    later = _engine_record(started_at="2026-01-01T00:05:00+00:00")
    assert not _engine_record().same_server(later)


def test_another_home_s_server_with_the_same_pid_and_start_is_another_server() -> None:
    other = server.EngineRecord(**{**_engine_record().__dict__, "address": "sc://127.0.0.1:15003"})
    assert not _engine_record().same_server(other)
