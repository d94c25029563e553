"""The taint rule's bookkeeping: where untrusted content came from, and how a card says so.

A turn is tainted once it reads untrusted content (a result from a connector that is not
`trusted`, a web fetch, a webhook payload). Taint is not laundered through the conversation: a
turn whose context holds a message from a tainted turn starts tainted, and the card names the
source and how long ago it came in.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

TRUSTED = "trusted"


@dataclass(frozen=True, slots=True)
class TaintSource:
    connector_id: str  # "mcp-web"; "webhook:<name>" for a webhook payload
    tool: str | None = None  # full tool name, when a tool result brought it in
    turns_ago: int | None = None  # None or 0: this turn

    def carried(self, turns: int = 1) -> TaintSource:
        """The same source seen from a turn `turns` later in the conversation."""
        return replace(self, turns_ago=(self.turns_ago or 0) + turns)


def taints(trust: str | None) -> bool:
    """Whether a result from a connector with this trust taints the turn (fail closed)."""
    return trust != TRUSTED


def most_recent(sources: Iterable[TaintSource]) -> TaintSource | None:
    """The source a card names: the latest one."""
    return min(sources, key=lambda source: source.turns_ago or 0, default=None)


def describe_taint(source: TaintSource) -> str:
    """ "this conversation includes content from mcp-web, 2 turns ago; /new starts clean" """
    if not source.turns_ago:
        tool = f" ({source.tool})" if source.tool else ""
        return f"this turn read untrusted content from {source.connector_id}{tool}"
    ago = "1 turn ago" if source.turns_ago == 1 else f"{source.turns_ago} turns ago"
    origin = f"this conversation includes content from {source.connector_id}, {ago}"
    return f"{origin}; /new starts clean"
