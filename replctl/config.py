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

DEFAULT_DB = "sqlite:///.replctl/catalog.db"
DEFAULT_STORE = ".replctl/logs"
DEFAULT_BACKUP_STORE = ".replctl/backups"
DEFAULT_MASTER = "local[*]"
CONFIG_FILE = "replctl.toml"

# setting name -> (environment variable, default)
_SOURCES: dict[str, tuple[str | None, Any]] = {
    "db": ("REPLCTL_DB", DEFAULT_DB),
    "store": ("REPLCTL_STORE", DEFAULT_STORE),
    "backup_store": ("REPLCTL_BACKUP_STORE", DEFAULT_BACKUP_STORE),
    "spark_master": ("REPLCTL_SPARK_MASTER", DEFAULT_MASTER),
    "spark_remote": ("REPLCTL_SPARK_REMOTE", None),
    "output": ("REPLCTL_OUTPUT", "text"),
    "require_recoverable": ("REPLCTL_REQUIRE_RECOVERABLE", False),
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
    home: Path  # where replctl keeps its own caches (the JVM class-data archive)
    config_path: Path | None
    # The catalog's BK4 policy: `delete` refuses a cut that leaves a location unrecoverable.
    require_recoverable: bool = False
    origins: Mapping[str, Setting] = field(default_factory=dict)

    @property
    def json(self) -> bool:
        """True when the output is one JSON document."""
        return self.output == "json"


def _load_file(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise InvalidInput(f"cannot read config file {path}: {exc.strerror}", code="bad-config") from exc
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"config file {path} is not valid TOML: {exc}", code="bad-config") from exc


def _resolve_db(url: str, base: Path) -> str:
    # A relative SQLite path would otherwise depend on where the operator stands.
    prefix = "sqlite:///"
    if url.startswith(prefix) and not url.startswith(prefix + "/") and url != "sqlite://":
        return prefix + str((base / url[len(prefix) :]).resolve())
    return url


def _resolve_store(uri: str, base: Path) -> str:
    if "://" in uri:
        return uri
    return str((base / uri).resolve())


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


def parse_conf(pairs: list[str] | tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """`--spark-conf KEY=VALUE` pairs, refusing malformed ones (exit 2)."""
    parsed = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidInput(f"--spark-conf expects KEY=VALUE, got {pair!r}", code="bad-option")
        parsed.append((key.strip(), value))
    return tuple(parsed)


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
        raise InvalidInput(
            f"config file {config_path} does not exist",
            code="bad-config",
            hint="create it, or drop --config / REPLCTL_CONFIG",
        )
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
    if values["output"] not in ("text", "json"):
        raise InvalidInput(f"--output must be text or json, got {values['output']!r}", code="bad-option")

    conf = dict(parse_conf([f"{k}={v}" for k, v in file_values.get("spark_conf", {}).items()]))
    conf.update(parse_conf(flags.get("spark_conf") or ()))
    origins["spark_conf"] = Setting(
        conf,
        "flag" if flags.get("spark_conf") else ("config" if file_values.get("spark_conf") else "default"),
    )
    origins["config"] = Setting(str(config_path) if config_path else None, config_origin)

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
        home=home,
        config_path=config_path,
        require_recoverable=_flag(values["require_recoverable"], "require_recoverable"),
        origins=origins,
    )
