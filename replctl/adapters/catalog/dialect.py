"""Statements whose spelling differs between SQLite and PostgreSQL, and the catalog's tables as Core objects.

Both backends accept `INSERT ... ON CONFLICT` and `RETURNING` (SQLite since 3.35); only the construct that
builds them is dialect-specific, so the repository asks here for the right one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import Table
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Connection

from replctl.adapters.catalog.tables import metadata
from replctl.errors import EnvironmentFailure

if TYPE_CHECKING:
    from sqlalchemy.dialects import postgresql

LOCATIONS: Table = metadata.tables["locations"]
CONNECTIONS: Table = metadata.tables["connections"]
CHANGES: Table = metadata.tables["topology_changes"]
SEGMENTS: Table = metadata.tables["segments"]
PENDING_DELETIONS: Table = metadata.tables["pending_deletions"]
OPERATIONS: Table = metadata.tables["operations"]
OPERATION_STEPS: Table = metadata.tables["operation_steps"]
LEASES: Table = metadata.tables["leases"]


def insert(conn: Connection, table: Table) -> postgresql.Insert | sqlite.Insert:
    """An INSERT for `table` that supports `on_conflict_do_update`/`_nothing` on the connection's backend."""
    name = conn.dialect.name
    if name == "postgresql":
        # Imported on use: a SQLite catalog (light commands) does not pay for the PostgreSQL dialect.
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(table)
    if name == "sqlite":
        return sqlite.insert(table)
    raise EnvironmentFailure(
        f"unsupported catalog backend {name!r}", code="catalog-backend", hint="use SQLite or PostgreSQL"
    )
