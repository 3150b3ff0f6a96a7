"""The catalog schema: SQLAlchemy 2.x Core tables in one `MetaData`.

Tables are created only through the Alembic revisions in `migrations/`; a test runs `alembic check` to prove
these models and the revisions agree. Vectors are stored as JSON objects ({location: int}); every timestamp is
a timezone-aware UTC `datetime` on the Python side (`UtcDateTime`), whatever the backend keeps.

Core `Table` objects rather than declarative classes: the catalog only ever runs Core statements, and
`sqlalchemy.orm` alone costs about 0.1 s of import on every command, light ones included (issue 17).
A column is NOT NULL unless it says `nullable=True`, as the typed declarative classes had it.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    false,
    text,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

NAME = String(64)


class UtcDateTime(TypeDecorator[datetime]):
    """`DateTime(timezone=True)` that only accepts aware datetimes and always returns them in UTC.

    SQLite has no time zone type: SQLAlchemy stores the wall-clock text and returns naive values, so the
    value is normalised to UTC before it is stored (which also keeps the text comparable in SQL, as the
    lease expiry check needs) and marked UTC when read. PostgreSQL returns the session's zone; it is
    converted back to UTC so both backends give equal values.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Reject naive values (a bug: they would be read back in the wrong zone); store UTC."""
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"catalog timestamps must be timezone-aware, got naive {value!r}")
        utc = value.astimezone(UTC)
        return utc.replace(tzinfo=None) if dialect.name == "sqlite" else utc

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Aware UTC, whatever the backend returned."""
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


metadata = MetaData()

# A location and its metadata (rules.md M5).
Table(
    "locations",
    metadata,
    Column("name", NAME, primary_key=True),
    Column("role", String(16), nullable=False),
    Column("state", String(16), nullable=False),
    Column("seq", BigInteger, default=0, nullable=False),
    Column("cvv", JSON, default=dict, nullable=False),
    Column("dvv", JSON, default=dict, nullable=False),
    Column("baseline", JSON, default=dict, nullable=False),
    # Per origin of the baseline, what the location stored of it when the entry was merged (DR1, DR5).
    Column("baseline_stored", JSON, default=dict, server_default=text("'{}'"), nullable=False),
    Column("deleted_upto", BigInteger, default=0, nullable=False),
    Column("logical_deleted_upto", BigInteger, default=0, nullable=False),
    # RET2: the id was pruned from every vt; new vts leave it out (EM1).
    Column("clock_pruned", Boolean, default=False, server_default=false(), nullable=False),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("retired_at", UtcDateTime(), nullable=True),
)

# Current state of a connection source→target; progress(target, source) lives here (REP2).
Table(
    "connections",
    metadata,
    Column("source", NAME, ForeignKey("locations.name"), primary_key=True),
    Column("target", NAME, ForeignKey("locations.name"), primary_key=True),
    Column("state", String(16), nullable=False),
    Column("filter", Text, nullable=True),
    Column("ever_filtered", Boolean, default=False, nullable=False),
    Column("history", String(16), nullable=False),
    Column("progress", BigInteger, default=0, nullable=False),
    Column("reason", Text, nullable=True),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("updated_at", UtcDateTime(), nullable=False),
)

# The append-only topology history (rules.md H1).
Table(
    "topology_changes",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("kind", String(32), nullable=False),
    Column("location", NAME, nullable=True),
    Column("role", String(16), nullable=True),
    Column("source", NAME, nullable=True),
    Column("target", NAME, nullable=True),
    Column("filter", Text, nullable=True),
    Column("history", String(16), nullable=True),
    Column("group_name", NAME, nullable=True),
    Column("members", JSON, default=list, nullable=False),
    Column("failover_from", NAME, nullable=True),
    Column("failover_to", NAME, nullable=True),
    Column("at", UtcDateTime(), nullable=False),
    Column("actor", String(128), nullable=True),
    Column("reason", Text, nullable=True),
    Column("operation_id", String(36), nullable=True),
    Index("ix_topology_changes_location", "location"),
)

# One immutable Parquet segment of a log, with what a deletion needs without a scan.
Table(
    "segments",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("location", NAME, ForeignKey("locations.name"), nullable=False),
    # relative to the store root
    Column("path", Text, nullable=False),
    Column("seq_lo", BigInteger, nullable=False),
    Column("seq_hi", BigInteger, nullable=False),
    Column("count", BigInteger, nullable=False),
    Column("vt_lub", JSON, default=dict, nullable=False),
    # The data files written, {name: size} (core.damage's census); NULL for rows made before they were recorded.
    Column("files", JSON, nullable=True),
    # What each of those files holds, {name: {rows, seq_lo, seq_hi, sha256}}, recorded at write so that reads
    # compare with it (issue 19); NULL for rows made before revision 0005.
    Column("file_contents", JSON, nullable=True),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("operation_id", String(36), nullable=True),
    Index("ix_segments_location_seq", "location", "seq_lo"),
)

# A physical deletion that waits for targets (DEL4).
Table(
    "pending_deletions",
    metadata,
    Column("location", NAME, ForeignKey("locations.name"), primary_key=True),
    Column("requested_upto", BigInteger, nullable=False),
    Column("requested_at", UtcDateTime(), nullable=False),
    Column("blocked_by", JSON, default=list, nullable=False),
    # BK4 for the retries: the request was asked with --require-recoverable or under the policy (revision 0006).
    Column("require_recoverable", Boolean, default=False, server_default=false(), nullable=False),
)

# The operation journal: who, where, what, why, the plan, and how it ended.
Table(
    "operations",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("command", Text, nullable=False),
    Column("args", JSON, default=dict, nullable=False),
    Column("actor", String(128), nullable=True),
    Column("host", String(255), nullable=True),
    Column("reason", Text, nullable=True),
    Column("plan", JSON, default=dict, nullable=False),
    # running / succeeded / refused / incomplete / failed / interrupted
    Column("outcome", String(16), nullable=False),
    Column("error", JSON, nullable=True),
    Column("started_at", UtcDateTime(), nullable=False),
    Column("ended_at", UtcDateTime(), nullable=True),
    Index("ix_operations_started_at", "started_at"),
)

# One completed step of an operation, journalled in the same transaction as its effect.
Table(
    "operation_steps",
    metadata,
    Column("operation_id", String(36), ForeignKey("operations.id"), primary_key=True),
    Column("index", Integer, primary_key=True),
    Column("name", String(64), nullable=False),
    Column("detail", JSON, default=dict, nullable=False),
    Column("at", UtcDateTime(), nullable=False),
)

# A lease on a resource ("location:A", "topology") with a fencing token.
#
# `token` grows by one with every grant of the resource, so a holder whose lease was taken over can tell
# (its token is no longer the row's) and its late commits are refused.
Table(
    "leases",
    metadata,
    Column("resource", String(128), primary_key=True),
    Column("holder", String(255), nullable=False),
    Column("operation_id", String(36), nullable=False),
    Column("token", BigInteger, nullable=False),
    Column("acquired_at", UtcDateTime(), nullable=False),
    Column("expires_at", UtcDateTime(), nullable=False),
    # Set by release; the row itself stays so that the next holder's token continues the sequence.
    Column("released_at", UtcDateTime(), nullable=True),
)

# The catalog's version (one row, id 1): how many committed transactions changed its state, and its identity.
#
# Raised by one at the end of every transaction that wrote to a state table (every table but the journal,
# the leases and this one; see `adapters.catalog.version`), so a plan made at version N (`--plan-out`) can
# tell at `replctl apply` whether anything it was computed from may have changed since.
Table(
    "catalog_state",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("version", BigInteger, default=0, nullable=False),
    # The catalog's identity, written into the store's marker by `init` so that a command pointed at another
    # catalog's store, or at a folder that is no store, is refused instead of reading it as a damaged log.
    Column("catalog_id", String(36), nullable=True),
    # When the store's marker was written (None: no store was marked yet, as in catalogs made before markers).
    Column("store_created_at", UtcDateTime(), nullable=True),
    CheckConstraint("id = 1", name="ck_catalog_state_one_row"),
)

# The catalog's lineage: one row per catalog version, with a random token drawn when the version was reached.
#
# The version is a counter, so a copy of the catalog that changed apart (a restored backup running catalog-only
# commands) reaches the same numbers with other changes; the token tells the two histories apart. A command
# that used the store writes its catalog version with that version's token into the store's marker, and a
# catalog whose token for that version differs is refused (`services.store_identity`). Rows are only ever
# added, by the same statement group that raises the version (`adapters.catalog.version`); revision 0008 gave
# the version a catalog had then a row of its own.
Table(
    "catalog_lineage",
    metadata,
    Column("version", BigInteger, primary_key=True, autoincrement=False),
    Column("token", String(32), nullable=False),
)
