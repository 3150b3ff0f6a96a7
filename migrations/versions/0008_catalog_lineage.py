"""catalog lineage

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-18 09:00:00.000000

The catalog version is a counter: a copy of the catalog that runs catalog-only commands (which do not check the
store) reaches the version the store's marker records through other changes, and was then accepted as current.
`catalog_lineage` gives every version a random token, drawn when the version is reached; the marker records the
token of its version, and a catalog with another token for it is refused (`services.store_identity`).

The version the catalog is at gets a token here, so that a marker recording it later compares like any other.
Versions before it keep none: a marker naming one of them was written by an older replctl, without a token,
and is checked by the numbers as before.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    lineage = op.create_table(
        "catalog_lineage",
        sa.Column("version", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("token", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("version"),
    )
    version = op.get_bind().execute(sa.text("SELECT version FROM catalog_state WHERE id = 1")).scalar()
    if version is not None:
        # A catalog without its version row is refused by every writer (`adapters.catalog.version`): no seed.
        op.bulk_insert(lineage, [{"version": int(version), "token": secrets.token_hex(16)}])


def downgrade() -> None:
    op.drop_table("catalog_lineage")
