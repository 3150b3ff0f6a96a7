"""Reports printed at the end of a run, for the reader (the tests assert per case): the kill-point report, the
totals over every suite that crashed commands at failpoints (REP3), and the bad inputs tried."""

from __future__ import annotations

import sys

import pytest


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print `killpoints.REPORT` when a crash suite ran, and `test_bad_input.TALLY` when that module ran (each
    is loaded only then)."""
    harness = sys.modules.get("killpoints")
    lines: list[str] = [] if harness is None else harness.REPORT.lines()
    if lines:
        terminalreporter.write_sep("=", "kill points")
        for line in lines:
            terminalreporter.write_line(line)
    bad_input = sys.modules.get("test_bad_input")
    tally: dict[str, dict[str, int]] = {} if bad_input is None else bad_input.TALLY
    if tally:
        tried = sum(t["tried"] for t in tally.values())
        rejected = sum(t["rejected"] for t in tally.values())
        terminalreporter.write_sep("=", "bad input")
        terminalreporter.write_line(
            f"tried {tried}, rejected cleanly {rejected}, accepted as valid {tried - rejected}"
        )
        for topic, t in sorted(tally.items()):
            terminalreporter.write_line(f"  {topic}: {t['tried']} tried, {t['rejected']} rejected")
