"""Store identity stories: a mistyped or foreign store is refused (exit 6) before it is read as a log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clitool import Replctl

pytestmark = pytest.mark.spark


def _with_events(rc: Replctl) -> None:
    rc("location", "add", "P")
    rc.append("P", "p1", "p2", "p3")


def test_a_mistyped_store_is_refused_as_not_found_and_recovery_cannot_reset_the_log_from_it(
    rc: Replctl, tmp_path: Path
) -> None:
    # issue 14, case 1: the typo's empty folder was called a damaged log, and the hinted recovery lost P's clock.
    _with_events(rc)
    typo = tmp_path / "no-such-store"
    before = rc.snapshot()
    for args in (
        ("log", "show", "P"),
        ("recover", "location", "P", "--dry-run"),
        ("recover", "location", "P"),
        ("log", "compact", "P", "--gc"),
        ("log", "append", "P", "--event", '{"key": "p4"}'),
    ):
        doc = rc.json("--store", str(typo), *args, expect=6)
        assert doc["error"]["code"] == "store-not-found", args
        assert doc["error"]["message"] == (
            f"store not found: file://{typo} does not exist; nothing was read as a log"
        )
        assert "check --store" in doc["error"]["hint"]
    assert not typo.exists()  # nothing was created at the typo either
    assert rc.snapshot() == before
    assert rc.keys("P") == ["p1", "p2", "p3"]


def test_an_existing_folder_without_a_marker_is_not_a_store(rc: Replctl, tmp_path: Path) -> None:
    _with_events(rc)
    empty = tmp_path / "empty"
    empty.mkdir()
    doc = rc.json("--store", str(empty), "recover", "location", "P", expect=6)
    assert doc["error"]["code"] == "store-not-found"
    assert doc["error"]["message"] == (
        f"store not found: file://{empty} has no marker (file://{empty}/replctl-store.json); "
        "nothing was read as a log"
    )
    assert rc.json("location", "show", "P")["seq"] == 3


def test_another_catalogs_store_is_refused_by_init_and_by_every_store_command(tmp_path: Path) -> None:
    first = Replctl(tmp_path / "one")
    first("init")
    first("location", "add", "P")
    first.append("P", "p1")
    second = Replctl(tmp_path / "two")
    second.store = first.store
    second.env["REPLCTL_STORE"] = str(first.store)
    refused = second.json("init", expect=6)
    assert refused["error"]["code"] == "store-foreign"
    marker = json.loads((first.store / "replctl-store.json").read_text())
    assert refused["error"]["message"] == (
        f"the store at file://{first.store} belongs to another catalog "
        f"(its marker names catalog {marker['catalog_id']})"
    )
    # The second catalog was migrated before the store was checked: its store commands stay refused.
    second("location", "add", "P")
    assert second.json("log", "show", "P", expect=6)["error"]["code"] == "store-foreign"
    assert first.keys("P") == ["p1"]


def test_init_is_idempotent_and_keeps_the_marker(rc: Replctl) -> None:
    marker = (rc.store / "replctl-store.json").read_text()
    rc("init")
    assert (rc.store / "replctl-store.json").read_text() == marker


def test_db_upgrade_marks_the_store_of_a_catalog_made_before_markers_only_where_its_segments_are(
    rc: Replctl, tmp_path: Path
) -> None:
    from replctl.adapters.catalog import migrate

    _with_events(rc)
    migrate.downgrade(rc.db_url, "0003")
    (rc.store / "replctl-store.json").unlink()
    typo = tmp_path / "typo"
    typo.mkdir()
    refused = rc.json("--store", str(typo), "db", "upgrade", expect=6)
    assert refused["error"]["code"] == "store-not-found"
    assert refused["error"]["message"] == (
        f"the store at file://{typo} holds none of the catalog's 1 segment(s); "
        "it is not this catalog's store, so it is not marked as one"
    )
    assert not (typo / "replctl-store.json").exists()
    rc("db", "upgrade")
    assert (rc.store / "replctl-store.json").exists()
    assert rc.keys("P") == ["p1", "p2", "p3"]
