"""What a command's service returns: a typed outcome with one JSON view, and whether its work is done.

The exit code of a finished command follows from `Completion` alone (`replctl.cli.outcomes.exit_code`), and
the plan `--plan-out` writes is the dry run's `to_json()` (issue 15): neither depends on how it is printed.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Protocol, runtime_checkable


class Completion(Enum):
    """How far a command's work got, as its exit code tells the operator (cli.md)."""

    COMPLETE = "complete"  # exit 0: nothing left to do (a dry run is always complete: it leaves nothing)
    INCOMPLETE = "incomplete"  # exit 5: work left that a later run finishes (a blocked pass, a pending cut)
    VIOLATED = "violated"  # exit 3: a check found an invariant broken (`log verify`, rules.md §9)
    DAMAGED = "damaged"  # exit 6: a check found stored files not what they should be (`backup verify`)


@runtime_checkable
class Outcome(Protocol):
    """A service's result: `to_json()` is the whole `--json` document of the command (`ok` included)."""

    @property
    def completion(self) -> Completion:
        """Whether the command's work is done (`Completion`)."""
        ...

    def to_json(self) -> dict[str, Any]:
        """The document `--json` prints and `--plan-out` records, key for key as cli.md specifies."""
        ...


class AllOrNothing:
    """Base of the outcomes of commands that do all they were asked or fail (an append, a compaction, a
    drill, every read): they never leave work for a later run, so they are always complete."""

    @property
    def completion(self) -> Completion:
        """Always `Completion.COMPLETE`."""
        return Completion.COMPLETE
