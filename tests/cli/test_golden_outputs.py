"""Issue 18: the text output of each command, at 80 and at 200 columns, is compared with a golden file under
tests/cli/golden/, so a change of layout (a cut name, a wrapped title, a Python repr) shows in review.

Only what truly varies between runs is replaced before the comparison, each by an explicit substitution below
(timestamps, operation and backup ids, segment file names); the replacement keeps the width of what it
replaces, so a table's layout is compared as drawn. The story lives in a folder whose path has the same length
on every run (`/tmp/replctl-golden-` and 8 random characters), so the commands that print it (`config show`,
`engine status`) are compared with the path replaced by a placeholder of that length.

Regenerate after an intended change, then review the diff:
    REPLCTL_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -p no:cacheprovider tests/cli/test_golden_outputs.py
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from clitool import Replctl

pytestmark = pytest.mark.spark

GOLDEN = Path(__file__).parent / "golden"
WIDTHS = (80, 200)

# Each: what varies between runs, and the fixed text of the same width that stands for it.
SUBSTITUTIONS: list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]] = [
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
    # the same, cut by a narrow table: the digits kept before the ellipsis
    (re.compile(r"(?<=seg-\d{19}-)[0-9a-f]{1,7}(?=…)"), lambda m: "h" * len(m.group())),
    # timestamps with microseconds and an offset (`backup show`'s created_at)
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00"), "YYYY-MM-DDThh:mm:ss.ffffff+00:00"),
    # a segment's bytes and digest on a `backup show` row, for the same reason as a backup's bytes below
    (
        re.compile(r"(?m)^(│ \S+/seg-\S+ +│ \S+ +│ \d+ +│ )\d{4}( +│ )[0-9a-f]{16}( │)$"),
        r"\1nnnn\2dddddddddddddddd\3",
    ),
    # the host that ran an operation (`ops show`: "by USER@HOST at"); prose, so the width does not matter
    (re.compile(r"(?<=^by operator@)\S+(?= at )", re.M), "<host>"),
    # the Java runtime of the machine (`version`); prose as well
    (re.compile(r"(?m)^java: .*$"), "java: <java version>"),
    # a backup's bytes, last on its `backup list` row: Parquet's compression of the events varies by a few bytes
    (re.compile(r"(?m)^(\S+-yyyymmddThhmmssZ-hhhhhh .*)\b\d{4}\b( *)$"), r"\1nnnn\2"),
]

# Stand-ins in COMMANDS for ids the story makes, looked up before the command runs (see `resolve`): the
# incomplete deletion of A (an operation with a plan and steps) and the one backup, of B.
OP_ID = "<op-id>"
BACKUP_ID = "<backup-id>"

# The story's folder as the golden files show it: as long as the real one (see `story`).
ROOT_STANDIN = "<story>".ljust(len("/tmp/replctl-golden-") + 8, ".")

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
    "version": ("version",),
    "config-show": ("config", "show"),
    "topology-add-dry-run": ("topology", "add", "B", "C", "--dry-run"),
    "topology-remove-dry-run": ("topology", "remove", "A", "C", "--dry-run"),
    "topology-filter-dry-run": ("topology", "filter", "A", "C", "--set", "key = 'a2'", "--dry-run"),
    "topology-group-dry-run": ("topology", "group", "G", "B", "C", "--dry-run"),
    "location-retire-dry-run": ("location", "retire", "C", "--dry-run"),
    "log-verify": ("log", "verify"),
    "log-compact-dry-run": ("log", "compact", "A", "--dry-run"),
    "ops-show": ("ops", "show", OP_ID),
    "backup-show": ("backup", "show", BACKUP_ID),
    "backup-verify": ("backup", "verify"),
    "backup-prune-dry-run": ("backup", "prune", "--keep-last", "1", "--dry-run"),
    "delete-logical-dry-run": ("delete", "B", "--upto", "2", "--logical", "--dry-run"),
    "delete-guarded-dry-run": ("delete", "B", "--upto", "3", "--require-recoverable", "--dry-run"),
    "recover-from-backup-dry-run": ("recover", "location", "B", "--from-backup", "latest", "--dry-run"),
    "recover-from-backup-none-dry-run": ("recover", "location", "C", "--from-backup", "latest", "--dry-run"),
    "engine-status": ("engine", "status"),
    "db-current": ("db", "current"),
}


def normalise(text: str) -> str:
    """`text` with each substitution applied."""
    for pattern, fixed in SUBSTITUTIONS:
        text = pattern.sub(fixed, text)
    return text


@pytest.fixture(scope="module")
def story() -> Iterator[Path]:
    """A, B, C; A↔B, A→C filtered; events replicated, one deletion of A left pending, a backup of B, C lost."""
    # Not tmp_path: its length varies (user name, run number) and `config show` wraps long paths differently.
    root = Path(tempfile.mkdtemp(prefix="replctl-golden-", dir="/tmp"))
    assert len(str(root)) == len(ROOT_STANDIN), root
    yield from _told(root)
    shutil.rmtree(root, ignore_errors=True)


def _told(root: Path) -> Iterator[Path]:
    """The story played on `root`, then `root`."""
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
    yield root


def at_width(root: Path, columns: int) -> Replctl:
    """`replctl` on the story's catalog with a terminal `columns` wide."""
    rc = Replctl(root)
    rc.env["COLUMNS"] = str(columns)
    rc.env["LOGNAME"] = "operator"  # who made each change (topology history): the same on every machine
    return rc


def resolve(rc: Replctl, args: tuple[str, ...]) -> list[str]:
    """`args` with the stand-ins OP_ID and BACKUP_ID replaced by the ids the story made."""
    resolved = list(args)
    if OP_ID in args:
        ops = rc.json("ops", "list")["operations"]
        op = next(o for o in ops if o["command"] == "delete" and o["outcome"] == "incomplete")
        resolved[args.index(OP_ID)] = op["id"]
    if BACKUP_ID in args:
        resolved[args.index(BACKUP_ID)] = rc.json("backup", "list")["backups"][0]["id"]
    return resolved


@pytest.mark.parametrize("columns", WIDTHS)
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_text_output_matches_its_golden_file(story: Path, name: str, columns: int) -> None:
    rc = at_width(story, columns)
    if COMMANDS[name][0] == "engine":
        # An engine home of the story's own: the engine is down there, whatever runs beside this test.
        rc.env["REPLCTL_HOME"] = str(story / "engine-home")
    out = rc(*resolve(rc, COMMANDS[name]), expect=None)
    shown = " ".join(f'"{arg}"' if " " in arg else arg for arg in COMMANDS[name])  # as an operator types it
    text = f"$ replctl {shown}\n# exit {out.code}\n{out.stdout}"
    if out.stderr:
        text += f"# stderr\n{out.stderr}"
    text = normalise(text.replace(str(story), ROOT_STANDIN))
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


def test_the_substitutions_for_backup_show_keep_the_width_of_what_they_replace() -> None:
    created = "created_at: 2026-11-23T18:42:02.359570+00:00"
    row = "│ B/seg-0000000000000000001-b2d881… │ 1..1 │ 1      │ 2784  │ e468f543e46d05b9 │"
    assert normalise(created) == "created_at: YYYY-MM-DDThh:mm:ss.ffffff+00:00"
    assert (
        normalise(row) == "│ B/seg-0000000000000000001-hhhhhh… │ 1..1 │ 1      │ nnnn  │ dddddddddddddddd │"
    )
    assert len(normalise(row)) == len(row)
