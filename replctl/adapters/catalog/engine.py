"""Building the catalog's SQLAlchemy engine and translating connection failures (exit 6).

SQLite is the default catalog and PostgreSQL the one for teams; both must behave the same to the code above,
so SQLite is set up to be as strict as PostgreSQL: foreign keys on, a write-ahead log so readers never block
the writer, a busy timeout instead of an immediate "database is locked", and transactions that take the write
lock when they begin (see `_begin_sqlite`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.exc import (
    ArgumentError,
    DatabaseError,
    DBAPIError,
    InterfaceError,
    NoSuchModuleError,
    OperationalError,
)

from replctl.errors import EnvironmentFailure, InvalidInput
from replctl.masking import mask_url

# How long a SQLite writer waits for another one before giving up (milliseconds). Steps are short
# transactions, so a wait this long means something is stuck, not busy.
SQLITE_BUSY_TIMEOUT_MS = 30_000

# Seconds to wait for a PostgreSQL server to accept a connection, unless the URL says otherwise: without it
# an unreachable host (dropped packets) would hang every command for minutes instead of exiting 6.
PG_CONNECT_TIMEOUT_S = 10

# Execution option that lets a read-only transaction on SQLite start deferred (no write lock).
SQLITE_DEFERRED = "replctl_sqlite_deferred"

_UNREACHABLE_HINT = "check --db / REPLCTL_DB and that the database server is running and reachable"


# The database backends the catalog runs on, and how an operator writes their URLs.
SUPPORTED_BACKENDS = ("sqlite", "postgresql")
SUPPORTED_URLS = "sqlite:///PATH or postgresql://USER@HOST[:PORT]/DB"


def parse_url(url: str | URL) -> URL:
    """The SQLAlchemy URL of a catalog; a bare `postgresql://` or `postgres://` means psycopg 3.

    SQLAlchemy's default PostgreSQL driver is psycopg2, which replctl does not ship; operators write the
    URL their other tools accept, so the driver is filled in here. A URL that does not parse (a port that is
    not a number) or names another database refuses (exit 2) naming the supported ones.
    """
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError) as exc:
        raise InvalidInput(
            f"not a database URL: {mask_url(str(url))} ({exc})",
            code="bad-db-url",
            hint=f"use {SUPPORTED_URLS}",
        ) from exc
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.get_backend_name() not in SUPPORTED_BACKENDS:
        raise InvalidInput(
            f"unsupported database URL {safe_url(parsed)}: the catalog runs on SQLite or PostgreSQL",
            code="bad-db-url",
            hint=f"use {SUPPORTED_URLS}",
        )
    if parsed.get_backend_name() == "sqlite" and parsed.host:
        # `sqlite://relative.db`: one slash short, the file name is read as a host and the database is none.
        raise InvalidInput(
            f"the catalog URL {mask_url(str(url))} names a host; a SQLite catalog is a file",
            code="bad-db-url",
            hint="three slashes before a relative path: sqlite:///"
            + "/".join(part for part in (parsed.host, parsed.database) if part),
        )
    if _in_memory(parsed):
        # Each connection would get an empty database of its own, and all of them vanish with the process:
        # `init` would "create" a catalog nothing can use, and every event appended would be lost.
        raise InvalidInput(
            f"the catalog {mask_url(str(url))} would be an in-memory SQLite database, lost when the command "
            "exits",
            code="bad-db-url",
            hint="name a file: sqlite:///PATH (relative) or sqlite:////PATH (absolute)",
        )
    return parsed


def _in_memory(url: URL) -> bool:
    """True for the SQLite URLs of an in-memory database: `sqlite://`, `sqlite:///:memory:`, and a URI
    filename opened with `mode=memory`."""
    if url.get_backend_name() != "sqlite":
        return False
    return url.database in (None, "", ":memory:") or url.query.get("mode") == "memory"


def safe_url(url: str | URL) -> str:
    """The URL as it may be printed: the password and credential parameters masked."""
    try:
        return mask_url(make_url(url).render_as_string(hide_password=True))
    except (ArgumentError, ValueError):
        return mask_url(str(url))


def check_exists(url: str | URL) -> None:
    """Refuse (exit 6) a SQLite catalog whose file is not there: only `replctl init` creates one.

    SQLite would otherwise create an empty database (and SQLAlchemy its folders) for a mistyped path, and the
    command would then fail on a schema that is missing for a reason the operator cannot see.
    """
    path = sqlite_path(parse_url(url))
    if path is None or path.is_file():
        return
    if path.is_dir():
        raise EnvironmentFailure(
            f"the catalog {path} is a folder, not a SQLite file",
            code="catalog-missing",
            hint="check --db / REPLCTL_DB",
        )
    raise EnvironmentFailure(
        f"no catalog at {path}; run replctl init",
        code="catalog-missing",
        hint="run: replctl init (or check --db / REPLCTL_DB)",
    )


def sqlite_path(url: URL) -> Path | None:
    """The file of a SQLite catalog, or None for other backends and in-memory databases."""
    if url.get_backend_name() != "sqlite":
        return None
    database = url.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


def make_engine(url: str | URL) -> Engine:
    """An engine for the catalog at `url`; creates the folder of a SQLite file.

    Nothing connects yet (SQLAlchemy connects lazily); wrap the first use in `translate_errors` so an
    unreachable catalog becomes an `EnvironmentFailure` (exit 6). The commands other than `init` call
    `check_exists` first, so that neither the folder nor the file is made for them.
    """
    parsed = parse_url(url)
    path = sqlite_path(parsed)
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise EnvironmentFailure(
                f"cannot create the folder of the catalog {path}: {exc}", code="catalog-unreachable"
            ) from exc
    connect_args: dict[str, Any] = {}
    if parsed.get_backend_name() == "postgresql" and "connect_timeout" not in parsed.query:
        connect_args["connect_timeout"] = PG_CONNECT_TIMEOUT_S
    try:
        engine = create_engine(parsed, connect_args=connect_args)
    except (NoSuchModuleError, ArgumentError, ImportError) as exc:
        # ImportError: a driver named in the URL (`postgresql+psycopg2://`) that is not installed.
        raise InvalidInput(
            f"unsupported database URL {safe_url(parsed)}: {exc}",
            code="bad-db-url",
            hint=f"use {SUPPORTED_URLS}",
        ) from exc
    if parsed.get_backend_name() == "sqlite":
        event.listen(engine, "connect", _configure_sqlite)
        event.listen(engine, "begin", _begin_sqlite)
    return engine


def _configure_sqlite(dbapi_connection: Any, _record: Any) -> None:
    # The driver's own transaction handling would skip BEGIN before SELECT and DDL (legacy mode), so reads
    # would not be repeatable and migrations not atomic; it is switched off and `_begin_sqlite` emits BEGIN.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA journal_mode=WAL")
    finally:
        cursor.close()


def _begin_sqlite(conn: Connection) -> None:
    # BEGIN IMMEDIATE takes the write lock up front: a deferred transaction that reads and then writes can
    # fail at once with SQLITE_BUSY when another writer got in between (the busy timeout does not apply to
    # that case), while an immediate one simply waits its turn. That is the serialisation leases rely on.
    if conn.get_execution_options().get(SQLITE_DEFERRED):
        conn.exec_driver_sql("BEGIN")
    else:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


# The catalog's write lock on PostgreSQL: a transaction-level advisory lock (its key spells "replctl") that every
# writing transaction takes before its first read, as BEGIN IMMEDIATE does on SQLite. READ COMMITTED alone lets
# two transactions each decide on a state the other is about to change (write skew): a deletion re-checking its
# source's targets while a connection from that source is added on the strength of the old DVV (ADD1, DEL3).
PG_WRITE_LOCK_KEY = 0x7265706C63746C


def take_write_lock(conn: Connection) -> None:
    """Serialise this writing transaction with every other one on the catalog, as SQLite's write lock does.

    The wait is bounded like SQLite's busy timeout: past it the database error becomes exit 6.
    """
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql(f"SET LOCAL lock_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({PG_WRITE_LOCK_KEY})")


@contextmanager
def translate_errors(url: str | URL) -> Iterator[None]:
    """Turn database errors raised inside the block into `EnvironmentFailure` (exit 6), chained.

    `OperationalError`/`InterfaceError` mean the catalog could not be reached or used (server down, wrong
    credentials, locked file); any other driver error means the catalog is not in the state this replctl
    expects (a missing table, a violated constraint), which is also an environment problem for the caller.
    """
    try:
        yield
    except (OperationalError, InterfaceError) as exc:
        raise EnvironmentFailure(
            f"catalog {safe_url(url)} is unreachable: {_reason(exc)}",
            code="catalog-unreachable",
            hint=_UNREACHABLE_HINT,
        ) from exc
    except DatabaseError as exc:
        if make_url(url).get_backend_name() == "sqlite" and "not a database" in _reason(exc):
            raise EnvironmentFailure(
                f"catalog {safe_url(url)} is not a SQLite database: {_reason(exc)}",
                code="catalog-unreachable",
                hint="check --db / REPLCTL_DB: it names some other file",
            ) from exc
        raise _refused_statement(url, exc) from exc
    except DBAPIError as exc:
        raise _refused_statement(url, exc) from exc


def _refused_statement(url: str | URL, exc: DBAPIError) -> EnvironmentFailure:
    return EnvironmentFailure(
        f"catalog {safe_url(url)} refused a statement: {_reason(exc)}",
        code="catalog-inconsistent",
        hint="run: replctl db current",
    )


def _reason(exc: DBAPIError) -> str:
    # The driver's own message, first line only: SQLAlchemy's text adds the statement and its parameters.
    text = str(exc.orig) if exc.orig is not None else str(exc)
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__
