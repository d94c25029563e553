"""The recall connector's server: the bundled one (`palui recall-server` over stdio, its file in
PALUI_DATA_DIR) unless `[recall]` names another one by `url` or `command`."""

from __future__ import annotations

import sys

from palui.config import McpServerSettings, Settings
from palui.domain import RECALL_ID

__all__ = ["RECALL_ID", "recall_server_settings"]


def recall_server_settings(settings: Settings, db: str | None = None) -> McpServerSettings | None:
    """How to reach recall; None when memory is switched off (`[recall] enabled = false`).

    `db` replaces the bundled server's file: `palui kinds` passes ":memory:" to see its tools
    without creating or upgrading the real one."""
    recall = settings.recall
    if not recall.enabled:
        return None
    trust, timeout_s = recall.trust, recall.timeout_s
    if recall.url:
        return McpServerSettings(
            url=recall.url, headers=recall.headers, trust=trust, timeout_s=timeout_s
        )
    if recall.command:
        return McpServerSettings(
            command=recall.command,
            args=recall.args,
            env=recall.env,
            trust=trust,
            timeout_s=timeout_s,
        )
    if db is None:
        db = str((settings.data_dir / "recall.db").resolve())
    # The interpreter running Palui has Palui installed: no PATH lookup of a `palui` script.
    return McpServerSettings(
        command=sys.executable,
        args=("-m", "palui.recall_server", "--db", db),
        env=recall.env,
        trust=trust,
        timeout_s=timeout_s,
    )
