"""What a wheel of replctl ships: every package on disk, the migrations inside the package as
`replctl.migrations`, and the report's templates (pyproject.toml, [tool.setuptools])."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def setuptools_config() -> dict[str, Any]:
    config: dict[str, Any] = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    return config


def test_every_package_on_disk_is_listed_and_migrations_install_inside_replctl() -> None:
    config = setuptools_config()
    on_disk = {
        ".".join(init.parent.relative_to(REPO).parts) for init in (REPO / "replctl").rglob("__init__.py")
    }
    # The list is explicit (a mapped package cannot be found): a new package must be added to it, or its
    # modules would be missing from an installed replctl.
    assert set(config["packages"]) == on_disk | {"replctl.migrations", "replctl.migrations.versions"}
    assert config["package-dir"] == {"replctl.migrations": "migrations"}
    assert not any(p.startswith("migrations") for p in config["packages"])
    assert (REPO / "migrations" / "__init__.py").is_file()
    assert sorted(p.name for p in (REPO / "migrations" / "versions").glob("0*.py"))


def test_the_package_data_patterns_name_the_report_templates_and_the_alembic_template() -> None:
    data = setuptools_config()["package-data"]
    shipped = {p.relative_to(REPO / "replctl").as_posix() for p in (REPO / "replctl" / "report").rglob("*")}
    templates = {p for p in shipped if p.startswith("report/templates/")}
    assert templates
    assert all(any(Path(t).match(pattern) for pattern in data["replctl"]) for t in templates), templates
    assert data["replctl.migrations"] == ["script.py.mako"]
