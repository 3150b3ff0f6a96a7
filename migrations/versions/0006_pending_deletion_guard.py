"""pending deletion guard

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-09 09:00:00.000000

A waiting physical deletion records whether it was asked under BK4's guard (`delete --require-recoverable`, or
the policy `require_recoverable = true`): `pending_deletions.require_recoverable`. The `replicate` that
retries it holds back a cut that would leave a location unrecoverable when this flag or its own policy asks,
so the guard given on the command line is not lost once the command has ended. Requests waiting before
this revision were not recorded with it and keep false: their retries follow the policy, as before.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("pending_deletions") as batch:
        batch.add_column(
            sa.Column("require_recoverable", sa.Boolean(), server_default=sa.false(), nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("pending_deletions") as batch:
        batch.drop_column("require_recoverable")
