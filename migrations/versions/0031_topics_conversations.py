"""topics: each topic of a chat with topics is a conversation with a key of its own

A topic's key (below -2**53, where no Telegram chat id is) stands in for a chat id in every
table keyed by chat (palui.db.topics); chats without topics keep their chat id as their key, so
no existing row changes.

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-05 21:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "topics",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("chat_id", sa.BigInteger(), nullable=False),
        sa.Column("topic_id", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_topics")),
        sa.UniqueConstraint("chat_id", "topic_id", name=op.f("uq_topics_chat_id")),
    )


def downgrade() -> None:
    op.drop_table("topics")
