"""segment contents

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02 09:00:00.000000

Segment rows record what each of their data files holds (`segments.file_contents`, name → rows, seq range and
SHA-256), written with the files. Readers read exactly the catalogued files and compare what they read with
these (issue 19): a replication pass, `log show` and recovery count the rows, `log verify` also checks the
digests, and recovery places a lost part file exactly (the first seq it held). Rows made before this
revision keep NULL: they are compared by their segment's row count only.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("segments") as batch:
        batch.add_column(sa.Column("file_contents", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("segments") as batch:
        batch.drop_column("file_contents")
