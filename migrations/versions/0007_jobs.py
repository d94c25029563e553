"""scheduled jobs and their runs (issue 7)

Revision ID: 0007
Revises: 0004
Create Date: 2026-11-30 04:40:00
"""

from __future__ import annotations

revision = "0007"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
