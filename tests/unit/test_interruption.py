"""What a Ctrl-C says of a command of several operations (services.interruption), pure."""

from __future__ import annotations

from replctl.services import interruption
from replctl.services.interruption import COMPLETED, command_progress, in_turn


def _again(left: list[str]) -> str:
    return "replctl backup create " + " ".join(label.rsplit(" ", 1)[-1] for label in left)


def test_an_operation_interrupted_while_it_began_is_named_not_started_and_re_run() -> None:
    # A Ctrl-C inside `operations._begin` (journal row and leases, waiting on a busy catalog) reaches the
    # boundary outside the operation: B was dropped from both the line and the re-run command.
    with (
        command_progress() as progress,
        in_turn(["backup create A", "backup create B", "backup create C"], _again),
    ):
        interruption.begun("backup create A")
        interruption.ended("backup create A", COMPLETED)
        interruption.begun("backup create B")
        assert progress.text() == (
            "interrupted; backup create A completed; backup create B, backup create C not started; "
            "re-run to resume: replctl backup create B C"
        )


def test_an_operation_stopped_inside_is_named_with_its_steps_and_re_run_with_the_rest() -> None:
    with command_progress() as progress, in_turn(["backup create A", "backup create B"], _again):
        interruption.begun("backup create A")
        assert progress.text(stopped=("backup create A", 0)) == (
            "interrupted; backup create A: nothing committed after step 0; backup create B not started; "
            "re-run to resume: replctl backup create A B"
        )
