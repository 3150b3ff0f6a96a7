"""The environment at fault: one message and a hint, exit 6 (or 2 for what the operator typed), never a traceback.

Issue 14 items 5 and 7, issue 19 item 9: a catalog that cannot be reached or is not a catalog, a database URL
replctl does not support or cannot parse, a config file with a typo, and the commands that must not create a
catalog, its folders or a store where the operator mistyped a path.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from clitool import Replctl
from pg import free_port

SUPPORTED = "use sqlite:///PATH or postgresql://USER@HOST[:PORT]/DB"
CATALOG_COMMANDS = [["init"], ["db", "current"], ["db", "upgrade"], ["status"]]


@pytest.fixture
def rc(tmp_path: Path) -> Replctl:
    """A CLI bound to an empty folder; the tests name the catalog with --db."""
    return Replctl(tmp_path)


@pytest.mark.parametrize("command", CATALOG_COMMANDS)
def test_a_postgresql_server_that_is_down_exits_6_naming_the_catalog_without_its_password(
    rc: Replctl, command: list[str]
) -> None:
    port = free_port()
    out = rc("--db", f"postgresql://ops:pw-1234@127.0.0.1:{port}/cat", *command, expect=6)
    assert out.stdout == ""
    assert out.stderr == (
        f"error: catalog postgresql+psycopg://ops:***@127.0.0.1:{port}/cat is unreachable: connection failed: "
        f'connection to server at "127.0.0.1", port {port} failed: Connection refused\n'
        "hint: check --db / REPLCTL_DB and that the database server is running and reachable\n"
    )


@pytest.mark.parametrize("command", CATALOG_COMMANDS)
def test_a_sqlite_catalog_path_that_is_a_folder_exits_6(
    rc: Replctl, tmp_path: Path, command: list[str]
) -> None:
    (tmp_path / "cat").mkdir()
    doc = rc.json("--db", f"sqlite:///{tmp_path / 'cat'}", *command, expect=6)
    assert doc == {
        "ok": False,
        "error": {
            "code": "catalog-missing",
            "message": f"the catalog {tmp_path / 'cat'} is a folder, not a SQLite file",
            "hint": "check --db / REPLCTL_DB",
        },
    }


@pytest.mark.parametrize("command", CATALOG_COMMANDS)
def test_a_file_that_is_not_sqlite_exits_6_and_stays_as_it_was(
    rc: Replctl, tmp_path: Path, command: list[str]
) -> None:
    other = tmp_path / "notes.db"
    other.write_text("not a database\n" * 100)
    doc = rc.json("--db", f"sqlite:///{other}", *command, expect=6)
    assert doc["error"] == {
        "code": "catalog-unreachable",
        "message": f"catalog sqlite:///{other} is not a SQLite database: file is not a database",
        "hint": "check --db / REPLCTL_DB: it names some other file",
    }
    assert other.read_text() == "not a database\n" * 100


@pytest.mark.parametrize("command", [*CATALOG_COMMANDS, ["location", "list"], ["log", "show", "A"]])
def test_an_unsupported_database_url_exits_2_naming_the_supported_ones(
    rc: Replctl, command: list[str]
) -> None:
    doc = rc.json("--db", "mysql://ops:pw-1234@db.example/cat", *command, expect=2)
    assert doc["error"] == {
        "code": "bad-db-url",
        "message": "unsupported database URL mysql://ops:***@db.example/cat: the catalog runs on SQLite or "
        "PostgreSQL",
        "hint": SUPPORTED,
    }


@pytest.mark.parametrize("command", CATALOG_COMMANDS)
def test_a_database_url_whose_port_is_not_a_number_exits_2(rc: Replctl, command: list[str]) -> None:
    doc = rc.json("--db", "postgresql://ops:pw-1234@db.example:notaport/cat", *command, expect=2)
    assert doc["error"] == {
        "code": "bad-db-url",
        "message": "not a database URL: postgresql://ops:***@db.example:notaport/cat "
        "(invalid literal for int() with base 10: 'notaport')",
        "hint": SUPPORTED,
    }


@pytest.mark.postgres
def test_a_postgresql_database_that_does_not_exist_exits_6(rc: Replctl, postgres_url: str) -> None:
    missing = postgres_url.rsplit("/", 1)[0] + "/no_such_catalog"
    for command in CATALOG_COMMANDS:
        doc = rc.json("--db", missing, *command, expect=6)
        assert doc["error"]["code"] == "catalog-unreachable"
        assert 'database "no_such_catalog" does not exist' in doc["error"]["message"]


@pytest.mark.parametrize(
    "command", [["status"], ["db", "current"], ["db", "upgrade"], ["location", "add", "A"], ["ops", "list"]]
)
def test_a_mistyped_sqlite_path_creates_nothing_and_says_to_run_init(
    rc: Replctl, tmp_path: Path, command: list[str]
) -> None:
    typo = tmp_path / "typo" / "sub" / "catalog.db"
    out = rc("--db", f"sqlite:///{typo}", *command, expect=6)
    assert out.stderr == (
        f"error: no catalog at {typo}; run replctl init\nhint: run: replctl init (or check --db / REPLCTL_DB)\n"
    )
    assert not (tmp_path / "typo").exists()


def test_status_in_an_empty_folder_creates_no_catalog(tmp_path: Path) -> None:
    rc = Replctl(tmp_path)
    rc.env["REPLCTL_DB"] = ""  # the default catalog, relative to the working folder
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path)
        out = rc("status", expect=6)
    catalog = tmp_path / ".replctl" / "catalog.db"
    assert out.stderr.startswith(f"error: no catalog at {catalog}; run replctl init\n")
    assert list(tmp_path.iterdir()) == []


def test_an_empty_database_is_named_in_the_refusal(rc: Replctl, tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    doc = rc.json("--db", f"sqlite:///{empty}", "status", expect=6)
    assert doc["error"] == {
        "code": "catalog-missing",
        "message": f"the catalog sqlite:///{empty} has no replctl schema (empty database)",
        "hint": "run: replctl init",
    }


def test_a_mistyped_store_is_not_created_by_a_command_that_reads_or_writes_it(
    rc: Replctl, tmp_path: Path
) -> None:
    rc("init")
    rc("location", "add", "A")
    typo = tmp_path / "typo-store"
    for command in (["log", "show", "A"], ["log", "append", "A", "--event", '{"key": "a1"}']):
        doc = rc.json("--store", str(typo), *command, expect=6)
        assert doc["error"] == {
            "code": "store-not-found",
            "message": f"store not found: file://{typo} does not exist; nothing was read as a log",
            "hint": "check --store (or REPLCTL_STORE): it must be the store `replctl init` created for this "
            "catalog",
        }
    assert not typo.exists()
    assert rc.json("status")["locations"][0]["seq"] == 0


def test_a_store_that_is_a_file_is_named_as_a_file_not_as_missing(rc: Replctl, tmp_path: Path) -> None:
    rc("init")
    rc("location", "add", "A")
    (tmp_path / "logs.tar").write_bytes(b"not a store")
    out = rc("--store", str(tmp_path / "logs.tar"), "log", "show", "A", expect=6)
    assert out.stderr == (
        f"error: store not found: file://{tmp_path / 'logs.tar'} is a file, not a folder; nothing was read as "
        "a log\nhint: check --store (or REPLCTL_STORE): it must be the store `replctl init` created for this "
        "catalog\n"
    )
    assert (tmp_path / "logs.tar").read_bytes() == b"not a store"


def test_init_with_a_store_that_is_a_file_says_so_and_leaves_it(rc: Replctl, tmp_path: Path) -> None:
    (tmp_path / "logs").write_bytes(b"")
    doc = rc.json("--store", str(tmp_path / "logs"), "init", expect=6)
    assert doc["error"] == {
        "code": "store",
        "message": f"cannot create the store file://{tmp_path / 'logs'}: it is a file, not a folder",
        "hint": "check --store (or REPLCTL_STORE): name a folder, or one that does not exist yet",
    }
    assert (tmp_path / "logs").read_bytes() == b""


def test_init_creates_the_catalog_and_the_store_for_the_owner_only(rc: Replctl, tmp_path: Path) -> None:
    rc(
        "--db",
        f"sqlite:///{tmp_path / 'new' / 'catalog.db'}",
        "--store",
        str(tmp_path / "s" / "logs"),
        "init",
    )
    assert (tmp_path / "new").stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "new" / "catalog.db").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "s").stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "s" / "logs").stat().st_mode & 0o777 == 0o700


def test_a_configured_file_mode_lets_the_group_read(rc: Replctl, tmp_path: Path) -> None:
    rc.env["REPLCTL_FILE_MODE"] = "0640"
    rc("--db", f"sqlite:///{tmp_path / 'new' / 'catalog.db'}", "--store", str(tmp_path / "logs"), "init")
    assert (tmp_path / "new").stat().st_mode & 0o777 == 0o750
    assert (tmp_path / "new" / "catalog.db").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "logs").stat().st_mode & 0o777 == 0o750


def test_a_file_mode_that_locks_the_owner_out_exits_2(rc: Replctl) -> None:
    rc.env["REPLCTL_FILE_MODE"] = "0044"
    doc = rc.json("config", "show", expect=2)
    assert doc["error"]["message"] == (
        "REPLCTL_FILE_MODE must be an octal mode from 0600 to 0777 that lets the owner read and write, "
        "got '0044'"
    )


# --- the config file -------------------------------------------------------------------------------------


def _with_config(rc: Replctl, tmp_path: Path, content: bytes) -> Path:
    path = tmp_path / "replctl.toml"
    path.write_bytes(content)
    rc.env["REPLCTL_CONFIG"] = str(path)
    return path


def test_an_unknown_key_in_the_config_file_exits_2_naming_it(rc: Replctl, tmp_path: Path) -> None:
    path = _with_config(rc, tmp_path, b'stroe = "/srv/logs"\n')
    doc = rc.json("status", expect=2)
    assert doc["error"] == {
        "code": "bad-config",
        "message": f"config file {path}: unknown key 'stroe'",
        "hint": "the keys are db, store, backup_store, spark_master, spark_remote, output, file_mode, "
        "require_recoverable, local_limit, spark_conf",
    }


def test_a_spark_conf_that_is_not_a_table_exits_2(rc: Replctl, tmp_path: Path) -> None:
    path = _with_config(rc, tmp_path, b"spark_conf = 5\n")
    doc = rc.json("config", "show", expect=2)
    assert doc["error"] == {
        "code": "bad-config",
        "message": f"config file {path}: spark_conf must be a table of KEY = VALUE, got an integer",
        "hint": 'e.g. [spark_conf] followed by "spark.executor.memory" = "2g"',
    }


def test_a_setting_of_the_wrong_type_exits_2(rc: Replctl, tmp_path: Path) -> None:
    path = _with_config(rc, tmp_path, b"db = 5\n")
    out = rc("status", expect=2)
    assert (
        out.stderr
        == f'error: config file {path}: db must be a string, got an integer\nhint: e.g. db = "..."\n'
    )


def test_a_config_file_that_is_not_utf8_exits_2_with_one_json_document(rc: Replctl, tmp_path: Path) -> None:
    path = _with_config(rc, tmp_path, b'store = "caf\xe9"\n')
    doc = rc.json("status", expect=2)
    assert doc["error"] == {
        "code": "bad-config",
        "message": f"config file {path} is not UTF-8 text (byte 12 cannot be decoded)",
        "hint": "save it as UTF-8",
    }


def test_a_config_path_that_is_a_folder_is_named_as_a_folder(rc: Replctl, tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    out = rc("--config", str(tmp_path / "conf"), "status", expect=2)
    assert out.stderr == (
        f"error: config file {tmp_path / 'conf'} is a folder, not a file\n"
        f"hint: name the file in it (e.g. {tmp_path / 'conf' / 'replctl.toml'}), or drop --config / "
        "REPLCTL_CONFIG\n"
    )


def test_a_config_path_that_is_a_device_is_named_as_one(rc: Replctl) -> None:
    doc = rc.json("--config", "/dev/null", "status", expect=2)
    assert doc["error"] == {
        "code": "bad-config",
        "message": "config file /dev/null is a device, not a regular file",
        "hint": "name a TOML file, or drop --config / REPLCTL_CONFIG",
    }


def test_a_config_path_with_nothing_there_still_says_it_does_not_exist(rc: Replctl, tmp_path: Path) -> None:
    doc = rc.json("--config", str(tmp_path / "nope.toml"), "status", expect=2)
    assert doc["error"] == {
        "code": "bad-config",
        "message": f"config file {tmp_path / 'nope.toml'} does not exist",
        "hint": "create it, or drop --config / REPLCTL_CONFIG",
    }


def test_a_backup_store_on_a_file_system_pyarrow_cannot_open_exits_6_with_the_fix(rc: Replctl) -> None:
    # BK1: the backup store takes the log store's URIs; one that names no file system is refused up front.
    rc("init")
    rc("location", "add", "A")
    out = rc.json("backup", "create", "A", "--to", "nofs://bucket/backups", expect=6)
    assert out["error"] == {
        "code": "backup-store",
        "message": "cannot open the backup store nofs://bucket/backups: Unrecognized filesystem type in URI: "
        "nofs://bucket/backups",
        "hint": "check backup_store (or --to): a path, file://, or a URI the log store could use",
    }
    assert rc.json("backup", "list")["backups"] == []
