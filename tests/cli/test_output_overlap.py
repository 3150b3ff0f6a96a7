"""An output file the operator names never lands on replctl's own state (exit 2, `output-overlap`).

`--plan-out FILE`, `report --html FILE`, `db backup FILE` and `demo --dir FOLDER` once wrote wherever they were
told: a plan over the catalog, a report over the store's marker, a plan over a location's only segment, and the
acknowledged events were gone. Each is refused now before anything is read or written when its path is the
catalog (through `..` or a link too) or one of SQLite's side files, the log or backup store or a file in one,
or the config file in use; every file is left byte for byte as it was and the catalog still opens.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from clitool import Replctl

pytestmark = pytest.mark.spark

HINT = "name a file outside the catalog and the stores"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Replctl:
    """A catalog with location A, one segment of acknowledged events, one backup and a config file in use;
    built once (the Spark passes are the slow part): every test here refuses, so it stays as it is."""
    root = tmp_path_factory.mktemp("output-overlap")
    config = root / "replctl.toml"
    config.write_text('file_mode = "0600"\n', encoding="utf-8")
    rc = Replctl(root)
    rc.env["REPLCTL_CONFIG"] = str(config)
    rc("init")
    rc("location", "add", "A")
    rc.append("A", "acked-1", "acked-2")
    rc("backup", "create", "A")
    (root / "linked-catalog").symlink_to(root / "catalog.db")
    return rc


@pytest.fixture
def rc(built: Replctl, monkeypatch: pytest.MonkeyPatch) -> Iterator[Replctl]:
    """The built catalog, run from its folder: paths are typed relative to it, as an operator would."""
    monkeypatch.chdir(built.root)
    yield built


def _one(root: Path, pattern: str) -> str:
    (found,) = sorted(root.glob(pattern))
    return str(found.relative_to(root))


def _inside(store: str, folder: str) -> Callable[[Path], str]:
    return lambda root: f"lies inside the {store} {root / folder}"


# place -> (the path typed, relative to the root; what it is; what writing there does)
CATALOG = ("is the catalog", "would destroy it")
PLACES: dict[str, tuple[Callable[[Path], str], Callable[[Path], str], str]] = {
    "catalog": (lambda _: "catalog.db", lambda _: CATALOG[0], CATALOG[1]),
    "catalog-through-dotdot": (lambda _: "logs/../catalog.db", lambda _: CATALOG[0], CATALOG[1]),
    "catalog-through-link": (lambda _: "linked-catalog", lambda _: CATALOG[0], CATALOG[1]),
    "catalog-wal": (
        lambda _: "catalog.db-wal",
        lambda _: "is the catalog's write-ahead log",
        "would destroy the catalog",
    ),
    "catalog-shm": (
        lambda _: "catalog.db-shm",
        lambda _: "is the catalog's shared-memory index",
        "would destroy the catalog",
    ),
    "catalog-journal": (
        lambda _: "catalog.db-journal",
        lambda _: "is the catalog's rollback journal",
        "would destroy the catalog",
    ),
    "log-store": (lambda _: "logs", lambda _: "is the log store", "would destroy it"),
    "store-marker": (
        lambda _: "logs/replctl-store.json",
        _inside("log store", "logs"),
        "could destroy the store's files",
    ),
    "segment": (
        lambda root: _one(root, "logs/A/**/*.parquet"),
        _inside("log store", "logs"),
        "could destroy the store's files",
    ),
    "new-file-in-log-store": (
        lambda _: "logs/A/plan.json",
        _inside("log store", "logs"),
        "could destroy the store's files",
    ),
    "backup-store": (lambda _: "backups", lambda _: "is the backup store", "would destroy it"),
    "backup-manifest": (
        lambda root: _one(root, "backups/**/*.json"),
        lambda root: f"lies inside the backup store's manifests folder {root / 'backups' / 'manifests'}",
        "could destroy its backups",
    ),
    "backup-segment-copy": (
        lambda root: _one(root, "backups/segments/**/*.parquet"),
        lambda root: f"lies inside the backup store's segments folder {root / 'backups' / 'segments'}",
        "could destroy its backups",
    ),
    "config": (lambda _: "replctl.toml", lambda _: "is the config file in use", "would destroy it"),
}

# writer -> (its command line given the path; how the message names the path; what it would write)
WRITERS: dict[str, tuple[Callable[[str], list[str]], str, str]] = {
    "plan-out": (lambda p: ["--plan-out", p, "delete", "A", "--upto", "1"], "--plan-out", "the plan"),
    "report": (lambda p: ["report", "--html", p], "--html", "the report"),
    "db-backup": (lambda p: ["db", "backup", p], "db backup", "the copy"),
    "demo": (lambda p: ["demo", "--dir", p], "--dir", "the demo"),
}


def _files(root: Path) -> dict[str, bytes | str]:
    """Every entry under `root` by relative path: a file's bytes, a link's target, a folder as such."""
    found: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        if path.is_symlink():
            found[name] = f"-> {path.readlink()}"
        elif path.is_file():
            found[name] = path.read_bytes()
        else:
            found[name] = "folder"
    return found


def _own_files(root: Path) -> dict[str, bytes | str]:
    """`_files` but SQLite's -wal and -shm beside the catalog, which a read-only connection may leave."""
    return {name: content for name, content in _files(root).items() if not name.startswith("catalog.db-")}


def _content(path: Path) -> bytes | None:
    """The bytes of the file at `path` (through a link), None for a folder or nothing (`_files` covers those)."""
    return path.read_bytes() if path.is_file() else None


@pytest.mark.parametrize("place", sorted(PLACES))
@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_an_output_path_on_the_catalog_a_store_or_the_config_is_refused_and_nothing_changes(
    rc: Replctl, writer: str, place: str
) -> None:
    typed, what_it_is, consequence = PLACES[place]
    command, option, written = WRITERS[writer]
    path = typed(rc.root)
    protected = rc.root / path
    before, kept = _files(rc.root), _content(protected)
    doc = rc.json(*command(path), expect=2)
    assert doc == {
        "ok": False,
        "error": {
            "code": "output-overlap",
            "message": f"{option} {path} {what_it_is(rc.root)}; writing {written} there {consequence}",
            "hint": HINT,
        },
    }
    assert _content(protected) == kept
    assert _files(rc.root) == before
    rc("status")  # the catalog still opens, and the store is still the catalog's


def test_a_path_apart_from_the_catalog_and_the_stores_is_written_as_before(
    rc: Replctl, tmp_path: Path
) -> None:
    before = _own_files(rc.root)
    plan = tmp_path / "catalog.db"  # the catalog's name, in another folder: nothing of replctl's
    out = rc.json("--plan-out", str(plan), "delete", "A", "--upto", "1")
    assert out["plan_out"] == str(plan) and plan.is_file()
    report = tmp_path / "report.html"
    rc("report", "--html", str(report))
    assert report.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    copy = tmp_path / "copy.db"
    assert rc.json("db", "backup", str(copy))["file"] == str(copy)
    assert _own_files(rc.root) == before
    # Beside the backup store's own folders: a nightly catalog copy kept with the backups is the operator's.
    nightly = rc.root / "backups" / "catalog-nightly.db"
    assert rc.json("db", "backup", str(nightly))["file"] == str(nightly)
    nightly.unlink()
    assert _own_files(rc.root) == before
    rc("status")


@pytest.mark.parametrize(
    ("typed", "what_it_is"),
    [
        ("elsewhere", "is the --to backup store"),
        ("elsewhere/manifests/x.json", "lies inside the --to backup store's manifests folder {to}/manifests"),
        ("elsewhere/segments", "lies inside the --to backup store's segments folder {to}/segments"),
    ],
)
def test_a_plan_out_in_the_backup_store_that_backup_create_to_names_is_refused(
    rc: Replctl, typed: str, what_it_is: str
) -> None:
    to = rc.root / "elsewhere"
    before = _own_files(rc.root)
    doc = rc.json("--plan-out", typed, "backup", "create", "A", "--to", "elsewhere", expect=2)
    assert doc["error"] == {
        "code": "output-overlap",
        "message": f"--plan-out {typed} {what_it_is.format(to=to)}; writing the plan there would destroy it"
        if typed == "elsewhere"
        else f"--plan-out {typed} {what_it_is.format(to=to)}; writing the plan there could destroy its backups",
        "hint": HINT,
    }
    assert _own_files(rc.root) == before  # no plan, no --to store made


def test_a_plan_out_beside_the_folders_of_the_to_backup_store_is_written(rc: Replctl) -> None:
    # As beside the configured backup store's: the store reads only its manifests and segments folders.
    (rc.root / "elsewhere").mkdir()
    try:
        doc = rc.json("--plan-out", "elsewhere/x.json", "backup", "create", "A", "--to", "elsewhere")
        assert doc["plan_out"] == "elsewhere/x.json" and (rc.root / "elsewhere" / "x.json").is_file()
    finally:
        shutil.rmtree(rc.root / "elsewhere")


@pytest.mark.parametrize("folder", ["parent", "root-of-all"])
def test_demo_in_a_folder_that_holds_the_catalog_and_the_stores_is_refused_and_nothing_changes(
    rc: Replctl, folder: str
) -> None:
    directory = rc.root.parent if folder == "parent" else Path("/")
    before = _own_files(rc.root)
    doc = rc.json("demo", "--dir", str(directory), expect=2)
    assert doc["error"] == {
        "code": "output-overlap",
        "message": f"--dir {directory} holds the catalog {rc.root / 'catalog.db'}; the demo must not write "
        "beside it",
        "hint": "name a new or empty folder apart from the catalog and the stores",
    }
    assert _own_files(rc.root) == before
