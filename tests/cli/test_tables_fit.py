"""Issue 18: tables fit 80 columns. Names and states are never cut, long texts (why a connection waits, what a
location would lose, a long filter, a change's reason) go below the table as numbered notes, and `--wide` keeps
them in the table. Golden outputs at 80 and 200 columns."""

from __future__ import annotations

from pathlib import Path

import pytest
from clitool import Replctl

LONG_FILTER = "key = 'a-rather-long-key-for-the-eu-archive' OR array_contains(tags, 'ext')"


@pytest.fixture
def rc(tmp_path: Path) -> Replctl:
    """A and B both ways, B deleted what it got from A, C waits for it (ADD1), D gets A's events filtered."""
    tool = Replctl(tmp_path)
    tool("init")
    for name in "ABCD":
        tool("location", "add", name)
    tool("topology", "add", "A", "B", "--both")
    tool("topology", "add", "A", "D", "--filter", LONG_FILTER)
    tool.append("A", "a1", "a2")
    tool("replicate")
    tool("delete", "B", "--upto", "2", "--yes")
    tool("topology", "add", "B", "C", "--reason", "the eu archive wants every event of the application group")
    return tool


def at(rc: Replctl, columns: int, *args: str) -> str:
    """stdout of `replctl ARGS` at a terminal width of `columns`."""
    rc.env["COLUMNS"] = str(columns)
    return "\n".join(line.rstrip() for line in rc(*args).stdout.splitlines())


STATUS_80 = """\
location  role        state   seq  cvv    dvv    deleted  recoverable
──────────────────────────────────────────────────────────────────────
A         read-write  active  2    {A:2}  {}     0/0      no [1]
B         read-write  active  2    {A:2}  {A:2}  2/2      yes
C         read-write  active  0    {}     {}     0/0      yes
D         read-write  active  0    {}     {}     0/0      unknown
[1] A: no (would lose A: 1..2; fix: replctl backup create A)

connection  state    progress  lag  filter   why
─────────────────────────────────────────────────
A→B         active   2         0
A→D         active   2         0    yes [1]
B→A         active   2         0
B→C         pending  0         0             [2]
[1] A→D filter: key = 'a-rather-long-key-for-the-eu-archive' OR ARRAY_CONTAINS(tags, 'ext')
[2] B→C: waits [ADD1]: the source deleted events the target lacks (A: deleted up to 2, target has 0)

max seen per origin (deleted up to):
location  A
────────────────
A         2
B         2 (2)
C         0
D         0"""


def test_status_fits_80_columns_with_the_long_texts_below(rc: Replctl) -> None:
    text = at(rc, 80, "status")
    assert text.split("\nwarning")[0] == STATUS_80
    assert max(len(line) for line in text.splitlines() if not line.startswith(("[", "warning"))) <= 80
    assert "…" not in text


def test_status_wide_at_200_columns_keeps_every_text_in_its_row(rc: Replctl) -> None:
    text = at(rc, 200, "status", "--wide")
    words = " ".join(text.split())  # a row longer than 200 columns wraps, cut nowhere
    assert (
        "B→C pending 0 0 waits [ADD1]: the source deleted events the target lacks (A: deleted up to 2, "
        "target has 0)" in words
    )
    assert (
        "A→D active 2 0 key = 'a-rather-long-key-for-the-eu-archive' OR ARRAY_CONTAINS(tags, 'ext')" in words
    )
    assert "[1]" not in text and "…" not in text


def test_replicate_and_history_fit_80_columns(rc: Replctl) -> None:
    history = at(rc, 80, "topology", "history").splitlines()
    assert history[-1] == "[1] change 8: the eu archive wants every event of the application group"
    assert all(len(line) <= 80 for line in history[:-1]) and "…" not in "\n".join(history)
    replicated = at(rc, 80, "replicate", "--dry-run").splitlines()
    assert replicated[0].split() == [
        "connection",
        "state",
        "action",
        "read",
        "written",
        "skip",
        "c/f",
        "blocked",
        "progress",
        "why",
    ]
    assert replicated[-1] == (
        "[1] B→C: waits [ADD1]: the source deleted events the target lacks (A: deleted up to 2, target has 0)"
    )
    assert all(len(line) <= 80 for line in replicated[:2]) and "…" not in "\n".join(replicated)
