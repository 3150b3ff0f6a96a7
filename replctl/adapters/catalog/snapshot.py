"""`replctl db backup FILE`: a consistent copy of a SQLite catalog, taken while it is in use."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy.engine import make_url

from replctl.errors import EnvironmentFailure, InvalidInput


def backup_sqlite(url: str, target: Path) -> tuple[Path, int]:
    """Copy the SQLite catalog at `url` to `target` with SQLite's online backup API (pages copied under
    SQLite's own locking, so concurrent writers never leave a torn copy); the copy's absolute path and size in
    bytes. Other catalogs exit 2 with a hint."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database:
        raise InvalidInput(
            "db backup copies SQLite catalogs only",
            code="not-sqlite",
            hint="for PostgreSQL: pg_dump --format=custom --file catalog.dump DBNAME",
        )
    source = Path(parsed.database)
    if not source.is_file():
        raise EnvironmentFailure(f"no catalog at {source}", code="catalog", hint="replctl init")
    target = target.expanduser().resolve()
    if target.exists():
        raise InvalidInput(f"{target} exists; db backup never overwrites a file", code="bad-path")
    src = dst = None
    try:
        src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
        dst = sqlite3.connect(target)
        src.backup(dst)
    except (sqlite3.Error, OSError) as exc:
        target.unlink(missing_ok=True)
        raise EnvironmentFailure(f"cannot copy the catalog to {target}: {exc}", code="catalog") from exc
    finally:
        for conn in (dst, src):
            if conn is not None:
                conn.close()
    return target, target.stat().st_size
