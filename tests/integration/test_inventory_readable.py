"""Which unreadable segment files count as damage (DR0) on real files: only invalid Parquet (truncated,
overwritten) and a file gone meanwhile; any other read failure says nothing about the bytes and is an
environment failure (exit 6), never a reason to drop the file from what a log holds."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from replctl.adapters.logstore import LogStore
from replctl.adapters.logstore.inventory import changed, held, readable
from replctl.core.model import Segment, SegmentFile
from replctl.errors import EnvironmentFailure
from replctl.localfiles import file_digest

DATA = "part-00000-x.snappy.parquet"


def parquet(path: Path) -> bytes:
    """Write a small real Parquet file at `path`; its bytes."""
    pq.write_table(pa.table({"seq": [1, 2, 3]}), path)
    return path.read_bytes()


def test_a_whole_file_reads_a_truncated_or_vanished_one_is_damage(tmp_path: Path) -> None:
    whole = tmp_path / "whole.parquet"
    content = parquet(whole)
    truncated = tmp_path / "truncated.parquet"
    truncated.write_bytes(content[: len(content) // 2])
    assert readable(whole) is True
    assert readable(truncated) is False
    assert readable(tmp_path / "gone.parquet") is False


def _refused(path: Path) -> EnvironmentFailure:
    with pytest.raises(EnvironmentFailure) as raised:
        readable(path)
    return raised.value


def test_a_file_that_cannot_be_opened_is_an_environment_failure_not_damage(tmp_path: Path) -> None:
    # Before, every read error (a folder in its place, permissions, EIO, EMFILE) counted as damage.
    folder = tmp_path / "folder.parquet"
    folder.mkdir()
    error = _refused(folder)
    assert (error.exit_code, error.code) == (6, "store")
    assert error.message.startswith(f"cannot read the segment file {folder}: ")
    assert error.hint == (
        "check the file's permissions, the disk holding the store and the open-file limit (ulimit -n), then re-run"
    )


def test_a_file_whose_footer_no_longer_parses_is_damage(tmp_path: Path) -> None:
    # A footer whose metadata rotted (one byte gone, still ending in PAR1) raised an OSError pyarrow gives
    # without errno, which was taken for the environment: exit 6 for ever, and the way out was a manual
    # removal. Also a magic replctl never writes (PARE: an encrypted footer).
    path = tmp_path / "rotted.parquet"
    content = parquet(path)
    path.write_bytes(content[:-20] + content[-19:])
    assert readable(path) is False
    path.write_bytes(content[:-4] + b"PARE")
    assert readable(path) is False
    path.write_bytes(bytes(len(content)))  # zeroed at its size: a torn write
    assert readable(path) is False


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file of mode 000 anyway")
def test_a_file_without_read_permission_is_an_environment_failure_not_damage(tmp_path: Path) -> None:
    path = tmp_path / "locked.parquet"
    parquet(path)
    path.chmod(0)
    try:
        error = _refused(path)
    finally:
        path.chmod(0o600)
    assert (error.exit_code, error.code) == (6, "store")
    assert error.message.startswith(f"cannot read the segment file {path}: ")


def _segment_folder(tmp_path: Path) -> tuple[LogStore, str, Path, bytes]:
    """A store with one segment of one real data file: the store, its path, its folder and the file's bytes."""
    store = LogStore(tmp_path / "logs")
    path = "B/seg-0000000000000000001-00000001"
    folder = store.local_path(path)
    folder.mkdir(parents=True)
    return store, path, folder, parquet(folder / DATA)


def test_held_drops_a_truncated_zeroed_or_foreign_file(
    tmp_path: Path,
) -> None:
    store, path, folder, content = _segment_folder(tmp_path)
    row = Segment(
        id=1, location="B", path=path, seq_lo=1, seq_hi=3, count=3, files=(SegmentFile(DATA, len(content)),)
    )
    assert held(store, row) == row
    (folder / DATA).write_bytes(content[:-4] + b"PARE")  # same size, not Parquet as replctl writes it: lost
    assert held(store, row) is None
    (folder / DATA).write_bytes(bytes(len(content)))  # zeroed at its size (a torn write): lost (DR0)
    assert held(store, row) is None
    (folder / DATA).write_bytes(content[: len(content) // 2])  # truncated: lost (DR0)
    assert held(store, row) is None


def test_changed_names_the_files_whose_bytes_differ_from_their_digest_at_their_recorded_size(
    tmp_path: Path,
) -> None:
    # `log verify` sends a file whose SHA-256 differs from its row to `recover`; recovery must see it too.
    store, path, folder, _ = _segment_folder(tmp_path)
    pq.write_table(pa.table({"seq": [1, 2, 3], "key": ["rot-k1", "rot-k2", "rot-k3"]}), folder / DATA)
    content = (folder / DATA).read_bytes()
    recorded = SegmentFile(DATA, len(content), rows=3, seq_lo=1, seq_hi=3, sha256=file_digest(folder / DATA))
    row = Segment(id=1, location="B", path=path, seq_lo=1, seq_hi=3, count=3, files=(recorded,))
    assert changed(store, row) == frozenset()
    rotted = bytearray(content)
    rotted[content.find(b"rot-k2") + 5] ^= 0x01  # one bit of a value, the size kept: it still parses
    (folder / DATA).write_bytes(bytes(rotted))
    assert changed(store, row) == {DATA}
    assert held(store, row, leave_out=changed(store, row)) is None
    # Zeroed at its size (a torn write): no Parquet any more, so `held` leaves it out; nothing to ask about.
    (folder / DATA).write_bytes(bytes(len(content)))
    assert changed(store, row) == frozenset() and held(store, row) is None
    # No digest recorded (older rows, remote stores): not judged by it.
    assert changed(store, replace(row, files=(replace(recorded, sha256=None),))) == frozenset()
    # Another size: judged by what it reads (a file cut short keeps its prefix, DR0), not by its digest.
    (folder / DATA).write_bytes(content + b"\0")
    assert changed(store, row) == frozenset()
    (folder / DATA).unlink()
    assert changed(store, row) == frozenset()
