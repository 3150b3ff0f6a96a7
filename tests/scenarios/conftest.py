"""The scenario stories' fixture: the real CLI on a fresh, initialised catalog and store under tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest
from clitool import Replctl


@pytest.fixture
def rc(tmp_path: Path) -> Replctl:
    """`replctl` bound to a new SQLite catalog and store, after `replctl init`."""
    tool = Replctl(tmp_path)
    tool("init")
    return tool
