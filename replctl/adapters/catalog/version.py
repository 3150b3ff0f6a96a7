"""The catalog version: a counter of committed state changes, kept centrally rather than by every writer.

A plan written by `--plan-out` records the version it was computed against, and `replctl apply` refuses it
once the version has moved (a stale plan). For that to be sound, every committed change of the catalog's state
must raise the version, including changes made by writers added long after this module. So no writer calls
anything: an engine event (`after_execute`) marks the connection whenever an INSERT, UPDATE or DELETE touches a
state table, and `Catalog.transaction` raises the version by one, as the last statement before the commit, when
the transaction was marked. State tables are all tables but the journal (`operations`, `operation_steps`), the
leases and `catalog_state` itself: journalling or taking a lease changes nothing a plan depends on, and a
version moved by them would make every plan stale as soon as any operation started anywhere.

A statement that is not a Core INSERT/UPDATE/DELETE on a known table (raw SQL) counts as a state write when it
looks like one, and a statement whose row count is unknown counts too: a spurious bump only makes a plan stale,
a missed one would let a stale plan run. Statements that changed no row (a DELETE that matched nothing) do not
count.

Raising the version is the transaction's last statement on purpose: on PostgreSQL the UPDATE takes the row's
lock until the commit, so concurrent writers are serialised only for that last instant and never wait for the
row while holding it (no deadlock); on SQLite every writing transaction holds the write lock anyway.

Each version reached also gets a row in `catalog_lineage` with a random token, written right after the raise in
the same transaction (the row lock is held by then, so no other writer can reach that version meanwhile). The
counter alone is not fork-proof: a copy of the catalog that changed apart reaches the same numbers through other
changes. The store's marker records the token of the version it records, and `services.store_identity` refuses
a catalog whose token for that version differs. The lineage is no state a plan depends on (plans compare the
version only), so writing it bumps nothing.
"""

from __future__ import annotations

import re
import secrets
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, Table, event, select
from sqlalchemy.engine import Connection
from sqlalchemy.sql.dml import UpdateBase

from replctl.adapters.catalog.tables import metadata
from replctl.errors import EnvironmentFailure

CATALOG_STATE: Table = metadata.tables["catalog_state"]
CATALOG_LINEAGE: Table = metadata.tables["catalog_lineage"]

# Tables whose writes do not change the catalog's state as a plan sees it (see the module docstring).
NON_STATE_TABLES = frozenset(
    {"operations", "operation_steps", "leases", CATALOG_STATE.name, CATALOG_LINEAGE.name}
)

# Key in the DBAPI connection's `info` dict: set when the open transaction wrote to a state table.
_WROTE_STATE = "replctl_wrote_state"

# The table a raw INSERT/UPDATE/DELETE names (optionally quoted); only used for text statements.
_RAW_DML = re.compile(
    r"""^\s*(?:insert\s+(?:or\s+\w+\s+)?into|replace\s+into|update(?:\s+or\s+\w+)?|delete\s+from)\s+
        ["`\[]?(?P<table>[A-Za-z_][A-Za-z0-9_]*)""",
    re.IGNORECASE | re.VERBOSE,
)
_RAW_DML_START = re.compile(r"^\s*(insert|update|delete|replace|merge|upsert)\b", re.IGNORECASE)


def _written_table(statement: Any) -> str | None:
    """The name of the table a DML statement writes ("" when it writes an unknown one); None when no DML."""
    if isinstance(statement, UpdateBase):
        table = getattr(statement, "table", None)
        return table.name if isinstance(table, Table) else ""
    text = statement if isinstance(statement, str) else getattr(statement, "text", None)
    if not isinstance(text, str) or not _RAW_DML_START.match(text):
        return None
    found = _RAW_DML.match(text)
    return found.group("table").lower() if found else ""


def _track_state_writes(
    conn: Connection,
    statement: Any,
    _multiparams: Any,
    _params: Any,
    _execution_options: Any,
    result: Any,
) -> None:
    table = _written_table(statement)
    if table is None or table in NON_STATE_TABLES:
        return
    # RETURNING statements report their row count only once their rows are read (SQLite): count them.
    returns_rows = bool(getattr(result, "returns_rows", False))
    if returns_rows or getattr(result, "rowcount", -1) != 0:
        conn.info[_WROTE_STATE] = True


def track_state_writes(engine: Engine) -> None:
    """Watch `engine`'s statements for state writes (idempotent: an engine shared by catalogs is watched once)."""
    if not event.contains(engine, "after_execute", _track_state_writes):
        event.listen(engine, "after_execute", _track_state_writes)


def start_tracking(conn: Connection) -> None:
    """Forget marks of an earlier transaction on this pooled connection (one rolled back keeps its mark)."""
    conn.info.pop(_WROTE_STATE, None)


def wrote_state(conn: Connection) -> bool:
    """Whether the open transaction wrote to a state table."""
    return bool(conn.info.get(_WROTE_STATE))


def new_lineage_token() -> str:
    """A fresh token for a catalog version (128 random bits, hex): two histories never draw the same one."""
    return secrets.token_hex(16)


class VersionQueries:
    """The `catalog_state` and `catalog_lineage` tables: read and raise the catalog version, and read the token
    each version got when it was reached."""

    _conn: Connection

    def catalog_version(self) -> int:
        """The catalog's version as this transaction sees it (0 on a catalog no state change has touched)."""
        version = self._conn.execute(
            select(CATALOG_STATE.c.version).where(CATALOG_STATE.c.id == 1)
        ).scalar_one_or_none()
        if version is None:
            raise _missing_row()
        return int(version)

    def bump_catalog_version(self) -> None:
        """Raise the version by one and record a new token for it; `Catalog.transaction` calls it before
        committing a state change."""
        version = self._conn.execute(
            CATALOG_STATE.update()
            .where(CATALOG_STATE.c.id == 1)
            .values(version=CATALOG_STATE.c.version + 1)
            .returning(CATALOG_STATE.c.version)
        ).scalar_one_or_none()
        if version is None:
            # Without the row no change would ever show, and every plan would look current: refuse instead.
            raise _missing_row()
        self._conn.execute(CATALOG_LINEAGE.insert().values(version=version, token=new_lineage_token()))

    def catalog_version_token(self, version: int) -> str | None:
        """The token `version` got when this catalog reached it; None when the catalog has no row for it (a
        version it never reached, or one from before its lineage was kept)."""
        token = self._conn.execute(
            select(CATALOG_LINEAGE.c.token).where(CATALOG_LINEAGE.c.version == version)
        ).scalar_one_or_none()
        return None if token is None else str(token)

    def catalog_identity(self) -> tuple[str | None, datetime | None]:
        """The catalog's id and when its store was marked (None: no store marked yet)."""
        row = self._conn.execute(
            select(CATALOG_STATE.c.catalog_id, CATALOG_STATE.c.store_created_at).where(
                CATALOG_STATE.c.id == 1
            )
        ).one_or_none()
        if row is None:
            raise _missing_row()
        return row.catalog_id, row.store_created_at

    def record_store_marked(self, catalog_id: str, created_at: datetime) -> None:
        """Record that the store was marked with `catalog_id` at `created_at` (not a state change)."""
        self._conn.execute(
            CATALOG_STATE.update()
            .where(CATALOG_STATE.c.id == 1)
            .values(catalog_id=catalog_id, store_created_at=created_at)
        )


def _missing_row() -> EnvironmentFailure:
    return EnvironmentFailure(
        "the catalog has no version row (catalog_state); it was changed outside replctl",
        code="catalog-inconsistent",
        hint="restore the row: INSERT INTO catalog_state (id, version) VALUES (1, 0)",
    )
