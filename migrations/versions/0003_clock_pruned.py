"""clock pruned

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 12:00:00.000000

Records which retired locations had their id pruned from every vt (rules.md RET2), so that emission leaves
pruned ids out of new vts (EM1) while CVVs, DVVs and baselines keep their entry (RET4). Catalogs pruned by an
earlier replctl dropped those entries; `replctl db upgrade` restores them from the events' identities after this
revision (`services.repair`), because that needs the log store, which a migration does not see.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("locations") as batch:
        batch.add_column(sa.Column("clock_pruned", sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("locations") as batch:
        batch.drop_column("clock_pruned")
