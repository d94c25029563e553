"""edited arguments on approval cards (issue 5, Edit)

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-30 04:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("approvals", schema=None) as batch_op:
        batch_op.add_column(sa.Column("model_arguments", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("edited_by", sa.String(length=128), nullable=True))
        batch_op.add_column(sa.Column("edited_at", sa.DateTime(timezone=True), nullable=True))

    op.create_table(
        "approval_edits",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("token", sa.String(length=32), nullable=False),
        sa.Column("approval_id", sa.String(length=32), nullable=False),
        sa.Column("card_token", sa.String(length=32), nullable=False),
        sa.Column("card_message_id", sa.BigInteger(), nullable=True),
        sa.Column("chat_id", sa.BigInteger(), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("user_name", sa.String(length=128), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("fields", sa.Text(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("arguments", sa.Text(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.BigInteger(), nullable=True),
        sa.Column("asked_seq", sa.Integer(), nullable=True),
        sa.Column("started_update_id", sa.BigInteger(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_approval_edits")),
        sa.UniqueConstraint("token", name=op.f("uq_approval_edits_token")),
    )
    with op.batch_alter_table("approval_edits", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_approval_edits_approval_id"), ["approval_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_approval_edits_card_token"), ["card_token"], unique=False
        )
        batch_op.create_index(
            "ix_approval_edits_chat_id_user_id", ["chat_id", "user_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_approval_edits_status"), ["status"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("approval_edits", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_approval_edits_status"))
        batch_op.drop_index("ix_approval_edits_chat_id_user_id")
        batch_op.drop_index(batch_op.f("ix_approval_edits_card_token"))
        batch_op.drop_index(batch_op.f("ix_approval_edits_approval_id"))

    op.drop_table("approval_edits")

    with op.batch_alter_table("approvals", schema=None) as batch_op:
        batch_op.drop_column("edited_at")
        batch_op.drop_column("edited_by")
        batch_op.drop_column("model_arguments")
