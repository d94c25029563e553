"""edited arguments on approval cards (issue 5, Edit)

Revision ID: 0009
Revises: 0004
Create Date: 2026-11-30 04:40:00
"""

from __future__ import annotations

revision = "0009"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
