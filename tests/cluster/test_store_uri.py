"""A store named by a `file://` URI, end to end: the catalog records segment paths relative to the store root,
so the store folder can move and `--store` pointed at its new place reads the same logs.

The folders' names hold a space, written `%20` in the URI as RFC 8089 spells it: Spark (Hadoop) takes
paths unencoded, so the store must hand it the decoded path, or it writes beside the folder that local reads use.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from clitool import Replctl

from cluster.cluster_scenario import READS, in_process_invoker, run_story

pytestmark = [pytest.mark.slow, pytest.mark.spark]


def store_uri(folder: Path) -> str:
    """The `file://` URI of a folder, percent-encoded."""
    return folder.resolve().as_uri()


def catalog_segment_paths(tool: Replctl) -> list[str]:
    """Every segment path the catalog records, straight from its SQLite file."""
    db_file = tool.db_url.removeprefix("sqlite:///")
    with sqlite3.connect(db_file) as db:
        return [row[0] for row in db.execute("SELECT path FROM segments ORDER BY location, seq_lo")]


@pytest.fixture(scope="module")
def uri_story(tmp_path_factory: pytest.TempPathFactory) -> tuple[Replctl, Path, dict[str, Any]]:
    """The story run in process with `--store file:///.../first store`; returns the tool, folder and outcome."""
    root = tmp_path_factory.mktemp("uri-story")
    tool = Replctl(root)
    folder = root / "first store"
    outcome = run_story(in_process_invoker(tool, ["--store", store_uri(folder)]))
    return tool, folder, outcome


def test_a_store_given_as_a_file_uri_holds_the_same_logs_as_a_plain_path(
    uri_story: tuple[Replctl, Path, dict[str, Any]], local_story: dict[str, Any]
) -> None:
    _, folder, outcome = uri_story
    assert outcome == local_story
    # The segments (and the store marker) are in the named folder itself, not in one named after the encoded URI.
    assert sorted(p.name for p in folder.iterdir()) == ["A", "B", "replctl-store.json"]
    assert not list((folder.parent / "first%20store").rglob("seg-*"))


def test_init_with_a_file_uri_creates_the_named_folder_and_no_other(tmp_path: Path) -> None:
    tool = Replctl(tmp_path)
    tool("init", "--store", store_uri(tmp_path / "new store"))
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["new store"]


def test_the_catalog_records_segment_paths_relative_to_the_store_root(
    uri_story: tuple[Replctl, Path, dict[str, Any]],
) -> None:
    tool, folder, _ = uri_story
    paths = catalog_segment_paths(tool)
    assert paths, "the story leaves segments at A and B"
    for path in paths:
        assert path.split("/")[0] in {"A", "B"} and "://" not in path and not path.startswith("/")
        assert (folder / path).is_dir()


def test_a_moved_store_reads_the_same_logs_from_its_new_place(
    uri_story: tuple[Replctl, Path, dict[str, Any]],
) -> None:
    tool, folder, outcome = uri_story
    moved = folder.parent / "moved store" / "logs"
    moved.parent.mkdir()
    shutil.move(folder, moved)
    try:
        # The old place is gone, so nothing below can be read from it.
        assert not folder.exists()
        read = in_process_invoker(tool, ["--store", store_uri(moved)])
        assert {name: read(args, 0) for name, args in READS.items()} == outcome
    finally:
        # The store goes back, so the module's other tests find it wherever they run.
        shutil.move(moved, folder)
