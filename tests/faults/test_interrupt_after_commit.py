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


def recovery_stopped_in_its_report(
    rc: Replctl, point: str, *args: str, how: str = "completed", then: str = ""
) -> dict[str, Any]:
    """`replctl recover location ARGS` with Ctrl-C at `point`, once its last commit is done: the line says how
    it ended (`how`), that only its report was cut short, and `then`. Returns its journal entry."""
    with failpoints.calling(point, ctrl_c) as ran:
        out = rc("recover", "location", *args, expect=130)
    assert ran == [point]
    op = operations(rc)[-1]
    assert out.stderr == (
        f"interrupted; recover location {args[0]} {how}; the report was cut short: "
        f"replctl ops show {op['id']}{then}\n"
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
        "re-run to resume: replctl backup create B\n"
    )


def backups_of_a_and_b_stopped_in_a_at(tmp_path: Path, point: str) -> tuple[Replctl, Outcome]:
    """`backup create A B`, with Ctrl-C at `point` in A's operation (its first visit)."""
    rc = Replctl.initialised(tmp_path, "A", "B")
    rc.append("A", "a1")
    rc.append("B", "b1")
    with failpoints.calling(point, ctrl_c) as ran:
        out = rc("backup", "create", "A", "B", expect=130)
    assert ran == [point]
    return rc, out


def test_ctrl_c_after_the_first_backup_of_two_was_made_names_the_other_as_not_started(tmp_path: Path) -> None:
    # A's manifest is written, only its journal's end is left: A's backup is made, B's operation never began.
    # The line said "backup create A completed; the report was cut short" as if the command were done.
    rc, out = backups_of_a_and_b_stopped_in_a_at(tmp_path, "operation.before-finish")
    ops = operations(rc)
    assert [(op["command"], op["args"]["location"], op["outcome"], op["error"]) for op in ops[-1:]] == [
        ("backup create", "A", "succeeded", None)
    ]
    assert [op["command"] for op in ops].count("backup create") == 1
    assert (out.stdout, out.stderr) == (
        "",
        "interrupted; backup create A completed; backup create B not started; "
        "re-run to resume: replctl backup create B\n",
    )
    assert [b["location"] for b in rc.json("backup", "list")["backups"]] == ["A"]
    # What the line says to run makes the one left.
    rc("backup", "create", "B")
    assert [b["location"] for b in rc.json("backup", "list")["backups"]] == ["A", "B"]


def test_ctrl_c_in_the_first_backup_of_two_names_both_to_make(tmp_path: Path) -> None:
    rc, out = backups_of_a_and_b_stopped_in_a_at(tmp_path, "operation.after-lease")
    assert [(op["args"]["location"], op["outcome"]) for op in operations(rc)[-1:]] == [("A", "interrupted")]
    assert out.stderr == (
        "interrupted; backup create A: nothing committed after step 0; backup create B not started; "
        "re-run to resume: replctl backup create A B\n"
    )
    assert rc.json("backup", "list")["backups"] == []


def test_ctrl_c_after_the_first_backup_to_another_store_says_the_store_to_make_the_rest_in(
    tmp_path: Path,
) -> None:
    rc = Replctl.initialised(tmp_path, "A", "B")
    rc.append("A", "a1")
    elsewhere = tmp_path / "other backups"
    with failpoints.calling("operation.before-finish", ctrl_c):
        out = rc("backup", "create", "A", "B", "--to", str(elsewhere), expect=130)
    assert out.stderr == (
        "interrupted; backup create A completed; backup create B not started; "
        f"re-run to resume: replctl backup create --to '{elsewhere}' B\n"
    )


def test_ctrl_c_after_the_first_backup_of_an_applied_plan_names_the_other_as_not_started(
    tmp_path: Path,
) -> None:
    # `apply` runs the recorded command: the same line, with the command that makes what is left (applying
    # the plan again is refused as stale: A's backup moved the catalog on).
    rc = Replctl.initialised(tmp_path, "A", "B")
    rc.append("A", "a1")
    rc.append("B", "b1")
    plan = tmp_path / "backups.plan.json"
    rc("--plan-out", str(plan), "backup", "create", "A", "B")
    with failpoints.calling("operation.before-finish", ctrl_c):
        out = rc("apply", str(plan), expect=130)
    assert out.stderr == (
        "interrupted; backup create A completed; backup create B not started; "
        "re-run to resume: replctl backup create B\n"
    )
    assert [b["location"] for b in rc.json("backup", "list")["backups"]] == ["A"]


def retirement_stopped_at(tmp_path: Path, point: str) -> tuple[Replctl, Outcome]:
    """`location retire Z --prune-clock` (two operations: the retirement, then the pruning), with Ctrl-C at
    `point`, first visited in the retirement's operation or between the two."""
    rc = Replctl.initialised(tmp_path, "A", "Z")
    rc("topology", "add", "Z", "A")
    rc.append("Z", "z1")
    rc("replicate")
    rc("topology", "remove", "Z", "A")
    with failpoints.calling(point, ctrl_c) as ran:
        out = rc("location", "retire", "Z", "--prune-clock", expect=130)
    assert ran == [point]
    return rc, out


@pytest.mark.parametrize("point", ["operation.before-finish", "retire.before-prune"])
def test_ctrl_c_after_a_retirement_names_the_pruning_as_not_started(tmp_path: Path, point: str) -> None:
    # RET1 committed; RET2's pruning, the command's second operation, never began. The line said the
    # retirement completed and that only the report was cut short (or "nothing committed after them").
    rc, out = retirement_stopped_at(tmp_path, point)
    assert [(op["command"], op["outcome"]) for op in operations(rc)[-1:]] == [
        ("location retire", "succeeded")
    ]
    assert rc.location("Z")["state"] == "retired"
    assert rc.location("Z")["clock_pruned"] is False
    assert out.stderr == (
        "interrupted; location retire Z completed; location retire Z --prune-clock not started; "
        "re-run to resume: replctl location retire Z --prune-clock\n"
    )
    rc("location", "retire", "Z", "--prune-clock")
    assert rc.location("Z")["clock_pruned"] is True


def test_ctrl_c_in_the_report_of_an_incomplete_recovery_that_ended_says_it_was_left_incomplete(
    tmp_path: Path,
) -> None:
    # The operation ended (journalled incomplete); SIGINT arrives as the loss report prints.
    rc = Replctl(tmp_path)
    rc("init")
    lose_what_the_neighbour_deleted(rc, lost_from=2)
    with failpoints.calling("recover.after-end", ctrl_c_in_the_report):
        out = rc("recover", "location", "A", expect=130)
    op = operations(rc)[-1]
    assert (op["command"], op["outcome"], op["error"]) == ("recover location", "incomplete", None)
    assert (out.stdout, out.stderr) == (
        "",
        "interrupted; recover location A left incomplete; the report was cut short: replctl ops list; "
        "re-run to resume: replctl recover location A\n",
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
    # The line said "completed" and gave no re-run: A is left recovering, and its recovery is finished by one.
    op = recovery_stopped_in_its_report(
        rc,
        "recover.after-end",
        "A",
        how="left incomplete",
        then="; re-run to resume: replctl recover location A",
    )
    assert (op["command"], op["outcome"], op["error"]) == ("recover location", "incomplete", None)
    assert rc.location("A")["state"] == "recovering"
    # As after an uninterrupted incomplete run (DR5): the loss of a2, a3 is named when it is accepted.
    accepted = rc("recover", "location", "A", "--accept-loss", "--yes")
    assert accepted.stdout.splitlines()[-2:] == [
        "A: clock unchanged at 3, CVV {A:3}",
        "A: events A: 2..3 are lost for good",
    ]


def test_ctrl_c_in_the_report_of_a_replicate_that_waits_at_a_damaged_log_names_the_recovery(
    tmp_path: Path,
) -> None:
    # A→B waits for A's recovery (DR0) while C→B runs: the run is incomplete (exit 5), and a Ctrl-C in its
    # report said "replicate left incomplete; the report was cut short" with nothing to run next.
    rc = Replctl.initialised(tmp_path, "A", "B", "C")
    rc("topology", "add", "A", "B")
    rc("topology", "add", "C", "B")
    rc.append("A", "a1")
    folder = next((rc.store / "A").glob("seg-*"))
    next(f for f in folder.iterdir() if f.suffix == ".parquet").unlink()
    rc.append("C", "c1")
    with failpoints.calling("operation.before-finish", ctrl_c) as ran:
        out = rc("replicate", expect=130)
    assert ran == ["operation.before-finish"]
    op = operations(rc)[-1]
    assert (op["command"], op["outcome"]) == ("replicate", "incomplete")
    assert out.stderr == (
        f"interrupted; replicate left incomplete; the report was cut short: replctl ops show {op['id']}; "
        "re-run to resume: replctl recover location A\n"
    )
