"""join the branches written side by side (0005-0009) into one head

Revision ID: 0010
Revises: 0005, 0006, 0007, 0008, 0009
Create Date: 2026-11-30 04:40:00
"""

from __future__ import annotations

revision = "0010"
down_revision = ("0005", "0006", "0007", "0008", "0009")
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
