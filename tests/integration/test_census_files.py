"""The census of damage (DR0) on a real log-store folder: the same verdicts, with a folder listed only when its
segment's row names no file or none of the named files is there (issue 16: the census runs over every segment
of a location before every write and every backup)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from replctl.adapters.logstore import LogStore
from replctl.core.model import Segment, SegmentFile
from replctl.services.damage import find_damage

DATA = "part-00000-x.snappy.parquet"


def segment(store: LogStore, i: int, files: dict[str, bytes], *, recorded: bool = True) -> Segment:
    """Segment `i` of B, its folder holding `files` (and a `_SUCCESS` marker), its row naming one 5-byte file."""
    path = f"B/seg-{i:019d}-0000000{i}"
    folder = store.local_path(path)
    folder.mkdir(parents=True)
    (folder / "_SUCCESS").write_bytes(b"")
    for name, content in files.items():
        (folder / name).write_bytes(content)
    row = (SegmentFile(DATA, 5),) if recorded else None
    return Segment(id=i, location="B", path=path, seq_lo=i * 10, seq_hi=i * 10 + 9, count=10, files=row)


def test_the_census_looks_up_a_rows_files_by_name_and_lists_a_folder_only_to_tell_what_is_wrong(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LogStore(tmp_path / "logs")
    segments = [
        segment(store, 1, {DATA: b"12345"}),  # whole
        segment(store, 2, {DATA: b"12345"}, recorded=False),  # whole, its row names no file
        segment(store, 3, {DATA: b"1234"}),  # resized
        segment(store, 4, {}),  # emptied (only its marker left)
        segment(store, 5, {"part-00001-y.snappy.parquet": b"12345"}),  # its file renamed
        segment(store, 6, {DATA: b"12345"}),  # gone, below
    ]
    shutil.rmtree(store.local_path(segments[5].path))
    listed: list[str] = []
    real_scandir = os.scandir

    def recording_scandir(path: str | Path) -> Any:
        listed.append(Path(path).name)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", recording_scandir)
    found = find_damage(store, segments)
    assert [(d.segment.id, d.reason) for d in found] == [
        (3, "files differ"),
        (4, "missing"),
        (5, "files differ"),
        (6, "missing"),
    ]
    assert listed == [Path(segments[i].path).name for i in (1, 3, 4, 5)]
