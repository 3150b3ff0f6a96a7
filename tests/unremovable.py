"""Folders nothing can remove while the test holds them: for clean-ups that must be best effort, and for
stores that refuse to remove what a committed change left."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def unremovable(folder: Path) -> Iterator[None]:
    """`folder` (made, with one file) cannot be removed meanwhile (`held_fast`)."""
    folder.mkdir(parents=True)
    (folder / "part-00000.parquet").write_bytes(b"junk")
    with held_fast(folder):
        yield


@contextmanager
def held_fast(folder: Path) -> Iterator[None]:
    """The existing `folder` (holding at least one file) cannot be removed meanwhile, nor any file in it: for
    root, which ignores modes, its files are immutable (`chattr +i`; skipped where the file system does not
    take it); for anyone else the folder is read-only."""
    inside = sorted(str(path) for path in folder.iterdir() if path.is_file())
    assert inside, f"{folder} holds no file to hold fast"
    if os.geteuid() == 0:
        chattr = shutil.which("chattr")
        if chattr is None or subprocess.run([chattr, "+i", *inside], check=False).returncode:
            pytest.skip("root removes anything but an immutable file, and chattr +i is not available here")
        try:
            yield
        finally:
            subprocess.run([chattr, "-i", *inside], check=True)
    else:
        mode = folder.stat().st_mode & 0o777
        folder.chmod(0o500)
        try:
            yield
        finally:
            folder.chmod(mode)
