"""The log store layout (no Spark): relative segment paths, URIs, and the local-file operations."""

from __future__ import annotations

from pathlib import Path

import pytest

from replctl.adapters.logstore import LogStore
from replctl.errors import EnvironmentFailure, InvalidInput


def test_segment_paths_are_relative_and_sort_by_first_seq(tmp_path: Path) -> None:
    store = LogStore(tmp_path / "logs")
    early, late = store.new_segment_path("A", 9), store.new_segment_path("A", 10)
    assert early.startswith("A/seg-0000000000000000009-") and len(early.rsplit("-", 1)[1]) == 8
    assert sorted([late, early]) == [early, late]
    assert store.uri(early) == (tmp_path / "logs").resolve().as_uri() + "/" + early


def test_uri_roots_are_joined_with_slashes() -> None:
    assert LogStore("s3a://bucket/logs/").uri("A/seg-1") == "s3a://bucket/logs/A/seg-1"
    assert LogStore("hdfs://nn:8020/r").uri("B/x") == "hdfs://nn:8020/r/B/x"
    assert not LogStore("s3a://bucket/logs").is_local
    assert LogStore("file:///tmp/logs").is_local
    with pytest.raises(EnvironmentFailure, match="local"):
        LogStore("s3a://bucket/logs").exists("A/seg-1")


def test_paths_cannot_escape_the_root(tmp_path: Path) -> None:
    store = LogStore(tmp_path)
    for bad in ("../x", "/etc", "A/../../x", ""):
        with pytest.raises(InvalidInput):
            store.uri(bad)
    for location in ("", "a/b", ".."):
        with pytest.raises(InvalidInput):
            store.new_segment_path(location, 1)


def test_list_copy_and_remove_local_segments(tmp_path: Path) -> None:
    store = LogStore(f"file://{tmp_path}")
    one, two = store.new_segment_path("A", 1), store.new_segment_path("A", 5)
    for rel in (two, one):
        store.local_path(rel).mkdir(parents=True)
        (store.local_path(rel) / "part-0.parquet").write_bytes(b"x")
    (store.local_path("A") / "not-a-segment").mkdir()
    assert store.list_segment_dirs("A") == [one, two]
    assert store.list_segment_dirs("B") == []

    copy = store.new_segment_path("B", 1)
    store.copy_segment(one, copy)
    assert (store.local_path(copy) / "part-0.parquet").read_bytes() == b"x"
    with pytest.raises(EnvironmentFailure, match="existing"):
        store.copy_segment(two, copy)

    store.remove(one)
    store.remove(one)  # absent: not an error
    assert not store.exists(one) and store.exists(two)
