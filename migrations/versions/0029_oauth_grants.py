"""remote connectors' OAuth grants, sealed

A connector signed in with OAuth (`/connect`) keeps its token response and client registration
here, each sealed with a key that is not in the database (PALUI_SECRET_KEY or the data dir's key
file), who signed it in (told once when it lapses), and the lease under which one process
refreshes a rotating refresh token.

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-04 23:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "oauth_grants",
        sa.Column("connector_id", sa.String(128), nullable=False),
        sa.Column("tokens", sa.Text(), nullable=True),
        sa.Column("client", sa.Text(), nullable=True),
        sa.Column("user_id", sa.BigInteger(), nullable=True),
        sa.Column("chat_id", sa.BigInteger(), nullable=True),
        sa.Column("lapsed_told", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("refresh_holder", sa.String(128), nullable=True),
        sa.Column("refresh_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("connector_id", name=op.f("pk_oauth_grants")),
    )


def downgrade() -> None:
    op.drop_table("oauth_grants")
