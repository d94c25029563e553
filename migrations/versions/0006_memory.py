"""sessions' summaries, compaction and recall state (issue 6)

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30 04:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "memory_switches",
        sa.Column("connector_id", sa.String(length=64), nullable=False),
        sa.Column("auto_recall", sa.Boolean(), nullable=True),
        sa.Column("auto_save", sa.Boolean(), nullable=True),
        sa.Column("memory_tools", sa.Boolean(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("connector_id", name=op.f("pk_memory_switches")),
    )
    op.create_table(
        "recall_checks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("chat_id", sa.BigInteger(), nullable=False),
        sa.Column("turn_id", sa.String(length=32), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("latency_ms", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_recall_checks")),
    )
    with op.batch_alter_table("recall_checks", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_recall_checks_created_at"), ["created_at"])
    op.create_table(
        "memory_slices",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("chat_id", sa.BigInteger(), nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=False),
        sa.Column("first_message_id", sa.Integer(), nullable=False),
        sa.Column("last_message_id", sa.Integer(), nullable=False),
        sa.Column("reason", sa.String(length=16), nullable=False),
        sa.Column("summarised", sa.Boolean(), nullable=False),
        sa.Column("save_state", sa.String(length=16), nullable=False),
        sa.Column("saved_count", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"], name=op.f("fk_memory_slices_session_id_sessions")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_memory_slices")),
        sa.UniqueConstraint(
            "session_id", "first_message_id", name="uq_memory_slices_session_first"
        ),
    )
    with op.batch_alter_table("memory_slices", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_memory_slices_chat_id"), ["chat_id"])
        batch_op.create_index(batch_op.f("ix_memory_slices_save_state"), ["save_state"])


def downgrade() -> None:
    with op.batch_alter_table("memory_slices", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_memory_slices_save_state"))
        batch_op.drop_index(batch_op.f("ix_memory_slices_chat_id"))
    op.drop_table("memory_slices")
    with op.batch_alter_table("recall_checks", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_recall_checks_created_at"))
    op.drop_table("recall_checks")
    op.drop_table("memory_switches")
