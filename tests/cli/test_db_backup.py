"""`replctl db backup FILE`: an online copy of a SQLite catalog; other catalogs are pointed at pg_dump."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from clitool import Replctl


def test_db_backup_copies_the_sqlite_catalog_with_every_location(tmp_path: Path) -> None:
    rc = Replctl(tmp_path)
    rc("init")
    rc("location", "add", "A")
    copy = tmp_path / "copy.db"
    out = rc.json("db", "backup", str(copy))
    assert out["file"] == str(copy) and out["bytes"] == copy.stat().st_size
    with sqlite3.connect(copy) as conn:
        assert [name for (name,) in conn.execute("SELECT name FROM locations")] == ["A"]
    again = rc.json("db", "backup", str(copy), expect=2)
    assert again["error"]["code"] == "bad-path"


def test_db_backup_of_a_postgresql_catalog_names_pg_dump(tmp_path: Path) -> None:
    rc = Replctl(tmp_path, db_url="postgresql+psycopg://replctl@localhost:1/none")
    out = rc.json("db", "backup", str(tmp_path / "x.db"), expect=2)
    assert out["error"]["code"] == "not-sqlite"
    assert out["error"]["hint"] == "for PostgreSQL: pg_dump --format=custom --file catalog.dump DBNAME"
