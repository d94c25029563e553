"""the days a fallback model stood in for a primary that refused the key

A primary answering "not allowed" or "no such model" is replaced for the turn by the first
fallback that answers; the chat is told once a day which model stood in and why. One row per chat
and UTC day, written with the notice; /status shows the newest.

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-04 23:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "model_stand_ins",
        sa.Column("chat_id", sa.BigInteger(), nullable=False),
        sa.Column("day", sa.String(10), nullable=False),
        sa.Column("primary_model", sa.String(200), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("chat_id", "day", name=op.f("pk_model_stand_ins")),
    )
    op.create_index(op.f("ix_model_stand_ins_created_at"), "model_stand_ins", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_model_stand_ins_created_at", table_name="model_stand_ins")
    op.drop_table("model_stand_ins")
