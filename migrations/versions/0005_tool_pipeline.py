"""the tool pipeline's record, hooks, guards and send cap (issue 5)

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30 04:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tool_steps",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("turn_id", sa.String(length=32), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("call_id", sa.String(length=128), nullable=False),
        sa.Column("tool", sa.String(length=128), nullable=False),
        sa.Column("stage", sa.String(length=16), nullable=False),
        sa.Column("outcome", sa.String(length=24), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("sends_out", sa.Boolean(), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tool_steps")),
    )
    with op.batch_alter_table("tool_steps", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_tool_steps_turn_id"), ["turn_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_tool_steps_created_at"), ["created_at"], unique=False)
    op.create_table(
        "send_cap_notices",
        sa.Column("chat_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.PrimaryKeyConstraint("chat_id", "day", name=op.f("pk_send_cap_notices")),
    )


def downgrade() -> None:
    op.drop_table("send_cap_notices")
    with op.batch_alter_table("tool_steps", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tool_steps_created_at"))
        batch_op.drop_index(batch_op.f("ix_tool_steps_turn_id"))
    op.drop_table("tool_steps")
