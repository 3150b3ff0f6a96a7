"""`replctl engine start|stop` on a replctl home where the engine's files cannot be written: exit 6 with the
folder named and what to do (code `engine-home`), not a Python traceback (exit 1, "this is a bug").

The home is made unwritable by a regular file standing where its folder should be (or where a folder above it
should be): that holds for root too, whom a read-only mode does not stop. A look at the engine (`engine status`,
`settled_state`) writes nothing there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from replctl.adapters.spark import server

HINT = "make {home} a folder this user can write, or point REPLCTL_HOME at one; then re-run"


def _engine(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPLCTL_")}
    return subprocess.run(
        [sys.executable, "-m", "replctl", "engine", *args],
        env={**env, "REPLCTL_HOME": str(home), "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(params=["file-is-the-home", "file-above-the-home"])
def unwritable_home(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A home the engine cannot make or write: a file in its place (mkdir: FileExistsError) or in the place of
    the folder above it (NotADirectoryError)."""
    blocker = tmp_path / "replctl"
    blocker.write_text("not a folder\n")
    return blocker if request.param == "file-is-the-home" else blocker / "engine"


@pytest.mark.parametrize("command", ["start", "stop"])
def test_engine_command_on_an_unwritable_home_exits_6_naming_the_folder(
    unwritable_home: Path, command: str
) -> None:
    done = _engine(unwritable_home, command, "--json")
    assert done.returncode == 6, done.stderr
    assert json.loads(done.stdout) == {
        "ok": False,
        "error": {
            "code": "engine-home",
            "message": (
                f"cannot write the managed engine's files in {unwritable_home}: "
                "a file stands where a folder should be"
            ),
            "hint": HINT.format(home=unwritable_home),
        },
    }
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("command", ["start", "stop"])
def test_engine_command_on_an_unwritable_home_says_so_in_two_lines(
    unwritable_home: Path, command: str
) -> None:
    done = _engine(unwritable_home, command)
    assert done.returncode == 6, done.stderr
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"error: cannot write the managed engine's files in {unwritable_home}: "
        "a file stands where a folder should be",
        f"hint: {HINT.format(home=unwritable_home)}",
    ]


def test_engine_status_on_an_unwritable_home_is_down(unwritable_home: Path) -> None:
    done = _engine(unwritable_home, "status")
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        "down: no engine started\nhint: replctl engine start\n",
        "",
    )


def test_settled_state_creates_neither_the_home_nor_its_lock(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    assert server.settled_state(missing, wait=0).record is None
    assert not missing.exists()
    home = tmp_path / "home"
    home.mkdir()
    assert server.settled_state(home, wait=0).record is None
    assert list(home.iterdir()) == []


def test_settled_state_reads_a_lock_it_may_not_write(tmp_path: Path) -> None:
    # A lock file open read-only takes a shared lock: the check needs no write access to it.
    home = tmp_path / "home"
    home.mkdir()
    (home / "engine.lock").touch()
    (home / "engine.lock").chmod(0o444)
    before = (home / "engine.lock").stat()
    assert server.settled_state(home, wait=0).record is None
    after = (home / "engine.lock").stat()
    assert (after.st_mode, after.st_mtime_ns, after.st_size) == (before.st_mode, before.st_mtime_ns, 0)


def test_a_lock_this_user_may_not_write_names_the_file_and_the_cause(tmp_path: Path) -> None:
    # What a non-root user meets in a read-only home (root is not stopped by the mode, so it is built here).
    home = tmp_path / "home"
    denied = PermissionError(13, "Permission denied", str(home / "engine.lock"))
    failure = server._home_failure(home, denied)
    assert (str(failure), failure.code, failure.exit_code, failure.hint) == (
        f"cannot write the managed engine's files in {home}: Permission denied ({home / 'engine.lock'})",
        "engine-home",
        6,
        HINT.format(home=home),
    )
