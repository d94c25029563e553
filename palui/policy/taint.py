"""The taint rule's policy: which trust taints, and how a card says where taint came from.

A turn is tainted once it reads untrusted content (a result from a connector that is not
`trusted`, a web fetch, a webhook payload). Taint is not laundered through the conversation: a
turn whose context holds a message from a tainted turn starts tainted (`palui.turns.taint`
decides a turn's starting taint), and the card names the source and how long ago it came in.
"""

from __future__ import annotations

from collections.abc import Iterable

from palui.domain import Taint

TRUSTED = "trusted"


def taints(trust: str | None) -> bool:
    """Whether a result from a connector with this trust taints the turn (fail closed)."""
    return trust != TRUSTED


def most_recent(sources: Iterable[Taint]) -> Taint | None:
    """The source a card names: the latest one."""
    return min(sources, key=lambda source: source.turns_ago or 0, default=None)


def describe_taint(source: Taint) -> str:
    """ "this conversation includes content from mcp-web, 2 turns ago; /new starts clean" """
    if not source.turns_ago:
        tool = f" ({source.tool})" if source.tool else ""
        return f"this turn read untrusted content from {source.connector}{tool}"
    ago = "1 turn ago" if source.turns_ago == 1 else f"{source.turns_ago} turns ago"
    origin = f"this conversation includes content from {source.connector}, {ago}"
    return f"{origin}; /new starts clean"
