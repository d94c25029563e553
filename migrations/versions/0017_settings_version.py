"""one settings version for every switch set in the chat, bumped with each change

Every process caches the switches (tool switches and classes, paused connectors, memory
switches); a turn compares this one row with the version it loaded and reloads only when it
moved, so a tap in one process applies in every process from its next turn.

Revision ID: 0017
Revises: 0012 (chained after 0014 on this branch; re-chained at merge)
Create Date: 2026-12-01 14:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "settings_version",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_settings_version")),
    )


def downgrade() -> None:
    op.drop_table("settings_version")
