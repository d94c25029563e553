"""which tools each turn was offered, and why

Past `max_tools`, a turn is offered the most relevant tools, and `palui__find_tools` can make
others callable mid-turn. Each offered tool is recorded with why (ranked, a named connector,
found by search, …) and how many tools were enabled, for the web console's turn page.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-04 23:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "turn_offers",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("turn_id", sa.String(32), nullable=False),
        sa.Column("tool", sa.String(128), nullable=False),
        sa.Column("why", sa.String(32), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("enabled", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_turn_offers_turn_id", "turn_offers", ["turn_id"])


def downgrade() -> None:
    op.drop_index("ix_turn_offers_turn_id", table_name="turn_offers")
    op.drop_table("turn_offers")
