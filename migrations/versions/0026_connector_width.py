"""a connector's width as the person chose it

`[mcp.<name>] allow` ("reads", "writes" or "all") says what of a connector runs without a card in
a clean chat turn; a person can choose another on /connectors or the web console. The choice is
kept with the connector's other settings (NULL: palui.toml's), like a pause, and bumps the
settings version so every process reloads it.

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-04 23:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("connector_settings") as batch:
        batch.add_column(sa.Column("allow", sa.String(8), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("connector_settings") as batch:
        batch.drop_column("allow")
