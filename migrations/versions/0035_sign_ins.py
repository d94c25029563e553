"""sign-ins and typed answers any process completes

`oauth_sign_ins`: a remote connector's sign-in under way, keyed by a hash of its OAuth `state`,
so the browser's return (or the pasted address) is taken once by whichever process it reaches.
`server_questions` gains the field a person types (so any process recognises that message as
the answer) and the card's message id (edited when /stop cancels the question).

Revision ID: 0035
Revises: 0034
Create Date: 2026-12-06 00:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0035"
down_revision = "0034"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "oauth_sign_ins",
        sa.Column("state_hash", sa.String(64), nullable=False),
        sa.Column("connector_id", sa.String(128), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("answer", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("state_hash", name=op.f("pk_oauth_sign_ins")),
    )
    op.create_index(op.f("ix_oauth_sign_ins_user_id"), "oauth_sign_ins", ["user_id"], unique=False)
    op.add_column("server_questions", sa.Column("typed_field", sa.Text(), nullable=True))
    op.add_column("server_questions", sa.Column("message_id", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    op.drop_column("server_questions", "message_id")
    op.drop_column("server_questions", "typed_field")
    op.drop_index(op.f("ix_oauth_sign_ins_user_id"), table_name="oauth_sign_ins")
    op.drop_table("oauth_sign_ins")
