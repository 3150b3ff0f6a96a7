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
from replctl.adapters.logstore.reader import read_segment
from replctl.adapters.logstore.sourcechecks import changed_files, damage_explains
from replctl.core.model import Segment, SegmentFile
from replctl.errors import DamagedLog, EnvironmentFailure
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


def _rotted_segment(store: LogStore, location: str, index: int) -> Segment:
    """A segment of `location` of one real data file (page CRCs stored), one bit of a value then flipped at
    the file's size, as bit rot would; its row records the digest of the bytes written."""
    path = f"{location}/seg-{index:019d}-0000000{index}"
    name = f"part-0000{index}-rot.snappy.parquet"
    data = store.local_path(f"{path}/{name}")
    data.parent.mkdir(parents=True)
    pq.write_table(pa.table({"seq": [index], "key": [f"rot-k{index}"]}), data, write_page_checksum=True)
    content = data.read_bytes()
    recorded = SegmentFile(name, len(content), rows=1, seq_lo=index, seq_hi=index, sha256=file_digest(data))
    rotted = bytearray(content)
    rotted[content.find(f"rot-k{index}".encode()) + 5] ^= 0x01
    data.write_bytes(bytes(rotted))
    return Segment(
        id=index, location=location, path=path, seq_lo=index, seq_hi=index, count=1, files=(recorded,)
    )


def test_a_read_failing_a_page_checksum_is_damage_naming_the_changed_file(tmp_path: Path) -> None:
    # A byte changed at the file's size still decoded: the local reader read the changed event as intact.
    # Its pages' CRCs now fail the read, and the file whose digest changed is named as damage (DR0).
    store = LogStore(tmp_path / "logs")
    row = _rotted_segment(store, "A", 2)
    with pytest.raises(DamagedLog) as raised:
        read_segment(store, row, ["seq", "key"])
    assert (raised.value.exit_code, raised.value.hint) == (4, "replctl recover location A")
    assert raised.value.message == (
        f"A's log is damaged: segment {row.path} (from seq 2) differs from its catalog row: its file "
        "part-00002-rot.snappy.parquet changed since it was written and fails its read (DR0)"
    )


def test_a_failed_job_is_blamed_only_on_a_changed_file_it_names(tmp_path: Path) -> None:
    # Hashing every segment on each failure would cost a read of the whole log, and would turn a failure of
    # the environment into damage of a file changed elsewhere: only the segments the failure names are hashed.
    store = LogStore(tmp_path / "logs")
    first, second = _rotted_segment(store, "A", 1), _rotted_segment(store, "A", 2)
    named = f"Encountered error while reading file file://{store.local_path(second.path)}/part-00002-rot.snappy.parquet"
    assert changed_files(store, [first, second], named) == [f"{second.path}/part-00002-rot.snappy.parquet"]
    assert changed_files(store, [first, second], "Java heap space") == []
    failure = EnvironmentFailure("compaction failed in Spark: CRC checksum verification failed", code="spark")
    with pytest.raises(DamagedLog) as raised, damage_explains(store, [first, second]):
        try:
            raise RuntimeError(named)
        except RuntimeError as cause:
            raise failure from cause
    assert raised.value.message == (
        f"A's log is damaged: {second.path}/part-00002-rot.snappy.parquet changed since it was written (its "
        "SHA-256 differs from its catalog row's) and fails its read; nothing was decided or written from the "
        "read (DR0)"
    )
    with pytest.raises(EnvironmentFailure) as unnamed, damage_explains(store, [first, second]):
        raise EnvironmentFailure("compaction failed in Spark: Java heap space", code="spark")
    assert unnamed.value.code == "spark"  # the environment's failure, as it was
