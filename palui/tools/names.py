"""`<connectorId>__<tool>`: how a connector's tool is named for the model."""

from __future__ import annotations

import re

SEPARATOR = "__"
# What the model APIs accept as a function name.
MODEL_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def full_name(connector_id: str, tool: str) -> str:
    return f"{connector_id}{SEPARATOR}{tool}"


def split_name(name: str) -> tuple[str, str] | None:
    """("mcp-notes", "search") for "mcp-notes__search"; None if it has no connector part."""
    connector_id, sep, tool = name.partition(SEPARATOR)
    if not sep or not connector_id or not tool:
        return None
    return connector_id, tool


def offerable(name: str) -> bool:
    """A tool whose full name the model API would reject is never offered."""
    return bool(MODEL_NAME_RE.match(name))
