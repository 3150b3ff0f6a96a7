"""store identity

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 12:40:00.000000

Gives the catalog an identity (`catalog_state.catalog_id`) that `replctl init` writes into a marker at the log
store's root, with the time the store was marked (`store_created_at`). Commands that read or write a store
compare the two, so a mistyped `--store` or another catalog's store is refused (exit 6) instead of being taken
for a damaged log. Existing catalogs get an id here; their store is marked by `replctl db upgrade` or
`replctl init` after this revision (`services.store_identity`), because that needs the store.

Segment rows also record their data files (`segments.files`, name → size), which the census of damage compares
with the store (`core.damage`); rows made before this revision keep NULL and are checked for presence only.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("catalog_state") as batch:
        batch.add_column(sa.Column("catalog_id", sa.String(length=36), nullable=True))
        batch.add_column(sa.Column("store_created_at", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("segments") as batch:
        batch.add_column(sa.Column("files", sa.JSON(), nullable=True))
    op.execute(
        sa.text("UPDATE catalog_state SET catalog_id = :id WHERE id = 1").bindparams(id=str(uuid.uuid4()))
    )


def downgrade() -> None:
    with op.batch_alter_table("segments") as batch:
        batch.drop_column("files")
    with op.batch_alter_table("catalog_state") as batch:
        batch.drop_column("store_created_at")
        batch.drop_column("catalog_id")
