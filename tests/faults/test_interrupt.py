"""Ctrl-C during a Spark job (issue 18): one line, exit 130, the journal says `interrupted`, no py4j or Java
traceback, nothing committed after the last journalled step, and the re-run resumes (REP3).

The CLI runs in a child process, as an operator's would, and gets a real SIGINT. It is sent while a Spark
job is running, and no clock decides when: Spark's event log (written uncompressed into the test's folder)
records `SparkListenerJobStart` when the job starts, and the test waits for that line.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from clitool import Replctl

EVENTS = 100_000
START_TIMEOUT_S = 180


def job_started(events: Path) -> bool:
    """Whether Spark's event log under `events` records a started job."""
    return any(b"SparkListenerJobStart" in path.read_bytes() for path in events.rglob("*") if path.is_file())


@pytest.mark.timeout(600)
def test_ctrl_c_during_a_spark_job_is_one_line_exit_130_and_journalled_interrupted(tmp_path: Path) -> None:
    rc = Replctl(tmp_path)
    rc("init")
    rc("location", "add", "A")
    rc("location", "add", "B")
    # A filtered connection: the pass is a Spark job (an unfiltered one may copy files without one).
    rc("topology", "add", "A", "B", "--filter", "origin = 'A'")
    rc("log", "append", "A", "--generate", str(EVENTS))

    events = tmp_path / "spark-events"
    events.mkdir()
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "replctl",
            *("--spark-conf", "spark.eventLog.enabled=true"),
            *("--spark-conf", f"spark.eventLog.dir={events}"),
            *("--spark-conf", "spark.eventLog.compress=false"),
            *("replicate", "A", "B"),
        ],
        env={**os.environ, **rc.env, "REPLCTL_SPARK_MASTER": "local[1]"},
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not job_started(events):
            assert child.poll() is None, "the command ended before its Spark job started"
            assert time.monotonic() < deadline, "no Spark job started"
            time.sleep(0.05)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)

    assert (child.returncode, out) == (130, "")
    assert err == "interrupted; nothing committed after step 0; re-run to resume\n"
    op = rc.json("ops", "list", "--limit", "1")["operations"][0]
    assert (op["command"], op["outcome"], op["error"]) == (
        "replicate",
        "interrupted",
        {
            "code": "interrupted",
            "message": "interrupted; nothing committed after step 0; re-run to resume",
            "hint": None,
        },
    )
    # Nothing after step 0 committed: B holds nothing and the connection's progress did not move (REP2).
    assert rc.json("log", "show", "B")["events"] == []
    assert rc.connection("A", "B")["progress"] == 0
    # The lease was released, so the re-run starts at once and converges: every event once (REP3).
    rc("replicate", "A", "B")
    stored = rc.stored("B")
    assert len(stored) == EVENTS and len(set(stored)) == EVENTS
