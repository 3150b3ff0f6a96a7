"""`status --watch` redraws text until Ctrl-C, so whatever refuses it must refuse before the first redraw."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clitool import Replctl


@pytest.fixture
def rc(tmp_path: Path) -> Replctl:
    tool = Replctl(tmp_path)
    tool("init")
    return tool


# A watch that started would redraw until the timeout: these tests fail then, they do not hang the suite.
@pytest.mark.timeout(60)
def test_watch_under_json_exits_2_with_the_json_error(rc: Replctl) -> None:
    out = rc("--json", "status", "--watch", "1", expect=2)
    assert json.loads(out.stdout) == {
        "ok": False,
        "error": {
            "code": "bad-option",
            "message": "--watch redraws a text display and cannot be combined with --json",
            "hint": "drop --watch, or poll `replctl --json status` from the script",
        },
    }


@pytest.mark.timeout(60)
def test_watch_with_plan_out_is_refused_as_a_read_only_command(rc: Replctl, tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    out = rc("status", "--watch", "1", "--plan-out", str(path), expect=2)
    assert out.stderr.splitlines()[0] == (
        "error: replctl status changes nothing; --plan-out is for mutating commands"
    )
    assert out.stdout == ""
    assert not path.exists()


@pytest.mark.timeout(60)
def test_watch_without_its_interval_says_what_it_takes_with_a_hint(rc: Replctl) -> None:
    out = rc("status", "--watch", expect=2)
    assert (out.stdout, out.stderr) == (
        "",
        "error: --watch needs a value: --watch SECONDS\nhint: run: replctl status --help\n",
    )


@pytest.mark.timeout(60)
def test_watch_without_its_interval_under_json_is_the_usage_error_document(rc: Replctl) -> None:
    out = rc("--json", "status", "--watch", expect=2)
    assert json.loads(out.stdout) == {
        "ok": False,
        "error": {
            "code": "usage",
            "message": "--watch needs a value: --watch SECONDS",
            "hint": "run: replctl status --help",
        },
    }


def _read_until(fd: int, wanted: bytes, count: int, deadline: float) -> bytes:
    """What `fd` gives until `wanted` appeared `count` times or the deadline passed."""
    import os
    import select
    import time

    seen = b""
    while seen.count(wanted) < count and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the terminal closed (EIO)
                break
            if not chunk:
                break
            seen += chunk
    return seen


@pytest.mark.timeout(120)
def test_watch_on_a_terminal_draws_the_table_within_two_intervals(rc: Replctl) -> None:
    import os
    import pty
    import signal
    import subprocess
    import sys
    import time

    rc("location", "add", "A")
    leader, follower = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "replctl", "status", "--watch", "3"],
        env={**os.environ, **rc.env, "COLUMNS": "80"},
        stdout=follower,
        stderr=subprocess.PIPE,
    )
    os.close(follower)
    started = time.monotonic()
    try:
        # Rich Live draws the first snapshot at once and redraws it in place: "A  read-write" twice = a redraw.
        seen = _read_until(leader, b"read-write", 2, started + 30)
        assert seen.count(b"read-write") >= 2, seen
        assert b"location" in seen and b"\x1b[" in seen  # drawn, with the cursor codes of a redraw
    finally:
        child.send_signal(signal.SIGINT)
        assert child.wait(timeout=30) == 0
        os.close(leader)


@pytest.mark.timeout(120)
def test_watch_through_a_pipe_prints_one_snapshot_per_interval(rc: Replctl) -> None:
    import os
    import re
    import signal
    import subprocess
    import sys
    import time

    rc("location", "add", "A")
    child = subprocess.Popen(
        [sys.executable, "-m", "replctl", "status", "--watch", "1"],
        env={**os.environ, **rc.env, "COLUMNS": "80"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None
    try:
        seen = _read_until(child.stdout.fileno(), b"status at ", 3, time.monotonic() + 60)
    finally:
        child.send_signal(signal.SIGINT)
        assert child.wait(timeout=30) == 0
    text = seen.decode()
    assert b"\x1b[" not in seen  # plain text for a log file, no cursor codes
    snapshots = [s for s in re.split(r"^status at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n", text, flags=re.M) if s]
    assert len(snapshots) >= 2
    header, rule, row = (line.rstrip() for line in snapshots[0].splitlines()[:3])
    assert (header, set(rule), row) == (
        "location  role        state   seq  cvv  dvv  deleted  recoverable",
        {"─"},
        "A         read-write  active  0    {}   {}   0/0      yes",
    )


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("stop", "code"), [("SIGINT", 0), ("SIGTERM", 143)])
def test_watch_started_by_a_shell_that_ignores_ctrl_c_still_stops_on_it(
    rc: Replctl, stop: str, code: int
) -> None:
    # A script's background job inherits SIGINT ignored, and the interpreter then installs no handler: the watch
    # went on redrawing through Ctrl-C, while every other command stops on it (`cli.interrupt`).
    import os
    import signal
    import subprocess
    import sys
    import time

    rc("location", "add", "A")
    child = subprocess.Popen(
        # The shell ignores SIGINT and hands that on through exec, as a script's `&` does.
        ["sh", "-c", 'trap "" INT; exec "$0" -m replctl status --watch 1', sys.executable],
        env={**os.environ, **rc.env, "COLUMNS": "80"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None
    try:
        seen = _read_until(child.stdout.fileno(), b"status at ", 1, time.monotonic() + 60)
        assert b"status at " in seen
    finally:
        child.send_signal(getattr(signal, stop))
        try:
            assert child.wait(timeout=30) == code
        finally:
            child.kill()
