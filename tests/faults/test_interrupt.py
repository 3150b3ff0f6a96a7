"""Ctrl-C during a Spark job (issue 18): one line, exit 130, the journal says `interrupted`, no py4j or Java
traceback, nothing committed after the last journalled step, the leases released, and the re-run resumes
(REP3). SIGTERM (systemd, `timeout`, a container stop) is handled the same way, with exit 143.

The CLI runs in a child process, as an operator's would, and gets a real signal. During a Spark job no clock
decides when: Spark's event log (written uncompressed into the test's folder) records `SparkListenerJobStart`
when the job starts, and the test waits for that line. Between two steps the command waits at a failpoint's
FIFO (`REPLCTL_FAILPOINT_MODE=fifo:...`), which the test holds open while it sends the signal.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from clitool import Replctl
from sqlalchemy import create_engine, text

EVENTS = 100_000
START_TIMEOUT_S = 180


def job_started(events: Path) -> bool:
    """Whether Spark's event log under `events` records a started job."""
    return any(b"SparkListenerJobStart" in path.read_bytes() for path in events.rglob("*") if path.is_file())


def held_leases(rc: Replctl) -> list[str]:
    """The resources whose lease is held (not released) in the catalog, whatever their holder."""
    engine = create_engine(rc.db_url)
    try:
        with engine.connect() as conn:
            return [r for (r,) in conn.execute(text("SELECT resource FROM leases WHERE released_at IS NULL"))]
    finally:
        engine.dispose()


def start(rc: Replctl, args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    """`replctl ARGS` in a child process of its own session (its driver JVM joins it), as an operator runs it."""
    return subprocess.Popen(
        [sys.executable, "-m", "replctl", *args],
        env={**os.environ, **rc.env, **env},
        cwd=rc.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def assert_journalled_interrupted(rc: Replctl, err: str, step: int) -> None:
    """The one line on stderr, and the journal's last operation: the replicate, `interrupted` after `step`."""
    line = f"interrupted; nothing committed after step {step}; re-run to resume"
    assert err == line + "\n"
    op = rc.json("ops", "list", "--limit", "1")["operations"][0]
    assert (op["command"], op["outcome"], op["error"]) == (
        "replicate",
        "interrupted",
        {"code": "interrupted", "message": line, "hint": None},
    )


def session_ended(leader: int, timeout_s: float = 60) -> bool:
    """Whether every process of the session `leader` started (the driver JVM too) has ended in time."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            os.killpg(leader, 0)
        except ProcessLookupError:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    ("stop", "group", "code"),
    [(signal.SIGINT, False, 130), (signal.SIGTERM, False, 143), (signal.SIGTERM, True, 143)],
    ids=["ctrl-c", "sigterm", "sigterm-to-the-group"],
)
def test_a_stop_signal_during_a_spark_job_is_one_line_its_exit_code_and_journalled_interrupted(
    tmp_path: Path, stop: signal.Signals, group: bool, code: int
) -> None:
    """`group`: the signal goes to every process of the command, the driver JVM too, as systemd's stop does."""
    rc = Replctl(tmp_path)
    rc("init")
    rc("location", "add", "A")
    rc("location", "add", "B")
    # A filtered connection: the pass is a Spark job (an unfiltered one may copy files without one).
    rc("topology", "add", "A", "B", "--filter", "origin = 'A'")
    rc("log", "append", "A", "--generate", str(EVENTS))

    events = tmp_path / "spark-events"
    events.mkdir()
    child = start(
        rc,
        [
            *("--spark-conf", "spark.eventLog.enabled=true"),
            *("--spark-conf", f"spark.eventLog.dir={events}"),
            *("--spark-conf", "spark.eventLog.compress=false"),
            *("replicate", "A", "B"),
        ],
        {"REPLCTL_SPARK_MASTER": "local[1]"},
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not job_started(events):
            assert child.poll() is None, "the command ended before its Spark job started"
            assert time.monotonic() < deadline, "no Spark job started"
            time.sleep(0.05)
        if group:
            os.killpg(child.pid, stop)
        else:
            child.send_signal(stop)
        out, err = child.communicate(timeout=120)
        # The driver JVM the command started is not left behind.
        assert session_ended(child.pid)
    finally:
        with contextlib.suppress(ProcessLookupError):  # whatever is left of it, the driver JVM too
            os.killpg(child.pid, signal.SIGKILL)

    assert (child.returncode, out) == (code, "")
    assert_journalled_interrupted(rc, err, step=0)
    # Nothing after step 0 committed: B holds nothing and the connection's progress did not move (REP2).
    assert rc.json("log", "show", "B")["events"] == []
    assert rc.connection("A", "B")["progress"] == 0
    # The leases were released, so the re-run starts at once and converges: every event once (REP3).
    assert held_leases(rc) == []
    rc("replicate", "A", "B")
    stored = rc.stored("B")
    assert len(stored) == EVENTS and len(set(stored)) == EVENTS


@pytest.mark.timeout(300)
def test_sigterm_between_two_steps_is_one_line_exit_143_journalled_interrupted_and_frees_the_leases(
    tmp_path: Path,
) -> None:
    rc = Replctl(tmp_path)
    rc("init")
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B")
    rc("log", "append", "A", "--generate", "3")
    fifo = tmp_path / "hold.fifo"
    os.mkfifo(fifo)
    child = start(
        rc,
        ["replicate", "A", "B"],
        {"REPLCTL_FAILPOINT": "replicate.after-commit", "REPLCTL_FAILPOINT_MODE": f"fifo:{fifo}"},
    )
    try:
        # Opening the FIFO returns once the command waits at the failpoint, its pass committed (step 1).
        with fifo.open("wb"):
            child.send_signal(signal.SIGTERM)
            out, err = child.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)

    # Before: killed by Python's default action, exit -15 (143 in a shell), nothing said, journal `running`.
    assert (child.returncode, out) == (143, "")
    assert_journalled_interrupted(rc, err, step=1)
    # The leases were released in the journal's transaction: no operator waits out the lease TTL for it,
    # on this host or any other.
    assert held_leases(rc) == []
    # What was committed stays committed (REP2), and the next command gets the leases at once.
    assert rc.connection("A", "B")["progress"] == 3
    assert rc("replicate", "A", "B").code == 0
    assert rc.stored("B") == rc.stored("A")
    assert len(rc.stored("B")) == 3


def test_an_interrupted_command_ends_within_the_grace_even_if_an_exit_handler_would_hold_it() -> None:
    """What an interrupted call leaves behind (a Spark Connect request in flight, a client thread pool joined
    at exit) must not keep the command from ending: `end_within` ends it with its exit code, its output
    flushed. The exit handler here never returns."""
    child = """
import atexit, sys, threading
from replctl.cli import interrupt
atexit.register(threading.Event().wait)
interrupt.OWNS_PROCESS = True  # as replctl's entry point sets it
interrupt.end_within(130, seconds=0.5)
print("interrupted; nothing committed; re-run to resume")
sys.exit(130)
"""
    done = subprocess.run(
        [sys.executable, "-c", child], check=False, capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout) == (130, "interrupted; nothing committed; re-run to resume\n")


def test_a_host_that_calls_the_app_in_its_own_process_is_never_ended_by_it() -> None:
    """Tests and embedding hosts call the Typer app themselves: an interrupted command there must not end
    their process (`OWNS_PROCESS` is set only by replctl's entry point)."""
    from replctl.cli import interrupt

    assert not interrupt.OWNS_PROCESS
    interrupt.end_within(1, seconds=0.01)
    time.sleep(0.2)  # still here: had the timer been armed, this process would have ended with exit 1
