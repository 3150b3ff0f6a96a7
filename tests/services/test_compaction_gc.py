"""`log compact --gc` on the real log store (a local folder, or the remote adapter over one) and the real
SQLite catalog: what it collects, what it never collects, and where it refuses to run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pytest
from service_appends import append_keys
from shared_engine import bare_settings

from replctl.adapters.dataplane import Engine
from replctl.adapters.logstore import LogStore
from replctl.core.model import Change, ChangeKind, Location, Role
from replctl.errors import InvalidInput
from replctl.services import compaction, journal, logs, topology
from replctl.services.ports import Catalog

# A folder named as a segment is (`LogStore.new_segment_path`) that no catalog row names: an orphan.
ORPHAN = "seg-0000000000000000099-0bad0bad"


def _engine(store: LogStore, tmp_path: Path) -> Engine:
    """The real data plane on `store`; these stories run no Spark job (small appends are written without it)."""
    return Engine(store, bare_settings(db="", store=store.root, home=tmp_path / "home"))


def _log(catalog: Catalog, engine: Engine, name: str) -> list[tuple[Any, ...]]:
    """(seq, origin, origin_time, key) of every stored event of `name`'s log, in seq order."""
    return [
        (e["seq"], e["origin"], e["origin_time"], e["key"])
        for e in logs.show(catalog, engine, name)["events"]
    ]


def _orphan(folder: Path) -> None:
    (folder / ORPHAN).mkdir(parents=True)
    (folder / ORPHAN / "part-00000.parquet").write_bytes(b"left by a crash")


def test_compaction_gc_never_collects_the_segments_of_a_location_whose_id_differs_only_in_case(
    catalog: Catalog, tmp_path: Path
) -> None:
    store = LogStore(tmp_path / "logs")
    store.create_root()
    engine = _engine(store, tmp_path)
    topology.add_location(catalog, "eu", Role.READ_WRITE)
    # An older replctl let `location add EU` through (M1); today's refuses it, so it goes in as it did then.
    with catalog.transaction() as tx:
        tx.record_change(
            Change(kind=ChangeKind.LOCATION_ADDED, location="EU", role=Role.READ_WRITE),
            actor="test",
            reason=None,
            operation_id=None,
        )
        tx.put_location(Location(name="EU", role=Role.READ_WRITE))
    # On a store whose file system ignores case, `eu` and `EU` are one folder; this Linux one does not, so a
    # symbolic link stands for the shared folder.
    (tmp_path / "logs" / "eu").mkdir()
    (tmp_path / "logs" / "EU").symlink_to("eu")
    append_keys(catalog, engine, "eu", "e1")
    append_keys(catalog, engine, "EU", "E1", "E2")
    _orphan(tmp_path / "logs" / "eu")

    for name in ("eu", "EU"):
        dry = compaction.compact(catalog, engine, name, gc=True, dry_run=True)
        assert dry.orphans_removed == (f"{name}/{ORPHAN}",)
    assert compaction.compact(catalog, engine, "eu", gc=True).orphans_removed == (f"eu/{ORPHAN}",)
    assert compaction.compact(catalog, engine, "EU", gc=True).orphans_removed == ()

    assert _log(catalog, engine, "eu") == [(1, "eu", 1, "e1")]
    assert _log(catalog, engine, "EU") == [(1, "EU", 1, "E1"), (2, "EU", 2, "E2")]
    assert not (tmp_path / "logs" / "eu" / ORPHAN).exists()


@pytest.mark.parametrize("dry_run", [False, True], ids=["run", "dry-run"])
def test_log_compact_gc_on_a_remote_store_is_refused_before_anything_runs(
    catalog: Catalog, tmp_path: Path, dry_run: bool
) -> None:
    # The remote adapter (pyarrow's file system, as for s3a:// or hdfs://) over a local folder.
    store = LogStore(tmp_path / "remote", filesystem=pafs.LocalFileSystem())
    assert not store.is_local
    engine = _engine(store, tmp_path)
    topology.add_location(catalog, "A", Role.READ_WRITE)
    _orphan(tmp_path / "remote" / "A")
    before = [op.command for op in journal.recent_operations(catalog, 10).operations]

    with pytest.raises(InvalidInput) as refused:
        compaction.compact(catalog, engine, "A", gc=True, dry_run=dry_run)

    assert (refused.value.exit_code, refused.value.code) == (2, "bad-option")
    assert refused.value.message == (
        f"log compact --gc needs a local store: it lists the store's folders to find orphans, and the store "
        f"{store.root} is not local; nothing was done"
    )
    assert refused.value.hint == (
        "replctl log compact A (without --gc) merges small segments; remove orphan segment folders with the "
        "store's own tools"
    )
    # Nothing ran: no operation journalled, the orphan where it was.
    assert [op.command for op in journal.recent_operations(catalog, 10).operations] == before
    assert (tmp_path / "remote" / "A" / ORPHAN / "part-00000.parquet").read_bytes() == b"left by a crash"
