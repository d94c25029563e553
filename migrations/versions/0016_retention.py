"""the daily retention prune: when it last ran, so one process prunes a day

Revision ID: 0016
Revises: 0014
Create Date: 2026-12-01 14:20:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "upkeep_marks",
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("last_run_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_upkeep_marks")),
    )


def downgrade() -> None:
    op.drop_table("upkeep_marks")
