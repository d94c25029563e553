"""The taint rule's policy: which trust taints, and how a card says where taint came from.

A turn is tainted once it reads untrusted content (a result from a connector that is not
`trusted`, a web fetch, a webhook payload, someone else's words the person brought: a forwarded
message, a replied-to message by someone else, a document or photo). Taint is not laundered
through the conversation: a turn whose context holds a message from a tainted turn starts
tainted (`palui.turns.starting_taint` decides a turn's starting taint), and the card names the
source and how long ago it came in.
"""

from __future__ import annotations

from collections.abc import Iterable

from palui.domain import Taint, TaintVia

TRUSTED = "trusted"


def taints(trust: str | None) -> bool:
    """Whether a result from a connector with this trust taints the turn (fail closed)."""
    return trust != TRUSTED


def most_recent(sources: Iterable[Taint]) -> Taint | None:
    """The source a card names: the latest one."""
    return min(sources, key=lambda source: source.turns_ago or 0, default=None)


def describe_taint(source: Taint) -> str:
    """ "this conversation includes content from mcp-web, 2 turns ago; /new starts clean";
    someone else's words are named by their label ("this turn read a forwarded message from
    Ana")."""
    name = source.source
    if not source.turns_ago:
        if source.via is not None:
            return f"this turn {_CARRIED[source.via]} {name}"
        if source.is_foreign:
            return f"this turn read {name}"
        tool = f" ({source.tool})" if source.tool else ""
        return f"this turn read untrusted content from {source.connector}{tool}"
    ago = "1 turn ago" if source.turns_ago == 1 else f"{source.turns_ago} turns ago"
    where = name if source.is_foreign else f"content from {name}"
    if source.via is not None:
        where = f"content from {_CARRIER[source.via]} {name}"
    origin = f"this conversation includes {where}, {ago}"
    return f"{origin}; /new starts clean"


# What carried untrusted content into a later turn, named by what it came from (DESIGN §1.1):
# "a memory saved from a turn that read mcp-web".
_CARRIER = {
    TaintVia.MEMORY: "a memory saved from a turn that read",
    TaintVia.JOB: "a job created in a turn that read",
}
_CARRIED = {
    TaintVia.MEMORY: "recalled a memory saved from a turn that read",
    TaintVia.JOB: "is a run of a job created in a turn that read",
}
