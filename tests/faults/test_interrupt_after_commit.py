"""Ctrl-C after work was committed (issue 18, operator trial): the line says what completed, and an operation
whose last commit is done is journalled with its own outcome, never `interrupted` or "nothing committed".

In-process: `failpoints.calling` raises `KeyboardInterrupt` at a point, as the CLI's SIGINT handler does
(`cli.interrupt`) wherever the main thread is when the signal arrives; once every operation has ended, a real
SIGINT arrives while the report prints (`ctrl_c_in_the_report`).
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TextIO

import pytest
from clitool import Outcome, Replctl, lose_what_the_neighbour_deleted

from replctl import failpoints

pytestmark = [pytest.mark.spark]


def ctrl_c() -> None:
    """What `cli.interrupt`'s handler raises where the main thread is."""
    raise KeyboardInterrupt


class SigintOnFirstWrite:
    """A stdout on which SIGINT arrives as the first line of the report is printed: the signal is real and
    `cli.interrupt`'s handler raises where the main thread is, inside this write."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.sent = False

    def write(self, text: str) -> int:
        if not self.sent:
            self.sent = True
            signal.raise_signal(signal.SIGINT)
        return self.stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def ctrl_c_in_the_report() -> None:
    """From here on the command's work runs as before; Ctrl-C comes once its report starts printing (CliRunner
    puts its own stdout back after the command)."""
    sys.stdout = SigintOnFirstWrite(sys.stdout)


def operations(rc: Replctl) -> list[dict[str, Any]]:
    """The journal, oldest first."""
    return list(reversed(rc.json("ops", "list")["operations"]))


def recovery_stopped_in_its_report(rc: Replctl, point: str, *args: str) -> dict[str, Any]:
    """`replctl recover location ARGS` with Ctrl-C at `point`, once its last commit is done: the line says it
    completed and that only its report was cut short. Returns its journal entry."""
    with failpoints.calling(point, ctrl_c) as ran:
        out = rc("recover", "location", *args, expect=130)
    assert ran == [point]
    op = operations(rc)[-1]
    assert out.stderr == (
        f"interrupted; recover location {args[0]} completed; the report was cut short: "
        f"replctl ops show {op['id']}\n"
    )
    return op


def test_ctrl_c_after_a_recovery_committed_its_last_step_says_it_completed(tmp_path: Path) -> None:
    rc = Replctl.initialised(tmp_path, "A", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1", "a2")
    rc("replicate")
    rc("drill", "disaster", "A", "--from", "2", "--yes")
    # The last step (`end`) is committed; the report's reads follow, then the journal's outcome.
    op = recovery_stopped_in_its_report(rc, "operation.before-finish", "A", "--yes")
    assert (op["command"], op["outcome"], op["error"]) == ("recover location", "succeeded", None)
    assert rc.location("A")["state"] == "active"


def backups_of_a_and_b_stopped_in_b_at(
    tmp_path: Path, point: str, stop: Callable[[], None] = ctrl_c
) -> tuple[Replctl, Outcome]:
    """`backup create A B`, with Ctrl-C (`stop`) at `point` in B's operation (its second visit: A's is the
    first)."""
    rc = Replctl.initialised(tmp_path, "A", "B")
    rc.append("A", "a1")
    rc.append("B", "b1")
    with ExitStack() as later:

        def at_b() -> None:
            later.enter_context(failpoints.calling(point, stop))

        with failpoints.calling(point, at_b):
            return rc, rc("backup", "create", "A", "B", expect=130)


def test_ctrl_c_after_the_last_backup_of_several_was_made_names_both_as_completed(tmp_path: Path) -> None:
    # At B's last point its manifest is written (the backup made, BK1); only the journal's end is left.
    rc, out = backups_of_a_and_b_stopped_in_b_at(tmp_path, "operation.before-finish")
    ops = operations(rc)[-2:]
    assert [(op["command"], op["args"]["location"], op["outcome"]) for op in ops] == [
        ("backup create", "A", "succeeded"),
        ("backup create", "B", "succeeded"),
    ]
    assert [s["name"] for s in rc.json("ops", "show", ops[1]["id"])["operation"]["steps"]] == ["backup"]
    assert out.stderr == (
        "interrupted; backup create A, backup create B completed; the report was cut short: "
        f"replctl ops show {ops[1]['id']}\n"
    )
    assert [b["location"] for b in rc.json("backup", "list")["backups"]] == ["A", "B"]


def test_ctrl_c_once_the_last_of_two_backups_ended_names_both_and_nothing_to_resume(tmp_path: Path) -> None:
    # B's operation ends (its journal row too), `backup create` returns, and SIGINT arrives as the report
    # starts: both backups are made and journalled; a re-run would make new ones, not resume anything.
    rc, out = backups_of_a_and_b_stopped_in_b_at(tmp_path, "operation.before-finish", ctrl_c_in_the_report)
    ops = operations(rc)[-2:]
    assert [(op["command"], op["args"]["location"], op["outcome"], op["error"]) for op in ops] == [
        ("backup create", "A", "succeeded", None),
        ("backup create", "B", "succeeded", None),
    ]
    assert [s["name"] for s in rc.json("ops", "show", ops[1]["id"])["operation"]["steps"]] == ["backup"]
    assert (out.stdout, out.stderr) == (
        "",
        "interrupted; backup create A, backup create B completed; the report was cut short: replctl ops list\n",
    )
    assert [b["location"] for b in rc.json("backup", "list")["backups"]] == ["A", "B"]


def test_ctrl_c_between_two_backups_names_the_one_that_completed(tmp_path: Path) -> None:
    # A's backup ends; B's operation has its leases and nothing else when the signal arrives.
    rc, out = backups_of_a_and_b_stopped_in_b_at(tmp_path, "operation.after-lease")
    ops = operations(rc)[-2:]
    assert [(op["args"]["location"], op["outcome"]) for op in ops] == [
        ("A", "succeeded"),
        ("B", "interrupted"),
    ]
    assert out.stderr == (
        "interrupted; backup create A completed; backup create B: nothing committed after step 0; "
        "re-run to resume\n"
    )


def test_ctrl_c_in_the_report_of_a_restore_says_it_completed(tmp_path: Path) -> None:
    # BK2: a restore ends like any recovery (`finish_recovery`): once its `end` step is committed only the loss
    # report is left, which reads.
    rc = Replctl.initialised(tmp_path, "A", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1", "a2")
    rc("replicate")
    rc("backup", "create", "A")
    rc("drill", "disaster", "A", "--from", "1", "--yes")
    op = recovery_stopped_in_its_report(rc, "recover.after-end", "A", "--from-backup", "latest", "--yes")
    assert (op["command"], op["outcome"], op["error"]) == ("recover location", "succeeded", None)
    assert op["args"]["from_backup"] == rc.json("backup", "list")["backups"][0]["id"]
    assert [s["name"] for s in rc.json("ops", "show", op["id"])["operation"]["steps"]][::-1][:1] == ["end"]
    assert rc.location("A")["state"] == "active"
    assert rc.keys("A") == ["a1", "a2"]


def test_ctrl_c_in_the_report_of_an_incomplete_recovery_journals_it_incomplete(tmp_path: Path) -> None:
    # B deleted A's own events, so B fails DR4: the `end` step leaves A recovering (DR0). Journalled
    # `succeeded`, the run read as the end of A's recovery, and the accepted loss that follows measured what
    # is lost against A's recomputed clock instead of its clock before the loss.
    rc = Replctl(tmp_path)
    rc("init")
    lose_what_the_neighbour_deleted(rc, lost_from=2)
    op = recovery_stopped_in_its_report(rc, "recover.after-end", "A")
    assert (op["command"], op["outcome"], op["error"]) == ("recover location", "incomplete", None)
    assert rc.location("A")["state"] == "recovering"
    # As after an uninterrupted incomplete run (DR5): the loss of a2, a3 is named when it is accepted.
    accepted = rc("recover", "location", "A", "--accept-loss", "--yes")
    assert accepted.stdout.splitlines()[-2:] == [
        "A: clock unchanged at 3, CVV {A:3}",
        "A: events A: 2..3 are lost for good",
    ]
