"""A failed `replctl init` leaves the folders exactly as they were: every file with the same bytes, nothing
created that stays (an empty catalog a later command would take for a real one, a store folder to trip over);
an in-memory catalog, which would vanish with the process, is refused (exit 2) before anything is made."""

from __future__ import annotations

from pathlib import Path

import pytest
from clitool import Replctl
from shared_engine import bare_settings

from replctl.adapters.installer import Installer
from replctl.adapters.logstore.marker import MARKER_NAME

MEMORY_HINT = "name a file: sqlite:///PATH (relative) or sqlite:////PATH (absolute)"


def files(root: Path) -> dict[str, bytes | None]:
    """Every entry under `root` by relative path: a file's bytes, None for a folder."""
    return {
        str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes()) for p in sorted(root.rglob("*"))
    }


@pytest.fixture
def rc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Replctl:
    """`replctl` on a catalog and store under tmp_path/home, nothing made yet; run from tmp_path/cwd, where
    relative catalog paths land."""
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    return Replctl(home)


@pytest.mark.parametrize(
    ("db", "message", "hint"),
    [
        (
            "sqlite://relative.db",
            "the catalog URL sqlite://relative.db names a host; a SQLite catalog is a file",
            "three slashes before a relative path: sqlite:///relative.db",
        ),
        (
            "sqlite:///:memory:",
            "the catalog sqlite:///:memory: would be an in-memory SQLite database, lost when the command exits",
            MEMORY_HINT,
        ),
        (
            "sqlite://",
            "the catalog sqlite:// would be an in-memory SQLite database, lost when the command exits",
            MEMORY_HINT,
        ),
        (
            "sqlite:///file:cat.db?mode=memory&uri=true",
            # Resolved against the working folder like any relative catalog path, then refused.
            "the catalog sqlite:///{cwd}/file:cat.db?mode=memory&uri=true would be an in-memory SQLite "
            "database, lost when the command exits",
            MEMORY_HINT,
        ),
    ],
)
def test_init_on_a_catalog_url_that_is_no_file_exits_2_and_makes_nothing(
    rc: Replctl, tmp_path: Path, db: str, message: str, hint: str
) -> None:
    doc = rc.json("--db", db, "init", expect=2)
    expected = message.replace("{cwd}", str(tmp_path / "cwd"))
    assert doc["error"] == {"code": "bad-db-url", "message": expected, "hint": hint}
    assert files(tmp_path) == {"cwd": None, "home": None}


def test_init_with_another_store_on_a_home_that_has_a_catalog_leaves_both_as_they_were(
    rc: Replctl, tmp_path: Path
) -> None:
    rc("init")
    rc("location", "add", "A")
    before = files(tmp_path)
    doc = rc.json("--store", str(tmp_path / "X" / "logs"), "init", expect=6)
    assert doc["error"]["code"] == "store-not-found"
    assert files(tmp_path) == before  # no X/logs, no X: byte for byte as before


def test_a_new_catalog_refused_by_another_catalog_s_store_is_removed_with_its_folders(
    rc: Replctl, tmp_path: Path
) -> None:
    rc("init")  # the store under home belongs to this catalog
    before = files(tmp_path)
    catalog = tmp_path / "new" / "deeper" / "catalog.db"
    rc("--db", f"sqlite:///{catalog}", "init", expect=6)
    assert files(tmp_path) == before  # neither the new catalog (nor its side files) nor its folders stay


def test_a_store_folder_that_was_there_keeps_what_it_held_and_gets_no_marker(
    rc: Replctl, tmp_path: Path
) -> None:
    rc("init")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("the operator's\n")
    before = files(tmp_path)
    # A catalog that exists, a store folder it did not make: refused as not its store, and left alone.
    rc("--store", str(mine), "init", expect=6)
    assert files(tmp_path) == before


def test_a_successful_init_still_makes_the_catalog_and_the_store(rc: Replctl, tmp_path: Path) -> None:
    rc("init")
    assert {"home/catalog.db", "home/logs", "home/logs/replctl-store.json"} <= files(tmp_path).keys()


def test_a_failed_init_leaves_what_another_process_put_in_a_folder_it_created(tmp_path: Path) -> None:
    # The clean-up removed each folder it had created with everything in it, a file another process put there
    # while init ran included. It removes its own files, then its folders only when empty.
    new = tmp_path / "new"
    catalog = new / "db" / "catalog.db"
    store = new / "logs"
    settings = bare_settings(db=f"sqlite:///{catalog}", store=str(store), home=tmp_path / "home")
    installer = Installer(settings)
    with pytest.raises(RuntimeError), installer.undone_on_failure():
        installer.create_catalog_file()
        Path(f"{catalog}-wal").write_bytes(b"wal")  # as SQLite makes it
        installer.create_store_root()
        (store / MARKER_NAME).write_text("{}")
        (store / "notes.txt").write_text("another process's\n")
        raise RuntimeError("init failed late")
    assert files(tmp_path) == {"new": None, "new/logs": None, "new/logs/notes.txt": b"another process's\n"}
