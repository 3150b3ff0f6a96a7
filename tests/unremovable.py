"""A folder nothing can remove while the test holds it, for clean-ups that must be best effort."""

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
    """`folder` (made, with one file) cannot be removed meanwhile: its file is immutable for root (`chattr
    +i`; skipped where the file system does not take it), its folder read-only for anyone else."""
    folder.mkdir(parents=True)
    inside = folder / "part-00000.parquet"
    inside.write_bytes(b"junk")
    if os.geteuid() == 0:
        chattr = shutil.which("chattr")
        if chattr is None or subprocess.run([chattr, "+i", str(inside)], check=False).returncode:
            pytest.skip("root removes anything but an immutable file, and chattr +i is not available here")
        try:
            yield
        finally:
            subprocess.run([chattr, "-i", str(inside)], check=True)
    else:
        folder.chmod(0o500)
        try:
            yield
        finally:
            folder.chmod(0o700)
