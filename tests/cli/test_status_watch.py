"""`status --watch` redraws text until Ctrl-C, so whatever refuses it must refuse before the first redraw."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clitool import Replctl


@pytest.fixture
def rc(tmp_path: Path) -> Replctl:
    tool = Replctl(tmp_path)
    tool("init")
    return tool


# A watch that started would redraw until the timeout: these tests fail then, they do not hang the suite.
@pytest.mark.timeout(60)
def test_watch_under_json_exits_2_with_the_json_error(rc: Replctl) -> None:
    out = rc("--json", "status", "--watch", "1", expect=2)
    assert json.loads(out.stdout) == {
        "ok": False,
        "error": {
            "code": "bad-option",
            "message": "--watch redraws a text display and cannot be combined with --json",
            "hint": "drop --watch, or poll `replctl --json status` from the script",
        },
    }


@pytest.mark.timeout(60)
def test_watch_with_plan_out_is_refused_as_a_read_only_command(rc: Replctl, tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    out = rc("status", "--watch", "1", "--plan-out", str(path), expect=2)
    assert out.stderr.splitlines()[0] == (
        "error: replctl status changes nothing; --plan-out is for mutating commands"
    )
    assert out.stdout == ""
    assert not path.exists()
