"""The README's first command runs the demo; the demo itself must run to the end on the embedded defaults."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def run_demo(*args: str) -> subprocess.CompletedProcess[str]:
    """`replctl ARGS` (a demo) in a child process, as an operator runs it."""
    env = {**os.environ, "COLUMNS": "160", "REPLCTL_CONFIG": ""}
    return subprocess.run(
        [sys.executable, "-m", "replctl", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=480,
        check=False,
    )


def test_the_demo_runs_every_step_to_the_end(tmp_path: Path) -> None:
    done = run_demo("demo", "--dir", str(tmp_path / "demo"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "refused [F1]" in done.stderr
    assert "Done in" in done.stdout
    for line in ("A: ok (I1–I7)", "B: ok (I1–I7)", "C: ok (I1–I7)", "D: ok (I1–I7)"):
        assert line in done.stdout
    # BK1/BK2: every active location backed up and verified; B restored from its own backup after the loss.
    backup = r"B-\d{8}T\d{6}Z-[0-9a-f]{6}"
    for name in "ABCD":
        assert re.search(rf"^{name}-\d{{8}}T\d{{6}}Z-[0-9a-f]{{6}}: ok$", done.stdout, re.M)
    assert re.search(rf"^B: restore backup {backup} \(BK2\)$", done.stdout, re.M)


def test_the_demo_under_json_prints_one_document_and_no_narration(tmp_path: Path) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()  # an existing empty folder is fine
    done = run_demo("--json", "demo", "--dir", str(folder))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    doc = json.loads(done.stdout)  # exactly one document: no narration, no step's own output
    assert (doc["ok"], doc["dir"]) == (True, str(folder))
    assert doc["steps"][0] == {"command": ["replctl", "init"], "exit": 0, "expected": 0}
    assert [s["exit"] for s in doc["steps"]] == [s["expected"] for s in doc["steps"]]
    assert ["replctl", "delete", "A", "--upto", "5"] in [s["command"] for s in doc["steps"]]
