"""`init`, `db upgrade|current|backup`, `version` and `config show` answer with typed outcomes (issue 15): each
`to_json()` is the command's whole `--json` document and each is complete (exit 0). The installer is the real
one, on a SQLite catalog and a store folder in a temporary directory.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from replctl.adapters.catalog.repository import Catalog
from replctl.adapters.installer import Installer
from replctl.adapters.logstore import LogStore
from replctl.config import Settings, resolve
from replctl.core.outcomes import Completion
from replctl.errors import EnvironmentFailure, InvalidInput
from replctl.services import setup, shown_settings
from replctl.services.repair import IdentityRepair, repair_pruned_identities
from replctl.services.store_identity import StoreMarking, mark_store


def _settings(tmp_path: Path, **flags: str) -> Settings:
    env = {"REPLCTL_HOME": str(tmp_path / "home")}
    base = {"db": f"sqlite:///{tmp_path / 'catalog.db'}", "store": str(tmp_path / "logs")}
    return resolve({**base, **flags}, env=env, cwd=tmp_path)


def test_init_then_db_current_report_the_created_catalog_at_head(tmp_path: Path) -> None:
    installer = Installer(_settings(tmp_path))
    made = setup.init(installer)
    head = installer.head_revision()
    assert (made.completion, made.to_json()) == (
        Completion.COMPLETE,
        {
            "ok": True,
            "created": True,
            "db": f"sqlite:///{tmp_path / 'catalog.db'}",
            "store": str(tmp_path / "logs"),
            "revision": head,
        },
    )
    assert setup.init(installer).created is False
    assert setup.current(installer).to_json() == {
        "ok": True,
        "db": f"sqlite:///{tmp_path / 'catalog.db'}",
        "revision": head,
        "head": head,
        "up_to_date": True,
    }


def test_db_upgrade_of_a_current_catalog_repairs_nothing(tmp_path: Path) -> None:
    installer = Installer(_settings(tmp_path))
    setup.init(installer)
    head = installer.head_revision()
    assert setup.upgrade(installer).to_json() == {
        "ok": True,
        "db": f"sqlite:///{tmp_path / 'catalog.db'}",
        "revision": head,
        "previous": head,
        "repaired_prunings": [],
        "cleared_removed_progress": [],
    }


def test_the_store_is_marked_once_and_an_unpruned_catalog_needs_no_identity_repair(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    installer = Installer(settings)
    installer.create_catalog_file()
    installer.migrate()
    with Catalog(settings.db) as catalog:
        store = LogStore(settings.store)
        first = mark_store(catalog, store)
        assert first.marked is True
        assert mark_store(catalog, store) == StoreMarking(first.catalog_id, marked=False)
        assert repair_pruned_identities(catalog, store) == IdentityRepair((), (), 0)


def test_version_names_a_missing_catalog_instead_of_failing(tmp_path: Path) -> None:
    installer = Installer(_settings(tmp_path))
    found = setup.versions(installer, replctl="1.2.3", spark="4.0.0", java=None)
    assert found.to_json() == {
        "ok": True,
        "replctl": "1.2.3",
        "spark": "4.0.0",
        "java": None,
        "catalog": {
            "revision": None,
            "head": installer.head_revision(),
            "error": f"no catalog at {tmp_path / 'catalog.db'}; run replctl init",
        },
    }


def test_db_backup_names_the_copy_and_its_size(tmp_path: Path) -> None:
    installer = Installer(_settings(tmp_path))
    setup.init(installer)
    copied = setup.backup_catalog(installer, tmp_path / "copy.db")
    size = (tmp_path / "copy.db").stat().st_size
    assert size > 0
    assert copied.to_json() == {"ok": True, "file": str(tmp_path / "copy.db"), "bytes": size}


class _Remote:
    master = "local[*]"
    remote: str | None = "sc://user:secret@engine:15002"
    why = "flag"


def test_config_show_masks_secrets_and_names_the_spark_in_use_last(tmp_path: Path) -> None:
    settings = _settings(tmp_path, spark_remote="sc://user:secret@engine:15002")
    shown = shown_settings.show(settings, _Remote).to_json()["settings"]
    assert list(shown)[-1] == "spark"
    assert shown["spark"] == {"value": "sc://user:***@engine:15002", "source": "flag"}
    assert shown["spark_remote"] == {"value": "sc://user:***@engine:15002", "source": "flag"}
    assert shown["db"] == {"value": f"sqlite:///{tmp_path / 'catalog.db'}", "source": "flag"}


def test_config_show_gives_the_reason_when_no_spark_can_be_used(tmp_path: Path) -> None:
    def unusable() -> _Remote:
        raise EnvironmentFailure(
            "the managed engine runs Spark 3.5.0", code="spark", hint="replctl engine stop"
        )

    shown = shown_settings.show(_settings(tmp_path), unusable).to_json()["settings"]
    assert shown["spark"] == {
        "value": None,
        "source": "the managed engine runs Spark 3.5.0 (replctl engine stop)",
    }


def test_every_resolved_setting_is_listed_with_its_source(tmp_path: Path) -> None:
    shown = shown_settings.show(_settings(tmp_path), _Remote).to_json()["settings"]
    assert list(shown) == [
        "config",
        "db",
        "store",
        "backup_store",
        "spark_master",
        "spark_remote",
        "spark_conf",
        "output",
        "file_mode",
        "require_recoverable",
        "local_limit",
        "spark",
    ]
    assert [shown[name]["source"] for name in ("db", "store", "backup_store", "file_mode")] == [
        "flag",
        "flag",
        "default",
        "default",
    ]


def test_the_local_limit_comes_from_the_environment_or_the_file_and_refuses_what_is_not_a_count(
    tmp_path: Path,
) -> None:
    # Issue 17: up to `local_limit` events an append or an unfiltered pass runs without Spark; 0 sends all to it.
    assert _settings(tmp_path).local_limit == 100_000
    home = {"REPLCTL_HOME": str(tmp_path / "home")}
    assert resolve({}, env={**home, "REPLCTL_LOCAL_LIMIT": "0"}, cwd=tmp_path).local_limit == 0
    (tmp_path / "replctl.toml").write_text("local_limit = 500\n")
    chosen = resolve({}, env=home, cwd=tmp_path)
    assert (chosen.local_limit, chosen.origins["local_limit"].source) == (500, "config")
    for env_value in ("-1", "many", "1.5"):
        with pytest.raises(InvalidInput) as refused:
            resolve({}, env={**home, "REPLCTL_LOCAL_LIMIT": env_value}, cwd=tmp_path)
        assert str(refused.value) == (
            f"REPLCTL_LOCAL_LIMIT must be a whole number of events, 0 or more, got {env_value!r}"
        )
        assert refused.value.hint == (
            "e.g. REPLCTL_LOCAL_LIMIT=100000 (0 sends every append and replication pass to Spark)"
        )
    # The environment over the file, as for every setting.
    assert resolve({}, env={**home, "REPLCTL_LOCAL_LIMIT": "7"}, cwd=tmp_path).local_limit == 7
    (tmp_path / "replctl.toml").write_text("local_limit = -2\n")
    with pytest.raises(
        InvalidInput, match=r"^local_limit in the config file must be a whole number of events"
    ):
        resolve({}, env=home, cwd=tmp_path)
    (tmp_path / "replctl.toml").write_text('local_limit = "500"\n')
    with pytest.raises(InvalidInput, match="local_limit must be a whole number, got a string"):
        resolve({}, env=home, cwd=tmp_path)
