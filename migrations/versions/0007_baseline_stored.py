"""baseline stored

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-16 09:00:00.000000

A location records, per origin of its baseline, what it stored of that origin when the entry was merged
(`locations.baseline_stored`): the events an accepted loss's entry covers by its number alone (DR5), or a
parked clock entry (RET2), though the location held them. A later loss holds such an entry back until those
events are back (DR1), so CF1 never skips them at a neighbour that still stores them. Rows from before this
revision keep `{}`: their baselines count as before.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A plain ADD COLUMN: SQLite's batch mode would copy `locations`, which other tables reference.
    op.add_column(
        "locations", sa.Column("baseline_stored", sa.JSON(), server_default=sa.text("'{}'"), nullable=False)
    )


def downgrade() -> None:
    op.drop_column("locations", "baseline_stored")
