"""`LogStore.changed_files` (services.ports) on the real log store and on the fake alike: the files of a segment
whose bytes are no longer the ones written, at their recorded size (bit rot), readable or not. `backup verify`
hashes them behind a damaged copy before it hints a new backup (services.backup_repair, BK1): a new backup
copies the same changed bytes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fakes.dataplane import DATA_FILE, FakeDataPlane, FakeStore

from replctl.adapters.logstore import LogStore
from replctl.adapters.logstore.inventory import record_files
from replctl.core.model import Segment
from replctl.services import ports

PATH = "A/seg-0000000000000000001-0a1b2c3d"


@dataclass
class Written:
    """A store holding one segment of three events, its catalog row, the name of its data file, and ways to
    change that file's bytes at its size: still decoding (`rot`) or not (`garble`)."""

    store: ports.LogStore
    segment: Segment
    name: str
    rot: Callable[[], None]
    garble: Callable[[], None]


def _real(tmp_path: Path) -> Written:
    store = LogStore(tmp_path / "logs")
    store.create_root()
    folder = tmp_path / "logs" / PATH
    folder.mkdir(parents=True)
    data = folder / "part-00000-x.snappy.parquet"
    pq.write_table(pa.table({"seq": [1, 2, 3], "key": ["k-one", "k-two", "k-six"]}), data)
    files = record_files(store, PATH)
    assert files is not None

    def flip(at: int) -> None:
        raw = bytearray(data.read_bytes())
        raw[at] ^= 0x01
        data.write_bytes(bytes(raw))

    content = data.read_bytes()
    return Written(
        store,
        Segment(1, "A", PATH, 1, 3, 3, files=files),
        data.name,
        rot=lambda: flip(content.find(b"k-two") + 4),
        garble=lambda: flip(len(content) - 2),  # the closing magic: no footer any more
    )


def _fake(tmp_path: Path) -> Written:
    store = FakeStore()
    store.write(PATH, [{"seq": s, "key": f"k{s}"} for s in (1, 2, 3)])
    files = FakeDataPlane(store).record_files(PATH)

    def rot() -> None:
        store.segments[PATH][1]["key"] = "k9"

    return Written(store, Segment(1, "A", PATH, 1, 3, 3, files=files), DATA_FILE, rot=rot, garble=rot)


@pytest.fixture(params=["real", "fake"])
def written(request: pytest.FixtureRequest, tmp_path: Path) -> Written:
    """One segment as written, on the real local log store or on the fake."""
    made: Written = {"real": _real, "fake": _fake}[request.param](tmp_path)
    return made


def test_a_segment_as_written_has_no_changed_file(written: Written) -> None:
    assert written.store.changed_files(written.segment) == frozenset()


@pytest.mark.parametrize("damage", ["rot", "garble"])
def test_a_file_changed_at_its_size_is_named_whether_or_not_it_still_reads(
    written: Written, damage: str
) -> None:
    getattr(written, damage)()
    assert written.store.changed_files(written.segment) == frozenset({written.name})


def test_a_removed_segment_has_no_changed_file(written: Written) -> None:
    # Gone is the census's damage (missing), not changed bytes.
    written.store.remove(PATH)
    assert written.store.changed_files(written.segment) == frozenset()
