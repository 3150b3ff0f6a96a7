"""The catalog schema: SQLAlchemy 2.x typed tables.

Tables are created only through the Alembic revisions in `migrations/`; a test runs `alembic check` to prove
these models and the revisions agree. Vectors are stored as JSON objects ({location: int}); every timestamp is
a timezone-aware UTC `datetime` on the Python side (`UtcDateTime`), whatever the backend keeps.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    false,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
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


class Base(DeclarativeBase):
    """Declarative base of every catalog table."""

    type_annotation_map: ClassVar[dict[Any, Any]] = {
        dict[str, Any]: JSON,
        list[Any]: JSON,
        datetime: UtcDateTime(),
    }


class LocationRow(Base):
    """A location and its metadata (rules.md M5)."""

    __tablename__ = "locations"

    name: Mapped[str] = mapped_column(NAME, primary_key=True)
    role: Mapped[str] = mapped_column(String(16))
    state: Mapped[str] = mapped_column(String(16))
    seq: Mapped[int] = mapped_column(BigInteger, default=0)
    cvv: Mapped[dict[str, Any]] = mapped_column(default=dict)
    dvv: Mapped[dict[str, Any]] = mapped_column(default=dict)
    baseline: Mapped[dict[str, Any]] = mapped_column(default=dict)
    deleted_upto: Mapped[int] = mapped_column(BigInteger, default=0)
    logical_deleted_upto: Mapped[int] = mapped_column(BigInteger, default=0)
    # RET2: the id was pruned from every vt; new vts leave it out (EM1).
    clock_pruned: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    created_at: Mapped[datetime] = mapped_column()
    retired_at: Mapped[datetime | None] = mapped_column()


class ConnectionRow(Base):
    """Current state of a connection source→target; progress(target, source) lives here (REP2)."""

    __tablename__ = "connections"

    source: Mapped[str] = mapped_column(NAME, ForeignKey("locations.name"), primary_key=True)
    target: Mapped[str] = mapped_column(NAME, ForeignKey("locations.name"), primary_key=True)
    state: Mapped[str] = mapped_column(String(16))
    filter: Mapped[str | None] = mapped_column(Text)
    ever_filtered: Mapped[bool] = mapped_column(Boolean, default=False)
    history: Mapped[str] = mapped_column(String(16))
    progress: Mapped[int] = mapped_column(BigInteger, default=0)
    reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column()
    updated_at: Mapped[datetime] = mapped_column()


class ChangeRow(Base):
    """The append-only topology history (rules.md H1)."""

    __tablename__ = "topology_changes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(32))
    location: Mapped[str | None] = mapped_column(NAME)
    role: Mapped[str | None] = mapped_column(String(16))
    source: Mapped[str | None] = mapped_column(NAME)
    target: Mapped[str | None] = mapped_column(NAME)
    filter: Mapped[str | None] = mapped_column(Text)
    history: Mapped[str | None] = mapped_column(String(16))
    group_name: Mapped[str | None] = mapped_column(NAME)
    members: Mapped[list[Any]] = mapped_column(default=list)
    failover_from: Mapped[str | None] = mapped_column(NAME)
    failover_to: Mapped[str | None] = mapped_column(NAME)
    at: Mapped[datetime] = mapped_column()
    actor: Mapped[str | None] = mapped_column(String(128))
    reason: Mapped[str | None] = mapped_column(Text)
    operation_id: Mapped[str | None] = mapped_column(String(36))

    __table_args__ = (Index("ix_topology_changes_location", "location"),)


class SegmentRow(Base):
    """One immutable Parquet segment of a log, with what a deletion needs without a scan."""

    __tablename__ = "segments"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    location: Mapped[str] = mapped_column(NAME, ForeignKey("locations.name"))
    path: Mapped[str] = mapped_column(Text)  # relative to the store root
    seq_lo: Mapped[int] = mapped_column(BigInteger)
    seq_hi: Mapped[int] = mapped_column(BigInteger)
    count: Mapped[int] = mapped_column(BigInteger)
    vt_lub: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # The data files written, {name: size} (core.damage's census); NULL for rows made before they were recorded.
    files: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # What each of those files holds, {name: {rows, seq_lo, seq_hi, sha256}}, recorded at write so that reads
    # compare with it (issue 19); NULL for rows made before revision 0005.
    file_contents: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column()
    operation_id: Mapped[str | None] = mapped_column(String(36))

    __table_args__ = (Index("ix_segments_location_seq", "location", "seq_lo"),)


class PendingDeletionRow(Base):
    """A physical deletion that waits for targets (DEL4)."""

    __tablename__ = "pending_deletions"

    location: Mapped[str] = mapped_column(NAME, ForeignKey("locations.name"), primary_key=True)
    requested_upto: Mapped[int] = mapped_column(BigInteger)
    requested_at: Mapped[datetime] = mapped_column()
    blocked_by: Mapped[list[Any]] = mapped_column(default=list)


class OperationRow(Base):
    """The operation journal: who, where, what, why, the plan, and how it ended."""

    __tablename__ = "operations"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    command: Mapped[str] = mapped_column(Text)
    args: Mapped[dict[str, Any]] = mapped_column(default=dict)
    actor: Mapped[str | None] = mapped_column(String(128))
    host: Mapped[str | None] = mapped_column(String(255))
    reason: Mapped[str | None] = mapped_column(Text)
    plan: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # running / succeeded / refused / incomplete / failed / interrupted
    outcome: Mapped[str] = mapped_column(String(16))
    error: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    started_at: Mapped[datetime] = mapped_column()
    ended_at: Mapped[datetime | None] = mapped_column()

    __table_args__ = (Index("ix_operations_started_at", "started_at"),)


class OperationStepRow(Base):
    """One completed step of an operation, journalled in the same transaction as its effect."""

    __tablename__ = "operation_steps"

    operation_id: Mapped[str] = mapped_column(String(36), ForeignKey("operations.id"), primary_key=True)
    index: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64))
    detail: Mapped[dict[str, Any]] = mapped_column(default=dict)
    at: Mapped[datetime] = mapped_column()


class LeaseRow(Base):
    """A lease on a resource ("location:A", "topology") with a fencing token.

    `token` grows by one with every grant of the resource, so a holder whose lease was taken over can tell
    (its token is no longer the row's) and its late commits are refused.
    """

    __tablename__ = "leases"

    resource: Mapped[str] = mapped_column(String(128), primary_key=True)
    holder: Mapped[str] = mapped_column(String(255))
    operation_id: Mapped[str] = mapped_column(String(36))
    token: Mapped[int] = mapped_column(BigInteger)
    acquired_at: Mapped[datetime] = mapped_column()
    expires_at: Mapped[datetime] = mapped_column()
    # Set by release; the row itself stays so that the next holder's token continues the sequence.
    released_at: Mapped[datetime | None] = mapped_column()


class CatalogStateRow(Base):
    """The catalog's version (one row, id 1): how many committed transactions changed its state, and its identity.

    Raised by one at the end of every transaction that wrote to a state table (every table but the journal,
    the leases and this one; see `adapters.catalog.version`), so a plan made at version N (`--plan-out`) can
    tell at `replctl apply` whether anything it was computed from may have changed since.
    """

    __tablename__ = "catalog_state"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    version: Mapped[int] = mapped_column(BigInteger, default=0)
    # The catalog's identity, written into the store's marker by `init` so that a command pointed at another
    # catalog's store, or at a folder that is no store, is refused instead of reading it as a damaged log.
    catalog_id: Mapped[str | None] = mapped_column(String(36))
    # When the store's marker was written (None: no store was marked yet, as in catalogs made before markers).
    store_created_at: Mapped[datetime | None] = mapped_column()

    __table_args__ = (CheckConstraint("id = 1", name="ck_catalog_state_one_row"),)
