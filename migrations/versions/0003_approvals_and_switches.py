"""approvals and switches

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 02:15:01.312012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "approvals",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("token", sa.String(length=32), nullable=False),
        sa.Column("turn_id", sa.String(length=32), nullable=False),
        sa.Column("chat_id", sa.BigInteger(), nullable=False),
        sa.Column("call_id", sa.String(length=128), nullable=False),
        sa.Column("tool", sa.String(length=128), nullable=False),
        sa.Column("arguments", sa.Text(), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("tool_class", sa.String(length=16), nullable=False),
        sa.Column("sends_out", sa.Boolean(), nullable=False),
        sa.Column("why", sa.Text(), nullable=False),
        sa.Column("decision_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("message_id", sa.BigInteger(), nullable=True),
        sa.Column("decided_by", sa.String(length=128), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("result", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_approvals")),
        sa.UniqueConstraint("token", name=op.f("uq_approvals_token")),
    )
    with op.batch_alter_table("approvals", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_approvals_expires_at"), ["expires_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_approvals_status"), ["status"], unique=False)
        batch_op.create_index(batch_op.f("ix_approvals_turn_id"), ["turn_id"], unique=False)

    op.create_table(
        "connector_settings",
        sa.Column("connector_id", sa.String(length=64), nullable=False),
        sa.Column("paused", sa.Boolean(), nullable=False),
        sa.Column("trust", sa.String(length=16), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("connector_id", name=op.f("pk_connector_settings")),
    )
    op.create_table(
        "decisions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("turn_id", sa.String(length=32), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("tool", sa.String(length=128), nullable=False),
        sa.Column("tool_class", sa.String(length=16), nullable=False),
        sa.Column("decision", sa.String(length=16), nullable=False),
        sa.Column("decision_id", sa.String(length=64), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_decisions")),
    )
    with op.batch_alter_table("decisions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_decisions_turn_id"), ["turn_id"], unique=False)

    op.create_table(
        "paused_turns",
        sa.Column("turn_id", sa.String(length=32), nullable=False),
        sa.Column("chat_id", sa.BigInteger(), nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("turn_id", name=op.f("pk_paused_turns")),
    )
    with op.batch_alter_table("paused_turns", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_paused_turns_chat_id"), ["chat_id"], unique=False)

    op.create_table(
        "tool_settings",
        sa.Column("tool", sa.String(length=128), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("tool_class", sa.String(length=16), nullable=True),
        sa.Column("definition_hash", sa.String(length=64), nullable=True),
        sa.Column("needs_review", sa.Boolean(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("tool", name=op.f("pk_tool_settings")),
    )
    with op.batch_alter_table("turns", schema=None) as batch_op:
        batch_op.add_column(sa.Column("taint_source", sa.String(length=160), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("turns", schema=None) as batch_op:
        batch_op.drop_column("taint_source")

    op.drop_table("tool_settings")
    with op.batch_alter_table("paused_turns", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_paused_turns_chat_id"))

    op.drop_table("paused_turns")
    with op.batch_alter_table("decisions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_decisions_turn_id"))

    op.drop_table("decisions")
    op.drop_table("connector_settings")
    with op.batch_alter_table("approvals", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_approvals_turn_id"))
        batch_op.drop_index(batch_op.f("ix_approvals_status"))
        batch_op.drop_index(batch_op.f("ix_approvals_expires_at"))

    op.drop_table("approvals")
