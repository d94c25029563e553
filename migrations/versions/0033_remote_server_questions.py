"""remote servers' questions during tool calls

A server's question (MCP elicitation) asked in a chat: who may answer, the card's words, and for
a question of the 2026 protocol's input-required round the call and the server's opaque state, so
an answer given after a restart continues the call once.

Revision ID: 0033
Revises: 0032
Create Date: 2026-12-05 21:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0033"
down_revision = "0032"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "server_questions",
        sa.Column("token", sa.String(32), nullable=False),
        sa.Column("chat_id", sa.BigInteger(), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("turn_id", sa.String(32), nullable=True),
        sa.Column("connector_id", sa.String(128), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("call", sa.Text(), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("answer", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("token", name=op.f("pk_server_questions")),
    )
    op.create_index(
        op.f("ix_server_questions_status"), "server_questions", ["status"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_server_questions_status"), table_name="server_questions")
    op.drop_table("server_questions")
