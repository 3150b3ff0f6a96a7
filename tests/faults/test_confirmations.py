"""Destructive commands ask on a terminal, showing their plan (issue 14 item 8).

Each case runs the real `replctl` in its own process on a real pseudo-terminal (stdin and stdout both), answers
the question, and checks the exact plan and question shown and what changed. `--yes`, `--json` and a command
without a terminal (every CliRunner test) proceed without asking.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from clitool import Replctl

TIMEOUT_S = 120
REFUSAL = "not confirmed; nothing was changed\nhint: answer y to proceed, or pass --yes to skip the question"


@dataclass
class Terminal:
    """What a command printed on the terminal and how it ended."""

    code: int
    screen: str


def on_terminal(rc: Replctl, *args: str, answer: str | None) -> Terminal:
    """Run `replctl ARGS` on a new pseudo-terminal; type `answer` and Enter once it asks `[y/N]`."""
    main, child = os.openpty()
    env = {**os.environ, **rc.env, "TERM": "dumb"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "replctl", *args], stdin=child, stdout=child, stderr=child, env=env
    )
    os.close(child)
    screen = b""
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(main, 65536)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                screen += chunk
                # Click writes the space last; a JVM sharing the terminal may print after the question.
                if answer is not None and b"[y/N]: " in screen:
                    os.write(main, answer.encode() + b"\n")
                    answer = None
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=TIMEOUT_S)
    finally:
        os.close(main)
        if proc.poll() is None:
            proc.kill()
    return Terminal(code, screen.decode().replace("\r\n", "\n"))


@pytest.fixture
def rc(tmp_path: Path) -> Replctl:
    """A with a1..a3, connected to nothing; Z, an idle location."""
    tool = Replctl(tmp_path)
    tool("init")
    tool("location", "add", "A")
    tool("location", "add", "Z")
    tool.append("A", "a1")
    tool.append("A", "a2", "a3")
    return tool


DRILL_PLAN = (
    "would destroy A's stored events from seq 2 on (1 segment(s) gone)\nnext: replctl recover location A\n"
)


def test_a_drill_shows_its_plan_and_a_no_changes_nothing(rc: Replctl) -> None:
    done = on_terminal(rc, "drill", "disaster", "A", "--from", "2", answer="n")
    assert done.code == 3
    assert done.screen == (
        DRILL_PLAN + "destroy A's stored events from seq 2 on? [y/N]: n\n" + REFUSAL + "\n"
    )
    assert rc.keys("A") == ["a1", "a2", "a3"]
    assert rc.json("ops", "list")["operations"][0]["command"] == "log append"


def test_a_drill_confirmed_with_y_runs(rc: Replctl) -> None:
    done = on_terminal(rc, "drill", "disaster", "A", "--from", "2", answer="y")
    assert done.code == 0
    assert done.screen == (
        DRILL_PLAN
        + "destroy A's stored events from seq 2 on? [y/N]: y\n"
        + "destroyed A's stored events from seq 2 on (1 segment(s) gone)\nnext: replctl recover location A\n"
    )


@pytest.mark.parametrize("flag", ["--yes", "--json"])
def test_yes_or_json_runs_a_drill_without_asking(rc: Replctl, flag: str) -> None:
    done = on_terminal(rc, "drill", "disaster", "A", "--from", "2", flag, answer=None)
    assert done.code == 0
    assert "[y/N]" not in done.screen
    if flag == "--json":
        assert json.loads(done.screen)["ok"] is True


def test_recover_accepting_loss_asks_and_a_no_changes_nothing(rc: Replctl) -> None:
    rc("drill", "disaster", "A", "--from", "2")  # no terminal: runs at once, as before
    before = rc.snapshot()
    done = on_terminal(rc, "recover", "location", "A", "--accept-loss", answer="n")
    assert done.code == 3
    # The dry run starts Spark, whose JVM shares the terminal: its lines may come between ours.
    assert "A: events from seq 2 on are lost\n" in done.screen
    assert (
        "recover A accepting the loss of what its neighbours deleted (DR5) and of events only it stores or its "
        "backup holds (DR0, BK3)? [y/N]:"
    ) in done.screen
    assert REFUSAL + "\n" in done.screen
    assert rc.snapshot() == before


def test_recover_without_accepting_loss_does_not_ask(rc: Replctl) -> None:
    rc("drill", "disaster", "A", "--from", "2")
    done = on_terminal(rc, "recover", "location", "A", answer=None)
    assert "[y/N]" not in done.screen
    assert done.code == 0


def test_retire_pruning_the_clock_asks_and_a_no_changes_nothing(rc: Replctl) -> None:
    before = rc.snapshot()
    done = on_terminal(rc, "location", "retire", "Z", "--prune-clock", answer="n")
    assert done.code == 3
    assert done.screen.endswith(
        "retire Z and remove its id from every clock for good? [y/N]: n\n" + REFUSAL + "\n"
    )
    assert rc.snapshot() == before
    assert rc.location("Z")["state"] == "active"


def test_a_small_deletion_does_not_ask_and_a_large_one_does(rc: Replctl) -> None:
    done = on_terminal(rc, "delete", "A", "--upto", "2", answer=None)
    assert (done.code, "[y/N]" in done.screen) == (0, False)
    rc("log", "append", "A", "--generate", "1001")
    done = on_terminal(rc, "delete", "A", "--upto", "1004", answer="n")
    assert done.code == 3
    assert done.screen == (
        "would hide seq ≤ 1004 from local reading\n"
        "would delete seq 3..1004 physically\n"
        "delete A's seq 3..1004 (up to 1002 events) for good? [y/N]: n\n" + REFUSAL + "\n"
    )
    assert rc.json("log", "show", "A", "--limit", "1")["deleted_upto"] == 2


def test_backup_prune_shows_what_it_would_remove_and_a_no_keeps_every_backup(rc: Replctl) -> None:
    # Issue 14: a pruned backup is gone for good; on a terminal prune shows its plan and asks first.
    rc("backup", "create", "A")
    rc.append("A", "a4")
    rc("backup", "create", "A")
    plan = rc.json("backup", "prune", "A", "--keep-last", "1", "--dry-run")
    [gone], [kept] = plan["removed"], plan["kept"]
    files = len(plan["files_removed"])
    done = on_terminal(rc, "backup", "prune", "A", "--keep-last", "1", answer="n")
    assert done.code == 3
    assert done.screen == (
        f"would remove backup {gone}\n"
        f"would remove 1 backup(s) and {files} segment file(s); 1 kept\n"
        "remove 1 backup(s) for good? [y/N]: n\n" + REFUSAL + "\n"
    )
    assert sorted(b["id"] for b in rc.json("backup", "list", "A")["backups"]) == sorted([gone, kept])
    done = on_terminal(rc, "backup", "prune", "A", "--keep-last", "1", answer="y")
    assert done.code == 0
    assert done.screen.endswith(
        f"[y/N]: y\nremoved backup {gone}\nremoved 1 backup(s) and {files} segment file(s); 1 kept\n"
    )
    assert [b["id"] for b in rc.json("backup", "list", "A")["backups"]] == [kept]


@pytest.mark.parametrize("flag", ["--yes", "--json"])
def test_backup_prune_with_yes_or_json_runs_without_asking(rc: Replctl, flag: str) -> None:
    rc("backup", "create", "A")
    rc("backup", "create", "A")
    done = on_terminal(rc, "backup", "prune", "A", "--keep-last", "1", flag, answer=None)
    assert (done.code, "[y/N]" in done.screen) == (0, False)
    assert len(rc.json("backup", "list", "A")["backups"]) == 1


def test_backup_prune_with_nothing_to_remove_does_not_ask(rc: Replctl) -> None:
    rc("backup", "create", "A")
    done = on_terminal(rc, "backup", "prune", "A", "--keep-last", "1", answer=None)
    assert (done.code, done.screen) == (0, "removed 0 backup(s) and 0 segment file(s); 1 kept\n")
