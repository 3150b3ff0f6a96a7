"""A service's typed outcome as output and exit code: the one place that decides both (issue 15).

Under --json the outcome's own `to_json()` is printed, so that the document, the plan `--plan-out` writes and
the exit code never depend on a renderer; a renderer draws only the text view. The actions that return no
outcome (`apply` and `demo`, which run other commands; `report --html -`, whose page is all its output) keep their
renderer's exit code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from replctl.cli.output import emit_json
from replctl.core.outcomes import Completion, Outcome
from replctl.errors import EnvironmentFailure, Incomplete, Refused

if TYPE_CHECKING:
    from replctl.cli.context import AppContext

Render = Callable[["AppContext", Any], "int | None"]

# The error class whose exit code each completion shares: work left is what `Incomplete` means (exit 5), a
# broken invariant is refused like a rule (exit 3), damaged files are an environment failure (exit 6).
EXIT_CODES = {
    Completion.COMPLETE: 0,
    Completion.INCOMPLETE: Incomplete.exit_code,
    Completion.VIOLATED: Refused.exit_code,
    Completion.DAMAGED: EnvironmentFailure.exit_code,
}


def exit_code(outcome: Outcome) -> int:
    """The exit code of a command that finished with `outcome` (cli.md)."""
    return EXIT_CODES[outcome.completion]


def present(app: AppContext, render: Render | None, outcome: Any) -> int:
    """Print `outcome` (its JSON document under --json, else `render`'s text) and return the exit code."""
    if isinstance(outcome, Outcome):
        if app.json:
            emit_json(outcome.to_json())
        elif render is not None:
            render(app, outcome)
        return exit_code(outcome)
    return (render(app, outcome) or 0) if render is not None else 0
