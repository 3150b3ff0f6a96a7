"""The kill-point report: after a run that crashed commands at failpoints, the totals over every suite (REP3)."""

from __future__ import annotations

import sys

import pytest


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print `killpoints.REPORT` when a crash suite ran (the harness module is loaded only then)."""
    harness = sys.modules.get("killpoints")
    lines: list[str] = [] if harness is None else harness.REPORT.lines()
    if lines:
        terminalreporter.write_sep("=", "kill points")
        for line in lines:
            terminalreporter.write_line(line)
