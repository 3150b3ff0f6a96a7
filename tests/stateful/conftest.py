"""Prints what the differential state machine reached, at the end of any run that drove it."""

from __future__ import annotations

from typing import Any

from stateful.reached import REACHED


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Examples, steps and distinct operations of the state machine (issue 13: shown after the slow pass)."""
    if REACHED.examples == 0:
        return
    terminalreporter.section("differential state machine: CLI vs reference model")
    for line in REACHED.lines():
        terminalreporter.write_line(line)
