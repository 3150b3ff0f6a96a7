"""Confirmations before destructive commands, on a terminal only (issue 14 item 8).

`drill disaster`, `delete` of more than `DELETE_WITHOUT_ASKING` events, `recover location --accept-loss`,
`location retire --prune-clock` and `backup prune` destroy data or knowledge that no later command brings
back. On a terminal they
first make their dry run (the same planner as the run), print it, and ask; anything but yes changes nothing
(exit 3, `not-confirmed`). `--yes` answers for the operator. Scripts are not asked: without a terminal on
both stdin and stdout, under `--json`, under `--plan-out` and under `replctl apply` (whose plan was reviewed)
the command runs as it always did.

Each command passes `run` a question: a function of its dry-run outcome that returns what to ask, or None when
this run needs no confirmation (its own `--dry-run`, a small deletion).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from replctl.cli.outcomes import present
from replctl.errors import Refused

if TYPE_CHECKING:
    from replctl.cli.context import AppContext
    from replctl.services.deletion import DeletionOutcome

# A deletion of up to this many events (by seq range) runs without asking: trimming a log's head is routine.
DELETE_WITHOUT_ASKING = 1000

Question = Callable[[Any], "str | None"]


def on_terminal(app: AppContext) -> bool:
    """Whether this invocation may ask the operator: a person at a terminal, no --yes, no --json, no plan."""
    if app.yes or app.json or app.planning or app.applied is not None:
        return False
    return sys.stdin.isatty() and sys.stdout.isatty()


def ask(
    app: AppContext,
    action: Callable[[AppContext], Any],
    render: Callable[[AppContext, Any], int | None] | None,
    question: Question,
) -> None:
    """Make the command's dry run, show it, and ask `question`'s question; refuse (exit 3) unless confirmed."""
    import typer

    from replctl.services.operations import planning

    app.previewing = True
    try:
        with planning():
            preview = action(app)
    finally:
        app.previewing = False
    asked = question(preview)
    if asked is None:
        return
    present(app, render, preview)
    try:
        confirmed = typer.confirm(asked, default=False)
    except typer.Abort:  # end of input or Ctrl-C at the prompt
        confirmed = False
    if not confirmed:
        raise Refused(
            "not confirmed; nothing was changed",
            code="not-confirmed",
            hint="answer y to proceed, or pass --yes to skip the question",
        )


def deletion_question(location: str, dry_run: bool) -> Question:
    """The question before `delete`: only when it would hide or delete more than `DELETE_WITHOUT_ASKING`."""

    def question(preview: DeletionOutcome) -> str | None:
        # A dry run reports `deleted_upto` as the run leaves it; what it would cut starts at `would_delete`.
        would = preview.would_delete
        first = would["from"] if would else preview.deleted_upto + 1
        last = preview.logical_deleted_upto
        if would:
            last = max(last, would["upto"])
        if dry_run or last - first + 1 <= DELETE_WITHOUT_ASKING:
            return None
        return f"delete {location}'s seq {first}..{last} (up to {last - first + 1} events) for good?"

    return question
