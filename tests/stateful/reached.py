"""What the differential state machine reached in this test run: examples, steps and distinct operations.

The slow pass prints it at the end of the run (`conftest.pytest_terminal_summary`), so a change that makes the
machine stop reaching an operation (a precondition that never holds any more) shows in the CI log.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class Reached:
    """Counters shared by every example of one pytest process."""

    examples: int = 0
    steps: int = 0
    operations: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)

    def lines(self) -> list[str]:
        """The statistics as printed at the end of the run."""
        ops = ", ".join(f"{name} ×{count}" for name, count in sorted(self.operations.items()))
        exits = ", ".join(f"exit {code} ×{count}" for code, count in sorted(self.outcomes.items()))
        return [
            f"examples: {self.examples}, steps: {self.steps}, "
            f"distinct operations reached: {len(self.operations)}",
            f"operations: {ops}",
            f"outcomes: {exits}",
        ]


REACHED = Reached()
