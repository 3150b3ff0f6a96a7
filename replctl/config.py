"""Resolved settings: flag > environment > config file > default (cli.md, Global options).

Every value remembers where it came from, so `replctl config show` can say it. Relative paths (the SQLite
file, a local store) resolve against the config file's folder, or the working directory without one.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replctl.errors import InvalidInput
from replctl.localfiles import kind_of
from replctl.masking import is_secret_key, secrets_in_url
from replctl.storeroots import check_root_text

DEFAULT_DB = "sqlite:///.replctl/catalog.db"
DEFAULT_STORE = ".replctl/logs"
DEFAULT_BACKUP_STORE = ".replctl/backups"
DEFAULT_MASTER = "local[*]"
# Catalog file, store root, plans and reports are the operator's own unless the config says otherwise: they
# hold the journal's reasons, event contents and the topology.
DEFAULT_FILE_MODE = "0600"
# Up to this many events, an append or an unfiltered replication pass on a local store runs without Spark
# (issue 17); 0 sends every one to Spark.
DEFAULT_LOCAL_LIMIT = 100_000
CONFIG_FILE = "replctl.toml"

# setting name -> (environment variable, default)
_SOURCES: dict[str, tuple[str | None, Any]] = {
    "db": ("REPLCTL_DB", DEFAULT_DB),
    "store": ("REPLCTL_STORE", DEFAULT_STORE),
    "backup_store": ("REPLCTL_BACKUP_STORE", DEFAULT_BACKUP_STORE),
    "spark_master": ("REPLCTL_SPARK_MASTER", DEFAULT_MASTER),
    "spark_remote": ("REPLCTL_SPARK_REMOTE", None),
    "output": ("REPLCTL_OUTPUT", "text"),
    "file_mode": ("REPLCTL_FILE_MODE", DEFAULT_FILE_MODE),
    "require_recoverable": ("REPLCTL_REQUIRE_RECOVERABLE", False),
    "local_limit": ("REPLCTL_LOCAL_LIMIT", DEFAULT_LOCAL_LIMIT),
}


@dataclass(frozen=True)
class Setting:
    """One resolved value and where it came from (flag, env, config, default)."""

    value: Any
    source: str


@dataclass(frozen=True)
class Settings:
    """Everything a command needs to find the catalog, the store and Spark."""

    db: str
    store: str
    backup_store: str  # where `backup create` writes (rules.md BK1); a path or file:// URI
    spark_master: str
    spark_remote: str | None
    spark_conf: tuple[tuple[str, str], ...]
    output: str
    file_mode: int  # permission bits of the files replctl creates; folders add x where r is set
    home: Path  # where replctl keeps its own caches (the JVM class-data archive)
    config_path: Path | None
    # The catalog's BK4 policy: `delete` refuses a cut that leaves a location unrecoverable.
    require_recoverable: bool = False
    # Events up to which small work runs without Spark (`adapters.logstore.writer`, `localpass`); 0: never.
    local_limit: int = DEFAULT_LOCAL_LIMIT
    origins: Mapping[str, Setting] = field(default_factory=dict)

    @property
    def json(self) -> bool:
        """True when the output is one machine-readable document: JSON, or the same document as YAML."""
        return self.output in ("json", "yaml")

    def secrets(self) -> list[str]:
        """The secret values these settings hold: URL passwords and tokens, credential Spark settings."""
        found: list[str] = []
        for url in (self.db, self.store, self.spark_remote):
            found += secrets_in_url(url)
        found += [value for key, value in self.spark_conf if is_secret_key(key)]
        return found

    @property
    def folder_mode(self) -> int:
        """Permission bits of the folders replctl creates: the file mode plus search where it grants read."""
        return self.file_mode | ((self.file_mode & 0o444) >> 2)


# The keys a config file may hold: the settings above plus the Spark configuration table.
_FILE_KEYS = (*_SOURCES, "spark_conf")
_BOOLEAN_KEYS = frozenset({"require_recoverable"})
_INTEGER_KEYS = frozenset({"local_limit"})


def _load_file(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            values = tomllib.load(handle)
    except OSError as exc:
        raise InvalidInput(f"cannot read config file {path}: {exc.strerror}", code="bad-config") from exc
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"config file {path} is not UTF-8 text (byte {exc.start} cannot be decoded)",
            code="bad-config",
            hint="save it as UTF-8",
        ) from exc
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"config file {path} is not valid TOML: {exc}", code="bad-config") from exc
    _check_file_values(path, values)
    return values


def _check_file_values(path: Path, values: dict[str, Any]) -> None:
    """Refuse (exit 2) a key replctl does not know and a value of the wrong type, naming the key.

    An ignored typo (`stroe = ...`) would silently point replctl at the default catalog or store.
    """
    for key, value in values.items():
        if key not in _FILE_KEYS:
            raise InvalidInput(
                f"config file {path}: unknown key {key!r}",
                code="bad-config",
                hint=f"the keys are {', '.join(_FILE_KEYS)}",
            )
        if key == "spark_conf":
            if not isinstance(value, dict) or any(isinstance(v, dict | list) for v in value.values()):
                raise InvalidInput(
                    f"config file {path}: spark_conf must be a table of KEY = VALUE, got {_toml_type(value)}",
                    code="bad-config",
                    hint='e.g. [spark_conf] followed by "spark.executor.memory" = "2g"',
                )
        elif key in _BOOLEAN_KEYS:
            if not isinstance(value, bool):
                raise InvalidInput(
                    f"config file {path}: {key} must be true or false, got {_toml_type(value)}",
                    code="bad-config",
                    hint=f"e.g. {key} = true",
                )
        elif key in _INTEGER_KEYS:
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidInput(
                    f"config file {path}: {key} must be a whole number, got {_toml_type(value)}",
                    code="bad-config",
                    hint=f"e.g. {key} = 100000",
                )
        elif not isinstance(value, str):
            raise InvalidInput(
                f"config file {path}: {key} must be a string, got {_toml_type(value)}",
                code="bad-config",
                hint=f'e.g. {key} = "..."',
            )


def _toml_type(value: Any) -> str:
    names = {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "a table",
    }
    return next((name for kind, name in names.items() if isinstance(value, kind)), "a date or time")


def _resolve_db(url: str, base: Path) -> str:
    # A relative SQLite path would otherwise depend on where the operator stands.
    prefix = "sqlite:///"
    # `:memory:` is no path: left as it is, so that it is refused as an in-memory catalog (exit 2), not
    # turned into a file of that name.
    in_memory = url[len(prefix) :].partition("?")[0] == ":memory:"
    if url.startswith(prefix) and not url.startswith(prefix + "/") and not in_memory:
        return prefix + str((base / url[len(prefix) :]).resolve())
    return url


def _resolve_store(uri: str, base: Path) -> str:
    if "://" in uri:
        return uri
    return str((base / uri).resolve())


def _parse_mode(text: str, source: str) -> int:
    """An octal permission mode such as "0640"; it must let the owner read and write (exit 2 otherwise)."""
    where = {"env": "REPLCTL_FILE_MODE", "config": "file_mode in the config file"}.get(source, "file_mode")
    try:
        mode = int(text, 8)
    except ValueError:
        mode = -1
    if not 0 <= mode <= 0o777 or mode & 0o600 != 0o600:
        raise InvalidInput(
            f"{where} must be an octal mode from 0600 to 0777 that lets the owner read and write, got {text!r}",
            code="bad-config",
            hint='e.g. "0640" to let the group read',
        )
    return mode


def _flag(value: Any, name: str) -> bool:
    # TOML gives a bool; the environment gives text.
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off", ""}:
        return False
    raise InvalidInput(f"{name} must be true or false, got {value!r}", code="bad-config")


def _count(value: Any, source: str) -> int:
    """`local_limit`: a whole number of events, 0 or more (exit 2 naming where the value came from)."""
    where = {"env": "REPLCTL_LOCAL_LIMIT", "config": "local_limit in the config file"}.get(
        source, "local_limit"
    )
    # TOML gives an int; the environment gives text.
    try:
        number = value if isinstance(value, int) and not isinstance(value, bool) else int(str(value).strip())
    except ValueError:
        number = -1
    if number < 0:
        example = "REPLCTL_LOCAL_LIMIT=100000" if source == "env" else "local_limit = 100000"
        raise InvalidInput(
            f"{where} must be a whole number of events, 0 or more, got {value!r}",
            code="bad-config",
            hint=f"e.g. {example} (0 sends every append and replication pass to Spark)",
        )
    return number


def parse_conf(pairs: list[str] | tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """`--spark-conf KEY=VALUE` pairs, refusing malformed ones (exit 2)."""
    parsed = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidInput(f"--spark-conf expects KEY=VALUE, got {pair!r}", code="bad-option")
        parsed.append((key.strip(), value))
    return tuple(parsed)


def _no_config_file(path: Path) -> InvalidInput:
    """The refusal of a config path that names no regular file: what is there instead, when something is."""
    kind = kind_of(path)
    if kind == "a folder":
        return InvalidInput(
            f"config file {path} is a folder, not a file",
            code="bad-config",
            hint=f"name the file in it (e.g. {path / CONFIG_FILE}), or drop --config / REPLCTL_CONFIG",
        )
    if kind is not None:
        return InvalidInput(
            f"config file {path} is {kind}, not a regular file",
            code="bad-config",
            hint="name a TOML file, or drop --config / REPLCTL_CONFIG",
        )
    return InvalidInput(
        f"config file {path} does not exist",
        code="bad-config",
        hint="create it, or drop --config / REPLCTL_CONFIG",
    )


def resolve(
    flags: Mapping[str, Any], env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> Settings:
    """Merge flags, environment, config file and defaults into `Settings`."""
    env = os.environ if env is None else env
    cwd = cwd or Path.cwd()
    config_path: Path | None = None
    config_origin = "default"
    if flags.get("config"):
        config_path, config_origin = Path(flags["config"]), "flag"
    elif env.get("REPLCTL_CONFIG"):
        config_path, config_origin = Path(env["REPLCTL_CONFIG"]), "env"
    elif (cwd / CONFIG_FILE).is_file():
        config_path, config_origin = cwd / CONFIG_FILE, "config"
    if config_path is not None and not config_path.is_absolute():
        config_path = (cwd / config_path).resolve()
    if config_path is not None and not config_path.is_file():
        raise _no_config_file(config_path)
    file_values = _load_file(config_path) if config_path else {}
    base = config_path.parent if config_path else cwd

    origins: dict[str, Setting] = {}
    values: dict[str, Any] = {}
    for name, (var, default) in _SOURCES.items():
        if flags.get(name) is not None:
            value, source = flags[name], "flag"
        elif var and env.get(var):
            value, source = env[var], "env"
        elif name in file_values:
            value, source = file_values[name], "config"
        else:
            value, source = default, "default"
        values[name] = value
        origins[name] = Setting(value, source)
    if values["output"] not in ("text", "json", "yaml"):
        raise InvalidInput(
            f"--output must be text, json or yaml, got {values['output']!r}", code="bad-option"
        )

    conf = dict(parse_conf([f"{k}={v}" for k, v in file_values.get("spark_conf", {}).items()]))
    conf.update(parse_conf(flags.get("spark_conf") or ()))
    origins["spark_conf"] = Setting(
        conf,
        "flag" if flags.get("spark_conf") else ("config" if file_values.get("spark_conf") else "default"),
    )
    origins["config"] = Setting(str(config_path) if config_path else None, config_origin)

    for name, flag, var in (
        ("store", "--store", "REPLCTL_STORE"),
        ("backup_store", "", "REPLCTL_BACKUP_STORE"),
    ):
        source = origins[name].source
        where = {"flag": flag, "env": var, "config": f"{name} in the config file {config_path}"}
        # Before `_resolve_store` joins it to the base folder, where an empty root becomes that folder.
        check_root_text(
            str(values[name]),
            where.get(source) or name,
            code="bad-option" if source == "flag" else "bad-config",
        )
    file_mode = _parse_mode(str(values["file_mode"]), origins["file_mode"].source)
    db = _resolve_db(str(values["db"]), base)
    store = _resolve_store(str(values["store"]), base)
    home = Path(env.get("REPLCTL_HOME") or (Path.home() / ".cache" / "replctl"))
    return Settings(
        db=db,
        store=store,
        backup_store=_resolve_store(str(values["backup_store"]), base),
        spark_master=str(values["spark_master"]),
        spark_remote=values["spark_remote"],
        spark_conf=tuple(conf.items()),
        output=str(values["output"]),
        file_mode=file_mode,
        home=home,
        config_path=config_path,
        require_recoverable=_flag(values["require_recoverable"], "require_recoverable"),
        local_limit=_count(values["local_limit"], origins["local_limit"].source),
        origins=origins,
    )
