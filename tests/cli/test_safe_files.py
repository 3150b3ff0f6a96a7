"""Reports and plans are written safely (issue 19 item 7): through a temporary file and a rename, never through a
symbolic link, a FIFO or a device (exit 2, `bad-path`, the thing left as it was), owner-only unless configured.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from clitool import Replctl

HINT = "name a new file, or a regular file to replace"


@pytest.fixture
def rc(tmp_path: Path) -> Replctl:
    """An initialised catalog with one location."""
    tool = Replctl(tmp_path)
    tool("init")
    tool("location", "add", "A")
    return tool


def _symlink(path: Path) -> str:
    private = path.with_name("private.txt")
    private.write_text("keep me")
    private.chmod(0o600)
    path.symlink_to(private)
    return "a symbolic link"


def _fifo(path: Path) -> str:
    os.mkfifo(path)
    return "a FIFO"


def _device(path: Path) -> str:
    try:
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # the null device's numbers
    except PermissionError:
        pytest.skip("making a device node needs root")
    return "a device"


MAKERS = [_symlink, _fifo, _device]
WRITERS = {
    "report": lambda path: ["report", "--html", str(path)],
    "plan": lambda path: ["--plan-out", str(path), "location", "add", "B"],
}


def _kind(path: Path) -> int:
    return stat.S_IFMT(path.lstat().st_mode)


@pytest.mark.parametrize("make", MAKERS, ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_link_fifo_or_device_in_the_way_is_refused_and_left_as_it_was(
    rc: Replctl, tmp_path: Path, make: Callable[[Path], str], writer: str
) -> None:
    path = tmp_path / "out.file"
    kind = make(path)
    before = _kind(path)
    doc = rc.json(*WRITERS[writer](path), expect=2)
    assert doc["error"] == {
        "code": "bad-path",
        "message": f"refusing to write {path}: it is {kind}",
        "hint": HINT,
    }
    assert _kind(path) == before
    if kind == "a symbolic link":
        target = tmp_path / "private.txt"
        assert target.read_text() == "keep me"
        assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    assert [loc["name"] for loc in rc.json("location", "list")["locations"]] == ["A"]


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_reports_and_plans_are_the_owners_only_unless_configured(
    rc: Replctl, tmp_path: Path, writer: str
) -> None:
    private = tmp_path / "private.out"
    rc(*WRITERS[writer](private))
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    rc.env["REPLCTL_FILE_MODE"] = "0640"
    shared = tmp_path / "shared.out"
    rc(*WRITERS[writer](shared))
    assert stat.S_IMODE(shared.stat().st_mode) == 0o640
