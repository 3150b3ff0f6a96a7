"""catalog version

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01 10:00:00.000000

A one-row table holding the catalog's version: a counter that every committed transaction changing the
catalog's state raises by one (`replctl apply` refuses a plan made at another version). Seeded at 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    catalog_state = op.create_table(
        "catalog_state",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.CheckConstraint("id = 1", name="ck_catalog_state_one_row"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.bulk_insert(catalog_state, [{"id": 1, "version": 0}])


def downgrade() -> None:
    op.drop_table("catalog_state")
