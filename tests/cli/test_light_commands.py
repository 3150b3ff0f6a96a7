"""Commands that need no Spark must not import pyspark, and commands that only read the catalog not alembic.

Each command runs in a fresh interpreter (imports are per process), against a real initialised catalog.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from replctl.cli.commandtable import COMMANDS, CommandTable, build

PROBE = """
import atexit, json, os, sys
from replctl.cli import main
watched = os.environ.get("PROBE_MODULES", "pyspark alembic py4j").split()
atexit.register(lambda: print(json.dumps({m: m in sys.modules for m in watched}), file=sys.stderr))
sys.argv = ["replctl", *sys.argv[1:]]
main()
"""


def loaded(args: list[str], env: dict[str, str]) -> dict[str, bool]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode in (0, 3), done.stderr
    last: dict[str, bool] = json.loads(done.stderr.strip().splitlines()[-1])
    return last


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return _world(tmp_path_factory.mktemp("light"), ["topology", "filter", "A", "B", "--set", "key = 'x'"])


def _shown(env: dict[str, str], location: str) -> list[dict[str, object]]:
    """The events of `location`, as `log show --json` gives them."""
    done = subprocess.run(
        [sys.executable, "-m", "replctl", "log", "show", location, "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    events: list[dict[str, object]] = json.loads(done.stdout)["events"]
    return events


def _world(root: Path, *steps: list[str]) -> dict[str, str]:
    """The environment of a catalog and store under `root` holding A→B, after `steps` (each run as a command)."""
    env = {
        **os.environ,
        "REPLCTL_DB": f"sqlite:///{root / 'catalog.db'}",
        "REPLCTL_STORE": str(root / "logs"),
    }
    for args in (
        ["init"],
        ["location", "add", "A"],
        ["location", "add", "B"],
        ["topology", "add", "A", "B"],
        *steps,
    ):
        subprocess.run(
            [sys.executable, "-m", "replctl", *args], env=env, check=True, capture_output=True, timeout=120
        )
    return env


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["topology", "validate"],
        ["status"],
        ["status", "--json"],
        ["topology", "show"],
        ["location", "list"],
        ["ops", "list"],
    ],
)
def test_commands_without_a_job_import_neither_pyspark_nor_alembic(
    args: list[str], env: dict[str, str]
) -> None:
    assert loaded(args, env) == {"pyspark": False, "alembic": False, "py4j": False}


# What a light command must not import (issue 17: within 0.5 s over `python -c pass`), each a cost measured with
# `python -X importtime`: Spark and its gateway; networkx (about 0.2 s; the core's searches are plain Python);
# `sqlalchemy.orm` (about 0.1 s; the catalog tables are Core tables); pyarrow (only segment and backup I/O needs
# it); alembic (only `init`/`db upgrade`); services.logs, the log and Spark-result modules behind it.
# pydantic (about 0.1 s): typer 0.29 coerces every non-flag option through a pydantic TypeAdapter
# (typer/_coercion.py); an option left out or left at its default skips it (cli.paramvalues). The topology use
# cases and the journal behind them (about 0.05 s): reading commands use services.topology_state. The data plane
# (the Spark engine's wrapper and its job modules): `status` lists segment files through the checked store alone.
HEAVY = (
    "pyspark",
    "py4j",
    "networkx",
    "sqlalchemy.orm",
    "pyarrow",
    "alembic",
    "replctl.services.logs",
    "pydantic",
    "replctl.services.topology",
    "replctl.services.operations",
    "replctl.adapters.dataplane",
)


@pytest.mark.parametrize(
    "args",
    [["status"], ["status", "--json"], ["topology", "validate"], ["location", "list"], ["ops", "list"]],
)
def test_light_commands_import_none_of_the_heavy_modules(args: list[str], env: dict[str, str]) -> None:
    assert loaded(args, {**env, "PROBE_MODULES": " ".join(HEAVY)}) == dict.fromkeys(HEAVY, False)


def test_the_probe_would_see_pyspark_if_a_command_imported_it(env: dict[str, str], tmp_path: Path) -> None:
    # Guards the guard: `config show` is light too, but importing pyspark first must show up.
    probe_env = {**env, "PYTHONSTARTUP": ""}
    done = subprocess.run(
        [sys.executable, "-c", "import pyspark\n" + PROBE, "config", "show"],
        env=probe_env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert json.loads(done.stderr.strip().splitlines()[-1])["pyspark"] is True


def test_report_imports_neither_pyspark_nor_alembic(env: dict[str, str], tmp_path: Path) -> None:
    # The report reads what status reads: a page of the whole system must not cost a JVM start.
    assert loaded(["report", "--html", str(tmp_path / "report.html")], env) == {
        "pyspark": False,
        "alembic": False,
        "py4j": False,
    }
    assert (tmp_path / "report.html").stat().st_size > 0


@pytest.mark.parametrize("args", [["--help"], ["location", "--help"], ["--version"]])
def test_help_and_version_do_not_import_sqlalchemy(args: list[str], env: dict[str, str]) -> None:
    # Help is typed most and must answer at once: SQLAlchemy alone costs about half a second to import.
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        env={**env, "PROBE_MODULES": "sqlalchemy"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stderr.strip().splitlines()[-1]) == {"sqlalchemy": False}


def test_a_small_append_writes_its_segment_without_a_jvm(env: dict[str, str]) -> None:
    # Issue 17: up to `local_limit` events are written with pyarrow, in the Spark writer's layout; neither
    # pandas (pyarrow imports it to build arrays from Python objects) nor pydantic (Typer's coercion of the
    # typed text) is imported: each cost a small append a fifth of its time.
    events = [arg for i in range(10) for arg in ("--event", json.dumps({"key": f"k{i}"}))]
    watched = {"pyspark": False, "alembic": False, "py4j": False, "pandas": False, "pydantic": False}
    assert loaded(["log", "append", "A", *events], {**env, "PROBE_MODULES": " ".join(watched)}) == watched
    assert [(e["seq"], e["key"], e["vt"]) for e in _shown(env, "A")] == [
        (i + 1, f"k{i}", {"A": i + 1}) for i in range(10)
    ]


def test_a_small_unfiltered_replicate_runs_without_a_jvm(tmp_path: Path) -> None:
    # Issue 17: a pass over a few events of an unfiltered connection is the local pass (pyarrow), which writes
    # what the Spark pass writes (tests/spark/test_replicate.py); neither pyspark nor pandas is imported.
    env = _world(
        tmp_path,
        ["log", "append", "A", "--event", '{"key": "a1"}', "--event", '{"key": "a2"}'],
        ["log", "append", "B", "--event", '{"key": "b1"}'],
    )
    watched = {"pyspark": False, "py4j": False, "pandas": False}
    assert loaded(["replicate"], {**env, "PROBE_MODULES": " ".join(watched)}) == watched
    assert [(e["seq"], e["origin"], e["origin_time"], e["key"], e["vt"]) for e in _shown(env, "B")] == [
        (1, "B", 1, "b1", {"B": 1}),
        (2, "A", 1, "a1", {"A": 1}),
        (3, "A", 2, "a2", {"A": 2}),
    ]


@pytest.mark.parametrize(
    ("args", "own"),
    [(["status"], "setup"), (["topology", "validate"], "topology"), (["location", "list"], "location")],
)
def test_a_command_imports_no_other_commands_module(args: list[str], own: str, env: dict[str, str]) -> None:
    # cli.commandtable: a command's module loads when that command runs, not with every other command.
    others = sorted({f"replctl.cli.{m}" for m in COMMANDS.values()} - {f"replctl.cli.{own}"})
    assert loaded(args, {**env, "PROBE_MODULES": " ".join(others)}) == dict.fromkeys(others, False)


def test_the_command_table_names_each_command_where_its_module_registers_it() -> None:
    # A command added to a module but not to the table would be missing from `replctl`; one in the table that
    # its module does not register would fail only when typed.
    for module in sorted(set(COMMANDS.values())):
        assert sorted(build(module)) == sorted(n for n, m in COMMANDS.items() if m == module), module


def test_help_lists_every_command_in_the_tables_order(env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "replctl", "--help"],
        env={**env, "COLUMNS": "100"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    listed = done.stdout.split("Commands:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in listed if line.strip()] == list(COMMANDS)


def test_a_command_table_entry_its_module_does_not_build_is_a_bug_not_an_unknown_command() -> None:
    # Click looks commands up through `Mapping.get`: a KeyError would read as "No such command".
    table = CommandTable({"nosuch": "ops"})
    assert "nosuch" in table and list(table) == ["nosuch"]
    with pytest.raises(RuntimeError, match=r"replctl\.cli\.ops did not build the command 'nosuch'"):
        table.get("nosuch")
    del table["nosuch"]
    assert "nosuch" not in table
