"""Issue 18: the text output of each command, at 80 and at 200 columns, is compared with a golden file under
tests/cli/golden/, so a change of layout (a cut name, a wrapped title, a Python repr) shows in review.

Only what truly varies between runs is replaced before the comparison, each by an explicit substitution below
(timestamps, operation and backup ids, segment file names); the replacement keeps the width of what it
replaces, so a table's layout is compared as drawn. Commands that print the test's temporary paths
(`config show`, `init`) are left out: their width would depend on the path.

Regenerate after an intended change, then review the diff:
    REPLCTL_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -p no:cacheprovider tests/cli/test_golden_outputs.py
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from clitool import Replctl

pytestmark = pytest.mark.spark

GOLDEN = Path(__file__).parent / "golden"
WIDTHS = (80, 200)

# Each: what varies between runs, and the fixed text of the same width that stands for it.
SUBSTITUTIONS: list[tuple[re.Pattern[str], str]] = [
    # operation ids (UUID 4)
    (
        re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"),
        "<operation-id>".ljust(36, "."),
    ),
    # RFC 3339 timestamps in text (to the second, Z)
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"), "YYYY-MM-DDThh:mm:ssZ"),
    # backup ids: LOCATION-yyyymmddThhmmssZ-hex6
    (re.compile(r"(?<=-)\d{8}T\d{6}Z-[0-9a-f]{6}\b"), "yyyymmddThhmmssZ-hhhhhh"),
    # operation ids cut to their first 8 digits in `ops list`
    (re.compile(r"(?<=│ )[0-9a-f]{8}(?= │)"), "<op-id>."),
    # segment files: seg-SEQ-hex8 (the hex is random per write)
    (re.compile(r"(?<=seg-\d{19}-)[0-9a-f]{8}\b"), "hhhhhhhh"),
    # a backup's bytes, last on its `backup list` row: Parquet's compression of the events varies by a few bytes
    (re.compile(r"(?m)^(\S+-yyyymmddThhmmssZ-hhhhhh .*)\b\d{4}\b( *)$"), r"\1nnnn\2"),
]

# The commands compared, by golden file name; the story (below) gives them something to show.
COMMANDS: dict[str, tuple[str, ...]] = {
    "status": ("status",),
    "location-list": ("location", "list"),
    "location-show": ("location", "show", "A"),
    "topology-show": ("topology", "show"),
    "topology-show-tree": ("topology", "show", "--format", "tree"),
    "topology-history": ("topology", "history"),
    "topology-validate": ("topology", "validate"),
    "log-show": ("log", "show", "B", "--all"),
    "replicate-dry-run": ("replicate", "--dry-run"),
    "delete-dry-run": ("delete", "A", "--upto", "4", "--dry-run"),
    "recover-dry-run": ("recover", "location", "C", "--dry-run"),
    "backup-list": ("backup", "list"),
    "ops-list": ("ops", "list", "--limit", "5"),
}


def normalise(text: str) -> str:
    """`text` with each substitution applied."""
    for pattern, fixed in SUBSTITUTIONS:
        text = pattern.sub(fixed, text)
    return text


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A, B, C; A↔B, A→C filtered; events replicated, one deletion of A left pending, a backup of B, C lost."""
    root = tmp_path_factory.mktemp("golden")
    rc = at_width(root, 200)
    rc("init")
    for name in ("A", "B", "C"):
        rc("location", "add", name)
    rc("topology", "add", "A", "B", "--both", "--reason", "CHG-1")
    rc("topology", "add", "A", "C", "--filter", "key = 'a1'")
    rc.append("A", "a1", "a2")
    rc("log", "append", "B", "--event", '{"key": "b1", "type": "order", "tags": ["x"], "payload": {"n": 1}}')
    rc("replicate")
    rc.append("A", "a3")
    rc("delete", "A", "--upto", "4", "--yes", expect=5)
    rc("delete", "B", "--upto", "1", "--logical", "--yes")
    rc("backup", "create", "B")
    rc("drill", "disaster", "C", "--from", "1", "--yes")
    return root


def at_width(root: Path, columns: int) -> Replctl:
    """`replctl` on the story's catalog with a terminal `columns` wide."""
    rc = Replctl(root)
    rc.env["COLUMNS"] = str(columns)
    rc.env["LOGNAME"] = "operator"  # who made each change (topology history): the same on every machine
    return rc


@pytest.mark.parametrize("columns", WIDTHS)
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_text_output_matches_its_golden_file(story: Path, name: str, columns: int) -> None:
    out = at_width(story, columns)(*COMMANDS[name], expect=None)
    text = f"$ replctl {' '.join(COMMANDS[name])}\n# exit {out.code}\n{out.stdout}"
    if out.stderr:
        text += f"# stderr\n{out.stderr}"
    text = normalise(text)
    golden = GOLDEN / f"{name}.{columns}.txt"
    if os.environ.get("REPLCTL_UPDATE_GOLDEN") == "1":
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text)
    assert golden.exists(), f"no golden file {golden}; make it with REPLCTL_UPDATE_GOLDEN=1"
    assert text == golden.read_text()
    if columns == 80:
        # A table's rule under its header is as wide as the table; prose below it is left to the terminal to
        # wrap, so that a hint stays one copy-pasteable line.
        rules = [line for line in out.stdout.splitlines() if "──" in line]
        assert all(len(rule) <= 80 for rule in rules), "a table is wider than 80 columns"


def test_the_substitutions_keep_the_width_of_what_they_replace() -> None:
    line = (
        "x 3f2b8a4e-1c2d-4e5f-9a0b-1c2d3e4f5a6b B-20261123T165451Z-070a13 seg-0000000000000000004-9a244110 y"
    )
    stamp = "2026-11-23T16:54:51Z"
    assert len(normalise(line)) == len(line) and len(normalise(stamp)) == len(stamp)
    assert normalise(line + " " + stamp) == (
        "x <operation-id>...................... B-yyyymmddThhmmssZ-hhhhhh seg-0000000000000000004-hhhhhhhh y "
        "YYYY-MM-DDThh:mm:ssZ"
    )
