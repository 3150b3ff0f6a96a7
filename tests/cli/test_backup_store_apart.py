"""A backup store that overlaps the log store is refused before anything is written (BK1, BK2; exit 2).

The log store keeps one folder per location: a backup store inside it looks like a location's log, and
recovery, compaction, drills and the census of unknown files may remove or misread its files; one that holds
the log store, or is it, is as wrong. `backup create` (its dry run and its plan too), `backup prune` and
`recover location --from-backup` refuse such a store with the folder to use instead, and leave the catalog,
the journal and the log store as they were.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from clitool import Replctl

from replctl.adapters.catalog.repository import Catalog

REASON = "backups must lie apart from the logs, where recovery, compaction and drills cannot remove or misread them"


@pytest.fixture
def rc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Replctl:
    """`replctl` on a new catalog with location A, run from its folder (relative `--to` is taken from there)."""
    monkeypatch.chdir(tmp_path)
    tool = Replctl(tmp_path)
    tool("init")
    tool("location", "add", "A")
    return tool


def state(rc: Replctl) -> dict[str, Any]:
    """What a refusal must leave as it was: status, history, journal, catalog version, every store file."""
    with Catalog(rc.db_url) as catalog, catalog.transaction(readonly=True) as tx:
        version = tx.catalog_version()
    files = sorted(str(p.relative_to(rc.root)) for p in rc.root.rglob("*") if p.name != "catalog.db")
    return {**rc.snapshot(), "ops": rc.json("ops", "list")["operations"], "version": version, "files": files}


def overlap_error(
    rc: Replctl, backups: str, how: str, *, rule: str, unchanged: str, hint: str
) -> dict[str, Any]:
    return {
        "code": "store-overlap",
        "message": f"invalid backup store [{rule}]: the backup store {backups} {how} the log store {rc.store}; "
        f"{REASON}; {unchanged}",
        "hint": hint,
    }


def create_error(rc: Replctl, backups: str, how: str) -> dict[str, Any]:
    """`backup create A`'s refusal of the backup store `backups`."""
    hint = (
        f"back up apart from the log store: replctl backup create A --to {rc.root / 'backups'}; "
        "set backup_store there to keep it"
    )
    return overlap_error(rc, backups, how, rule="BK1", unchanged="nothing was written", hint=hint)


def move_hint(rc: Replctl) -> str:
    return (
        f"move the backups to {rc.root / 'backups'}, apart from the log store, and set backup_store "
        "(or REPLCTL_BACKUP_STORE) there"
    )


# (--to as typed, the backup store it names relative to the test folder, how it stands to the log store `logs`)
OVERLAPPING = [
    ("logs/bk", "logs/bk", "is inside"),
    ("logs/A", "logs/A", "is inside"),
    ("logs", "logs", "is"),
    ("./logs/", "logs", "is"),
    ("logs/x/..", "logs", "is"),
    ("{root}/logs/bk/", "logs/bk", "is inside"),
    ("file://{root}/logs/bk/", "logs/bk", "is inside"),
    ("file://{root}/logs", "logs", "is"),
    (".", "", "contains"),
    ("file://{root}", "", "contains"),
    ("link/bk", "logs/bk", "is inside"),
]


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]], ids=["run", "dry-run"])
@pytest.mark.parametrize(("to", "named", "how"), OVERLAPPING)
def test_backup_create_into_or_around_the_log_store_exits_2_and_writes_nothing(
    rc: Replctl, to: str, named: str, how: str, dry_run: list[str]
) -> None:
    (rc.root / "link").symlink_to(rc.store)
    before = state(rc)
    doc = rc.json("backup", "create", "A", "--to", to.format(root=rc.root), *dry_run, expect=2)
    backups = str(rc.root / named) if named else str(rc.root)
    assert doc == {"ok": False, "error": create_error(rc, backups, how)}
    assert state(rc) == before
    assert sorted(p.name for p in rc.store.iterdir()) == ["replctl-store.json"]


def test_the_text_refusal_says_why_and_names_the_folder_to_use_instead(rc: Replctl) -> None:
    before = state(rc)
    out = rc("backup", "create", "A", "--to", "logs/bk", expect=2)
    error = create_error(rc, str(rc.store / "bk"), "is inside")
    assert out.stdout == ""
    assert out.stderr == f"error: {error['message']}\nhint: {error['hint']}\n"
    assert state(rc) == before


def test_a_plan_of_a_backup_into_the_log_store_is_refused_and_not_written(rc: Replctl) -> None:
    before = state(rc)
    doc = rc.json("--plan-out", "plan.json", "backup", "create", "A", "--to", "logs/bk", expect=2)
    assert doc["error"]["code"] == "store-overlap"
    assert not (rc.root / "plan.json").exists()
    assert state(rc) == before


def test_every_backup_of_the_default_selection_is_refused_with_one_error(rc: Replctl) -> None:
    rc("location", "add", "B")
    before = state(rc)
    doc = rc.json("backup", "create", "--to", "logs", expect=2)
    assert doc["error"]["hint"] == (
        f"back up apart from the log store: replctl backup create --to {rc.root / 'backups'}; "
        "set backup_store there to keep it"
    )
    assert state(rc) == before


@pytest.mark.parametrize(
    "command",
    [
        ["backup", "create", "A"],
        ["backup", "create", "A", "--dry-run"],
    ],
)
def test_a_configured_backup_store_inside_the_log_store_is_refused_too(
    rc: Replctl, command: list[str]
) -> None:
    rc.env["REPLCTL_BACKUP_STORE"] = str(rc.store / "backups")
    before = state(rc)
    doc = rc.json(*command, expect=2)
    assert doc["error"] == create_error(rc, str(rc.store / "backups"), "is inside")
    assert state(rc) == before


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]], ids=["run", "dry-run"])
def test_a_restore_from_a_backup_store_inside_the_log_store_exits_2_and_changes_nothing(
    rc: Replctl, dry_run: list[str]
) -> None:
    rc.env["REPLCTL_BACKUP_STORE"] = str(rc.store / "bk")
    before = state(rc)
    doc = rc.json("recover", "location", "A", "--from-backup", "latest", *dry_run, expect=2)
    assert doc["error"] == overlap_error(
        rc, str(rc.store / "bk"), "is inside", rule="BK2", unchanged="nothing was changed", hint=move_hint(rc)
    )
    assert state(rc) == before


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]], ids=["run", "dry-run"])
def test_a_prune_of_a_backup_store_that_holds_the_log_store_exits_2_and_removes_nothing(
    rc: Replctl, dry_run: list[str]
) -> None:
    rc.env["REPLCTL_BACKUP_STORE"] = str(rc.root)
    before = state(rc)
    doc = rc.json("--yes", "backup", "prune", "--keep-last", "0", *dry_run, expect=2)
    assert doc["error"] == overlap_error(
        rc, str(rc.root), "contains", rule="BK1", unchanged="nothing was removed", hint=move_hint(rc)
    )
    assert state(rc) == before


def test_backups_made_inside_the_log_store_before_can_still_be_listed(rc: Replctl) -> None:
    # Reading them does no harm, and the operator needs to see what to move out.
    rc.env["REPLCTL_BACKUP_STORE"] = str(rc.store / "bk")
    assert rc.json("backup", "list") == {"ok": True, "backups": []}


def test_a_backup_store_beside_the_log_store_whose_name_starts_alike_is_accepted(rc: Replctl) -> None:
    made = rc.json("backup", "create", "A", "--to", "logs2")["backups"]
    assert [(b["location"], b["events"]) for b in made] == [("A", 0)]
    assert sorted(p.name for p in rc.store.iterdir()) == ["replctl-store.json"]
    assert (rc.root / "logs2" / "manifests").is_dir()
