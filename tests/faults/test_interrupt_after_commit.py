"""Ctrl-C after work was committed (issue 18, operator trial): the line says what completed, and an operation
whose last commit is done is journalled with its own outcome, never `interrupted` or "nothing committed".

In-process: `failpoints.calling` raises `KeyboardInterrupt` at a point, as the CLI's SIGINT handler does
(`cli.interrupt`) wherever the main thread is when the signal arrives.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from clitool import Outcome, Replctl

from replctl import failpoints

pytestmark = [pytest.mark.spark]


def ctrl_c() -> None:
    """What `cli.interrupt`'s handler raises where the main thread is."""
    raise KeyboardInterrupt


def operations(rc: Replctl) -> list[dict[str, Any]]:
    """The journal, oldest first."""
    return list(reversed(rc.json("ops", "list")["operations"]))


def test_ctrl_c_after_a_recovery_committed_its_last_step_says_it_completed(tmp_path: Path) -> None:
    rc = Replctl.initialised(tmp_path, "A", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1", "a2")
    rc("replicate")
    rc("drill", "disaster", "A", "--from", "2", "--yes")
    # The last step (`end`) is committed; the report's reads follow, then the journal's outcome.
    with failpoints.calling("operation.before-finish", ctrl_c) as ran:
        out = rc("recover", "location", "A", "--yes", expect=130)
    assert ran == ["operation.before-finish"]
    op = operations(rc)[-1]
    assert (op["command"], op["outcome"], op["error"]) == ("recover location", "succeeded", None)
    assert out.stderr == (
        f"interrupted; recover location A completed; the report was cut short: replctl ops show {op['id']}\n"
    )
    assert rc.location("A")["state"] == "active"


def backups_of_a_and_b_stopped_in_b_at(tmp_path: Path, point: str) -> tuple[Replctl, Outcome]:
    """`backup create A B`, with Ctrl-C at `point` in B's operation (its second visit: A's is the first)."""
    rc = Replctl.initialised(tmp_path, "A", "B")
    rc.append("A", "a1")
    rc.append("B", "b1")
    with ExitStack() as later:

        def at_b() -> None:
            later.enter_context(failpoints.calling(point, ctrl_c))

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
