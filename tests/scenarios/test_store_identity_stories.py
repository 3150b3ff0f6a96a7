"""Store identity stories: a mistyped or foreign store is refused (exit 6) before it is read as a log."""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

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
    # A refused init leaves nothing behind: no catalog that a later command would take for a made one.
    assert not (tmp_path / "two" / "catalog.db").exists()
    # A catalog made with a store of its own and then pointed at the other's: its store commands are refused.
    second.env["REPLCTL_STORE"] = str(tmp_path / "two-store")
    second("init")
    second.env["REPLCTL_STORE"] = str(first.store)
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


def _copy_catalog(rc: Replctl, copy: Path) -> str:
    """The runbook's catalog backup: SQLite's online backup of the live catalog, as `sqlite3 .backup` takes."""
    with (
        closing(sqlite3.connect(rc.db_url.removeprefix("sqlite:///"))) as live,
        closing(sqlite3.connect(copy)) as target,
    ):
        live.backup(target)
    return f"sqlite:///{copy}"


def test_an_older_copy_of_the_catalog_is_refused_before_it_reassigns_an_identity_or_removes_a_segment(
    rc: Replctl, tmp_path: Path
) -> None:
    # The catalog backup restored (or a second `--db` naming it) had the live catalog's id: `log append`
    # assigned (A, 2) again (M3) and `log compact --gc` removed a2's segment as an orphan, a2's only copy.
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc.append("A", "a1")
    rc("replicate")
    older = _copy_catalog(rc, tmp_path / "catalog-copy.db")
    rc.append("A", "a2")
    rc("location", "add", "C")
    rc.append("C", "c1")
    live = rc.db_url

    def version_at(which: str) -> int:
        path = (live if which == "live" else older).removeprefix("sqlite:///")
        with closing(sqlite3.connect(path)) as db:
            return int(db.execute("SELECT version FROM catalog_state").fetchone()[0])

    rc.env["REPLCTL_DB"] = older
    for args in (
        ("status",),
        ("log", "append", "A", "--event", '{"key": "a2-prime"}'),
        ("log", "compact", "A", "--gc"),
        ("log", "compact", "A", "--gc", "--dry-run"),
        ("log", "show", "A"),
        ("replicate",),
        ("recover", "location", "A", "--dry-run"),
        # A stale backup would become A's newest, and a prune judged on this catalog would remove the real one.
        ("backup", "create", "A"),
        ("backup", "prune", "A", "--keep-last", "1", "--dry-run"),
    ):
        doc = rc.json(*args, expect=6)
        assert doc["error"]["code"] == "catalog-behind", args
        assert doc["error"]["message"] == (
            f"this catalog is older than the store at file://{rc.store}: the store was last written at "
            f"catalog version {version_at('live')} (this catalog: {version_at('copy')}), A up to seq 2 "
            "(this catalog: 1), C up to seq 1 (this catalog has no location C); this catalog is an older copy "
            "(a restored catalog backup, or --db naming a copy), and using it would assign again event "
            "identities the store holds (M3) and take newer segments for orphans; nothing was read as a log"
        )
        assert doc["error"]["hint"] == (
            "point --db (or REPLCTL_DB) at the live catalog; if it is lost, keep this store as it is "
            "(see docs/runbook.md, 'A catalog older than its store')"
        )
    rc.env["REPLCTL_DB"] = live
    assert rc.stored("A") == [("A", 1, "a1"), ("A", 2, "a2")]
    assert rc.json("log", "verify")["ok"] is True
    rc("replicate")
    assert rc.stored("B") == [("A", 1, "a1"), ("A", 2, "a2")]


def test_a_prune_through_an_older_copy_of_the_catalog_is_refused_before_it_removes_anything(
    rc: Replctl, tmp_path: Path
) -> None:
    # BK3, BK4: the prune judges which backup is a location's newest from the catalog: through an older copy
    # it is refused (exit 6) before a manifest or a file goes, as every command that removes store files is.
    rc("location", "add", "A")
    rc.append("A", "a1")
    rc("backup", "create", "A")
    older = _copy_catalog(rc, tmp_path / "catalog-copy.db")
    rc.append("A", "a2")
    rc("backup", "create", "A")
    held = sorted(p.relative_to(rc.backups) for p in rc.backups.rglob("*"))
    live = rc.db_url
    rc.env["REPLCTL_DB"] = older
    for keep in ("1", "0"):
        error = rc.json("backup", "prune", "A", "--keep-last", keep, expect=6)["error"]
        assert error["code"] == "catalog-behind"
        assert error["message"].startswith(f"this catalog is older than the store at file://{rc.store}: ")
    assert sorted(p.relative_to(rc.backups) for p in rc.backups.rglob("*")) == held
    rc.env["REPLCTL_DB"] = live
    assert len(rc.json("backup", "list")["backups"]) == 2


def test_the_marker_follows_the_catalog_and_a_crash_before_it_is_raised_refuses_nothing(rc: Replctl) -> None:
    rc("location", "add", "A")
    rc.append("A", "a1", "a2")
    marker = json.loads((rc.store / "replctl-store.json").read_text())
    assert marker["seqs"] == {"A": 2}
    version = marker["catalog_version"]
    assert version > 0
    # A marker behind the catalog (a command killed between its commit and the marker) is no refusal.
    (rc.store / "replctl-store.json").write_text(json.dumps(marker | {"seqs": {"A": 1}}))
    rc.append("A", "a3")
    raised = json.loads((rc.store / "replctl-store.json").read_text())
    assert raised["seqs"] == {"A": 3}
    assert raised["catalog_version"] > version
    assert raised["catalog_id"] == marker["catalog_id"]
    assert raised["created_at"] == marker["created_at"]


def test_recovering_against_an_older_copy_of_the_store_is_refused_until_the_loss_is_accepted(
    rc: Replctl, tmp_path: Path
) -> None:
    # A copy of the store (`cp -a`) written through `--store`, then the live store again: A's newest segment is
    # missing there, and the hinted recovery recorded a2 lost for good while it was intact in the copy.
    rc("location", "add", "A")
    rc.append("A", "a1")
    copy = tmp_path / "store-copy"
    shutil.copytree(rc.store, copy)
    rc("--store", str(copy), "log", "append", "A", "--event", '{"key": "a2"}')
    assert rc.json("log", "show", "A", expect=6)["error"]["hint"] == "replctl recover location A"
    before = rc.snapshot()
    for args in (("--dry-run",), ()):
        doc = rc.json("recover", "location", "A", *args, expect=6)
        assert doc["error"] == {
            "code": "store-behind",
            "message": (
                f"A's log lacks its events from seq 2 on, and the store at file://{rc.store} never recorded A "
                "past seq 1: the store is older than this catalog (a copy, or a store restored from a file "
                "backup), and those events may be intact in the live store; nothing was changed"
            ),
            "hint": (
                "check --store (or REPLCTL_STORE); if this is the live store and those files are lost for good: "
                "replctl recover location A --accept-loss"
            ),
        }
    assert rc.snapshot() == before
    assert [e["key"] for e in rc.json("--store", str(copy), "log", "show", "A")["events"]] == ["a1", "a2"]
    # Told it is the live store, the recovery runs and names what is gone.
    done = rc.json("recover", "location", "A", "--accept-loss")
    assert done["lost"] == {"A": [2, 2]}
    assert rc.keys("A") == ["a1"]


def _dump(url: str) -> list[str]:
    """Every row of a SQLite catalog, as SQL: what a refused command must leave untouched."""
    with closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as db:
        return list(db.iterdump())


def _store_files(rc: Replctl) -> dict[str, bytes]:
    return {str(p.relative_to(rc.store)): p.read_bytes() for p in sorted(rc.store.rglob("*")) if p.is_file()}


def _a_compacted_after_a_copy(rc: Replctl, tmp_path: Path) -> str:
    """The operator's story up to the fork: A's a4 and a5 appended after the last replicate, a catalog copy
    taken, then A compacted through the live catalog (which raises the store's marker)."""
    rc("location", "add", "A")
    rc("location", "add", "B")
    rc("topology", "add", "A", "B", "--both")
    rc("log", "append", "A", "--generate", "3")
    rc("replicate")
    rc("log", "append", "A", "--event", '{"key":"a4"}')
    rc("log", "append", "A", "--event", '{"key":"a5"}')
    copy = _copy_catalog(rc, tmp_path / "catalog-copy.db")
    rc("log", "compact", "A")
    return copy


def test_a_copy_whose_catalog_only_commands_passed_the_markers_version_is_still_refused(
    rc: Replctl, tmp_path: Path
) -> None:
    # The version is a counter: five `location add` on the copy (catalog-only, the store unchecked) raised it
    # past the marker's, the copy was accepted, its recovery called a4 and a5 lost for good (they were intact in
    # the compacted segment) and raised the marker past the live catalog, which was then refused.
    copy = _a_compacted_after_a_copy(rc, tmp_path)
    assert rc.json("--db", copy, "status", expect=6)["error"]["code"] == "catalog-behind"
    for name in ("Z1", "Z2", "Z3", "Z4", "Z5"):
        rc("--db", copy, "location", "add", name)
    marker = json.loads((rc.store / "replctl-store.json").read_text())
    with closing(sqlite3.connect(copy.removeprefix("sqlite:///"))) as db:
        copy_version = int(db.execute("SELECT version FROM catalog_state").fetchone()[0])
    assert copy_version > marker["catalog_version"]
    before = (_dump(copy), _store_files(rc))
    for args in (("status",), ("recover", "location", "A", "--dry-run"), ("recover", "location", "A")):
        doc = rc.json("--db", copy, *args, expect=6)
        assert doc["error"] == {
            "code": "catalog-behind",
            "message": (
                f"this catalog has another history than the store at file://{rc.store}: the store was last "
                f"written at catalog version {marker['catalog_version']}, which this catalog (now at version "
                f"{copy_version}) reached through other changes; this catalog is a copy that "
                "went on apart from the live catalog (a restored catalog backup, or --db naming a copy), and "
                "using it would assign again event identities the store holds (M3) and take newer segments for "
                "orphans; nothing was read as a log"
            ),
            "hint": (
                "point --db (or REPLCTL_DB) at the live catalog; if it is lost, keep this store as it is "
                "(see docs/runbook.md, 'A catalog older than its store')"
            ),
        }, args
    assert (_dump(copy), _store_files(rc)) == before
    # The live catalog is untouched and current: A still holds a4 and a5, and B gets them.
    assert rc("status").code == 0
    assert rc.keys("A")[-2:] == ["a4", "a5"]
    assert rc.json("log", "verify")["ok"] is True
    rc("replicate")
    assert [key for origin, _, key in rc.stored("B") if origin == "A"][-2:] == ["a4", "a5"]


def test_a_copy_taken_after_the_last_store_command_has_the_same_history_and_is_accepted(
    rc: Replctl, tmp_path: Path
) -> None:
    # Taken after `log compact A`, the copy shares the live catalog's lineage up to the marker's version, and
    # its own catalog-only commands since do not change that.
    _a_compacted_after_a_copy(rc, tmp_path)
    rc("location", "add", "L1")  # the live catalog goes on with a catalog-only change
    copy = _copy_catalog(rc, tmp_path / "later-copy.db")
    rc("location", "add", "L2")
    rc("--db", copy, "location", "add", "Z1")
    assert rc("--db", copy, "status").code == 0
    assert [e["key"] for e in rc.json("--db", copy, "log", "show", "A")["events"]][-2:] == ["a4", "a5"]
    assert rc("status").code == 0


def _marker_after_a1(rc: Replctl) -> tuple[Path, dict[str, Any]]:
    """A's a1 appended: the store's marker file and what it holds."""
    rc("location", "add", "A")
    rc.append("A", "a1")
    path = rc.store / "replctl-store.json"
    return path, json.loads(path.read_text())


def test_a_marker_written_before_lineages_is_checked_by_the_numbers_and_gets_a_token_when_next_raised(
    rc: Replctl,
) -> None:
    path, marker = _marker_after_a1(rc)
    assert len(marker["catalog_version_token"]) == 32
    old = {key: value for key, value in marker.items() if key != "catalog_version_token"}
    path.write_text(json.dumps(old))
    assert rc("status").code == 0
    assert rc.keys("A") == ["a1"]
    assert json.loads(path.read_text()) == old  # a read raises nothing
    rc.append("A", "a2")
    raised = json.loads(path.read_text())
    assert raised["catalog_version"] > old["catalog_version"]
    assert len(raised["catalog_version_token"]) == 32
    assert raised["catalog_version_token"] != marker["catalog_version_token"]


def test_a_marker_whose_version_the_catalog_reached_through_other_changes_is_refused_without_a_token_row(
    rc: Replctl,
) -> None:
    # A marker naming a version this catalog has no lineage row for (its lineage began later) tells no shared
    # history either: refused the same way.
    _, marker = _marker_after_a1(rc)
    with closing(sqlite3.connect(rc.db_url.removeprefix("sqlite:///"))) as db, db:
        db.execute("DELETE FROM catalog_lineage WHERE version = ?", (marker["catalog_version"],))
    doc = rc.json("log", "show", "A", expect=6)
    assert doc["error"]["code"] == "catalog-behind"
    assert "reached through other changes" in doc["error"]["message"]
