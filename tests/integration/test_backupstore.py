"""The backup store (rules.md BK1) on real folders, worked on directly (a path, `file://`) and through a pyarrow
file system, the way a remote store (`hdfs://`, `s3a://`) is: both must hold the same bytes under the same
digests, list the same backups and restore the same segment."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow.fs as pafs
import pytest
from unremovable import unremovable

from replctl.adapters.backupstore import BackupStore
from replctl.adapters.logstore import LogStore
from replctl.core.backups import BackupSegment, Manifest
from replctl.core.model import SegmentFile
from replctl.core.vectortime import VectorTime
from replctl.errors import EnvironmentFailure
from replctl.localfiles import digest, file_digest

SEGMENT = "A/seg-0000000000000000001-0123abcd"

STORES: dict[str, Callable[[Path], BackupStore]] = {
    "path": BackupStore,
    "file-uri": lambda root: BackupStore(root.as_uri()),
    "pyarrow": lambda root: BackupStore(str(root), filesystem=pafs.LocalFileSystem()),
}


@pytest.fixture
def logs(tmp_path: Path) -> LogStore:
    """A log store with one segment as Spark leaves it: a data file, its `.crc`, `_SUCCESS` and its `.crc`."""
    store = LogStore(tmp_path / "logs")
    folder = store.local_path(SEGMENT)
    folder.mkdir(parents=True)
    (folder / "part-00000-x.snappy.parquet").write_bytes(b"events" * 1000)
    (folder / ".part-00000-x.snappy.parquet.crc").write_bytes(b"crc")
    (folder / "_SUCCESS").write_bytes(b"")
    (folder / "._SUCCESS.crc").write_bytes(b"crc")
    return store


def manifest(backup_id: str, location: str, created_at: str, size: int, sha: str) -> Manifest:
    seg = BackupSegment(SEGMENT, 1, 3, 3, VectorTime({"A": 3}), size, sha)
    cvv = VectorTime({"A": 3})
    return Manifest(backup_id, location, 7, 3, cvv, VectorTime(), 0, 0, (seg,), "0", created_at, "op")


@pytest.mark.parametrize("kind", sorted(STORES))
def test_a_segment_copy_holds_the_data_files_only_under_the_digest_it_was_copied_with(
    kind: str, tmp_path: Path, logs: LogStore
) -> None:
    backups = STORES[kind](tmp_path / "backups")
    size, sha = backups.put_segment(logs, SEGMENT)
    copy = tmp_path / "backups" / "segments" / SEGMENT
    # BK1: `_SUCCESS` and the `.crc` side files are not data; no temporary folder is left beside the copy.
    assert sorted(p.name for p in copy.iterdir()) == ["part-00000-x.snappy.parquet"]
    assert sorted(p.name for p in copy.parent.iterdir()) == [copy.name]
    assert (size, sha) == (6000, digest(copy))
    assert backups.segment_digest(SEGMENT) == sha and backups.segment_bytes(SEGMENT) == 6000
    # Only a local copy is trusted without a manifest (a move on an object store is not atomic).
    assert backups.has_segment(SEGMENT) is (kind != "pyarrow")
    assert backups.segment_digest("A/seg-0000000000000000009-ffffffff") is None


@pytest.mark.parametrize("kind", sorted(STORES))
def test_manifests_list_one_location_without_its_namesakes_and_restore_the_copy(
    kind: str, tmp_path: Path, logs: LogStore
) -> None:
    backups = STORES[kind](tmp_path / "backups")
    size, sha = backups.put_segment(logs, SEGMENT)
    older = manifest("A-20260101T000000Z-aaaaaa", "A", "2026-01-01T00:00:00+00:00", size, sha)
    newer = manifest("A-20260101T000000Z-000000", "A", "2026-01-01T00:00:00.5+00:00", size, sha)
    namesake = manifest("A-1-20260101T000000Z-bbbbbb", "A-1", "2026-01-01T00:00:01+00:00", size, sha)
    for m in (newer, namesake, older):
        backups.put_manifest(m)
    # Within one second the microseconds order them, not the random suffix; `A-1` is another location.
    assert [m.id for m in backups.manifests("A")] == [older.id, newer.id]
    assert [m.id for m in backups.manifests()] == [older.id, newer.id, namesake.id]
    assert backups.manifest(newer.id) == newer and backups.manifest("A-none") is None
    target = LogStore(tmp_path / "restored")
    backups.copy_segment_to(SEGMENT, target, "A/seg-0000000000000000001-99999999")
    assert digest(target.local_path("A/seg-0000000000000000001-99999999")) == sha
    backups.remove_manifest(older.id)
    backups.remove_manifest(older.id)  # absent: not an error
    assert [m.id for m in backups.manifests("A")] == [newer.id]
    backups.remove_segment(SEGMENT)
    backups.remove_segment(SEGMENT)
    assert backups.segment_digest(SEGMENT) is None


def test_a_file_uri_with_an_encoded_space_is_the_folder_it_names(tmp_path: Path, logs: LogStore) -> None:
    root = tmp_path / "backup store"
    backups = BackupStore(root.as_uri())
    assert "%20" in root.as_uri() and backups.is_local and backups.root == root
    backups.put_segment(logs, SEGMENT)
    assert (root / "segments" / SEGMENT).is_dir()
    assert backups.segment_store().local_path(SEGMENT) == root / "segments" / SEGMENT


def test_a_recorded_file_is_copied_under_its_write_digest_and_a_changed_source_shows_as_damage(
    tmp_path: Path, logs: LogStore
) -> None:
    # Issue 16: a file whose row recorded size and sha256 at write is copied by the kernel, unread by Python,
    # and stands under the digest recorded at write (BK1).
    data = logs.local_path(SEGMENT) / "part-00000-x.snappy.parquet"
    recorded = (SegmentFile(data.name, 6000, sha256=file_digest(data)),)
    streamed = BackupStore(tmp_path / "streamed")
    fast = BackupStore(tmp_path / "fast")
    assert fast.put_segment(logs, SEGMENT, [data.name], recorded=recorded) == streamed.put_segment(
        logs, SEGMENT
    )
    assert fast.segment_digest(SEGMENT) == streamed.segment_digest(SEGMENT)
    # The source changes after its write (same size): the backup does not vouch for the changed bytes; the
    # digest of its copy differs from the one it returns for the manifest, which `backup verify` and a
    # restore compare (BK2: a damaged backup exits 6).
    data.write_bytes(b"EVENTS" * 1000)
    changed = BackupStore(tmp_path / "changed")
    size, sha = changed.put_segment(logs, SEGMENT, [data.name], recorded=recorded)
    assert (size, sha) == (6000, fast.segment_digest(SEGMENT))
    assert changed.segment_digest(SEGMENT) != sha
    # A size other than the recorded one is a damaged source: refused (exit 6), no copy left behind.
    data.write_bytes(b"events")
    with pytest.raises(EnvironmentFailure, match="holds 6 bytes, but its segment row says 6000"):
        BackupStore(tmp_path / "short").put_segment(logs, SEGMENT, [data.name], recorded=recorded)
    assert BackupStore(tmp_path / "short").segment_digest(SEGMENT) is None
    assert list((tmp_path / "short" / "segments" / "A").iterdir()) == []


@pytest.mark.parametrize("kind", sorted(STORES))
def test_a_held_copy_restores_into_a_remote_log_store_under_the_digest_it_was_copied_with(
    kind: str, tmp_path: Path, logs: LogStore
) -> None:
    # BK2 into a log store worked on through a pyarrow file system (as `hdfs://`, `s3a://` are), from every
    # kind of backup store; the log store reads the copy back under the manifest's digest.
    backups = STORES[kind](tmp_path / "backups")
    _, sha = backups.put_segment(logs, SEGMENT)
    (tmp_path / "remote").mkdir()
    remote = LogStore(str(tmp_path / "remote"), filesystem=pafs.LocalFileSystem())
    assert not remote.is_local
    restored = "A/seg-0000000000000000001-99999999"
    assert remote.segment_digest(restored) is None
    backups.copy_segment_to(SEGMENT, remote, restored)
    assert sorted(p.name for p in (tmp_path / "remote" / "A").iterdir()) == [
        "seg-0000000000000000001-99999999"
    ]
    assert remote.segment_digest(restored) == sha == LogStore(tmp_path / "remote").segment_digest(restored)
    with pytest.raises(EnvironmentFailure, match="cannot copy onto an existing segment"):
        backups.copy_segment_to(SEGMENT, remote, restored)
    remote.remove(restored)
    assert remote.segment_digest(restored) is None


def test_copies_are_on_disk_before_the_manifest_with_one_fsync_per_folder_not_per_segment(
    tmp_path: Path, logs: LogStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # BK1, issue 16: every copied file and its folder are synced before the rename that shows the copy (a
    # copy a crashed backup left is whole); the folder the copies went into, and those above it, once per
    # manifest, before it. Each fsync is recorded by the path it flushed, on real files.
    second = "A/seg-0000000000000000004-4567cdef"
    shutil.copytree(logs.local_path(SEGMENT), logs.local_path(second))
    root = tmp_path / "backups"
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        path = Path(f"/proc/self/fd/{fd}").readlink().relative_to(root).as_posix()
        synced.append(re.sub(r"\.[0-9a-f]{8}\.tmp", ".TMP", path))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    backups = BackupStore(root)
    data = logs.local_path(SEGMENT) / "part-00000-x.snappy.parquet"
    recorded = (SegmentFile(data.name, 6000, sha256=file_digest(data)),)
    size, sha = backups.put_segment(logs, SEGMENT, [data.name], recorded=recorded)  # the kernel's copy
    backups.put_segment(logs, second)  # streamed through Python
    backups.put_manifest(manifest("A-20260101T000000Z-aaaaaa", "A", "2026-01-01T00:00:00+00:00", size, sha))
    tmp1, tmp2 = ".seg-0000000000000000001-0123abcd.TMP", ".seg-0000000000000000004-4567cdef.TMP"
    assert synced == [
        "segments",  # the first copy of A made `segments/A` (and `segments`): their names
        ".",
        f"segments/A/{tmp1}/part-00000-x.snappy.parquet",
        f"segments/A/{tmp1}",
        f"segments/A/{tmp2}/part-00000-x.snappy.parquet",
        f"segments/A/{tmp2}",
        ".",  # `manifests` just made
        "segments/A",  # both renames, once
        "manifests/.A-20260101T000000Z-aaaaaa.json.TMP",
        "manifests",
    ]
    # The next backup: its copy, the folder it went into, its manifest; nothing above that has not changed.
    third = "A/seg-0000000000000000007-89abcdef"
    shutil.copytree(logs.local_path(SEGMENT), logs.local_path(third))
    synced.clear()
    backups.put_segment(logs, third)
    backups.put_manifest(manifest("A-20260101T000001Z-bbbbbb", "A", "2026-01-01T00:00:01+00:00", size, sha))
    tmp3 = ".seg-0000000000000000007-89abcdef.TMP"
    assert synced == [
        f"segments/A/{tmp3}/part-00000-x.snappy.parquet",
        f"segments/A/{tmp3}",
        "segments/A",
        "manifests/.A-20260101T000001Z-bbbbbb.json.TMP",
        "manifests",
    ]


def test_a_manifest_is_written_one_key_and_one_segment_per_line(tmp_path: Path, logs: LogStore) -> None:
    # Issue 16: readable in a pager without `indent`, whose pure-Python encoder was a fifth of an incremental
    # backup at 100 segments; read back whole.
    backups = BackupStore(tmp_path / "backups")
    backups.put_segment(logs, SEGMENT)
    made = manifest("A-20260101T000000Z-aaaaaa", "A", "2026-01-01T00:00:00+00:00", 6000, "d1")
    backups.put_manifest(made)
    text = (tmp_path / "backups" / "manifests" / f"{made.id}.json").read_text(encoding="utf-8")
    segment = (
        '{"bytes": 6000, "count": 3, "digest": "d1", "path": "A/seg-0000000000000000001-0123abcd", '
        '"seq_hi": 3, "seq_lo": 1, "vt_lub": {"A": 3}}'
    )
    lines = text.splitlines()
    assert lines[0] == "{" and lines[-1] == "}" and text.endswith("}\n")
    assert lines[lines.index(' "segments": [') + 1 : lines.index(' "segments": [') + 3] == [
        f"  {segment}",
        " ],",
    ]
    assert ' "cvv": {"A": 3},' in lines and ' "id": "A-20260101T000000Z-aaaaaa",' in lines
    assert backups.manifest(made.id) == made


def test_removing_the_copies_set_aside_is_best_effort(tmp_path: Path) -> None:
    # A failure to remove leftover junk raised through `_failing` (exit 6) at the start of `backup create` and
    # in prune, though their dry runs said they would work.
    backups = BackupStore(tmp_path / "backups")
    holder = tmp_path / "backups" / "segments" / "A"
    stuck = holder / ".seg-0000000000000000001-0123abcd.aaaaaaaa.damaged"
    gone = holder / ".seg-0000000000000000002-0123abcd.bbbbbbbb.damaged"
    gone.mkdir(parents=True)
    (gone / "part-00000.parquet").write_bytes(b"junk")
    with unremovable(stuck):
        assert backups.remove_set_aside("A") == [gone.name]
        assert stuck.is_dir() and not gone.exists()
    assert backups.remove_set_aside("A") == [stuck.name]  # the next one tries again
    assert list(holder.iterdir()) == []
