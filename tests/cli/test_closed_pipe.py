"""When the reader of replctl's output goes away (`replctl ... | head`), replctl exits 141 as `cat` would, quietly,
whichever stream was closed and whatever the output mode; what a mutating command committed stays committed.

Each command runs in its own interpreter with stdout (or stderr) the write end of a pipe whose read end is closed
before replctl starts: its first write fails, every time. An exit of 120 would mean the interpreter's last flush
of the closed stream failed, which prints "Exception ignored ... BrokenPipeError" on stderr. None of these
commands starts Spark: `log show` reads a local store with pyarrow.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

CLOSED_PIPE_EXIT = 141  # 128 + SIGPIPE, as a shell reports `cat` that a closed pipe ended
EVENTS = 2000  # about 0.4 MB shown: far more than a pipe holds (64 KiB on Linux)


def _env(root: Path) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("REPLCTL_")},
        "REPLCTL_DB": f"sqlite:///{root / 'catalog.db'}",
        "REPLCTL_STORE": str(root / "logs"),
        "REPLCTL_HOME": str(root / "home"),
        "REPLCTL_SPARK_MASTER": "local[1]",
        "NO_COLOR": "1",
    }


def _run(env: dict[str, str], *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(command),
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _replctl(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return _run(env, sys.executable, "-m", "replctl", *args)


def _into_a_closed_pipe(env: dict[str, str], *args: str, closed: str = "stdout") -> tuple[int, str]:
    """Run replctl with `closed` (stdout, stderr or both) writing into a pipe nobody reads any more: its exit
    code, and what the stream that stayed open got."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "replctl", *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=writer if closed in ("stdout", "both") else subprocess.PIPE,
            stderr=writer if closed in ("stderr", "both") else subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(writer)
    return done.returncode, done.stderr if closed == "stdout" else done.stdout or ""


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("closedpipe")
    env = _env(root)
    events = root / "events.jsonl"
    events.write_text(
        "".join(
            json.dumps({"key": f"e{i}", "payload": {"n": i, "pad": "x" * 100}}) + "\n" for i in range(EVENTS)
        )
    )
    for args in (
        ["init"],
        ["location", "add", "A"],
        ["location", "add", "B"],
        ["topology", "add", "A", "B"],
        ["log", "append", "A", "--file", str(events)],
    ):
        done = _replctl(env, *args)
        assert done.returncode == 0, done.stderr
    return env


@pytest.mark.parametrize(
    "args",
    [
        ["location", "list"],
        ["--json", "location", "list"],
        ["topology", "history", "--json"],
        ["--output", "yaml", "topology", "history"],
        ["log", "show", "A"],
        ["log", "show", "A", "--no-pager"],
        ["log", "show", "A", "--json"],
        ["log", "show", "A", "--output", "yaml"],
        ["status", "--watch", "1"],
        ["--help"],
        ["location", "list", "--help"],
        ["--version"],
    ],
    ids=" ".join,
)
def test_a_closed_stdout_exits_141_and_says_nothing(env: dict[str, str], args: list[str]) -> None:
    assert _into_a_closed_pipe(env, *args) == (CLOSED_PIPE_EXIT, "")


def test_a_refusal_on_a_closed_stdout_under_json_exits_141_too(env: dict[str, str]) -> None:
    # Nobody could read the error document either: 141, as for any report, rather than the refusal's 2.
    assert _into_a_closed_pipe(env, "--json", "location", "show", "nowhere") == (CLOSED_PIPE_EXIT, "")


def test_a_streamed_log_into_head_exits_141_under_pipefail(env: dict[str, str]) -> None:
    pipeline = f"{shlex.quote(sys.executable)} -m replctl log show A --json | head -c 1"
    done = _run(env, "bash", "-o", "pipefail", "-c", pipeline)
    assert (done.returncode, done.stdout, done.stderr) == (CLOSED_PIPE_EXIT, "{", "")


def test_a_closed_stderr_under_verbose_exits_141_after_the_report_on_stdout(env: dict[str, str]) -> None:
    code, shown = _into_a_closed_pipe(env, "-v", "location", "list", closed="stderr")
    assert code == CLOSED_PIPE_EXIT
    assert "read-write" in shown  # stdout still got the table; only the -v line was lost
    assert "Traceback" not in shown


def test_stdout_and_stderr_on_one_closed_pipe_under_verbose_exit_141(env: dict[str, str]) -> None:
    assert _into_a_closed_pipe(env, "-v", "status", closed="both") == (CLOSED_PIPE_EXIT, "")


def test_the_verbose_line_on_an_open_stderr_says_141(env: dict[str, str]) -> None:
    code, said = _into_a_closed_pipe(env, "-v", "location", "list")
    assert code == CLOSED_PIPE_EXIT
    # The one line -v adds, with the code the shell sees (run as `python -m replctl`, so named that way).
    assert said.endswith(" s\n") and "replctl location list: exit 141 after " in said
    assert said.count("\n") == 1


@pytest.mark.parametrize("output", [[], ["--json"]], ids=["text", "json"])
def test_a_mutating_command_on_a_closed_stdout_still_commits(tmp_path: Path, output: list[str]) -> None:
    env = _env(tmp_path)
    assert _replctl(env, "init").returncode == 0
    assert _into_a_closed_pipe(env, *output, "location", "add", "B") == (CLOSED_PIPE_EXIT, "")
    listed = _replctl(env, "--json", "location", "list")
    assert [loc["name"] for loc in json.loads(listed.stdout)["locations"]] == ["B"]
    journal = json.loads(_replctl(env, "--json", "ops", "list").stdout)["operations"]
    assert [(op["command"], op["outcome"]) for op in journal] == [("location add", "succeeded")]
