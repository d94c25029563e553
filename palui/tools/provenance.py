"""Taint that travels through memory (DESIGN §1.1): the origin a memory write carries, and the
taint a result brings in when it shows memories saved from tainted turns.

A `recall__add_memory` call in a tainted turn is sent with the turn's untrusted source as its
origin, in the request's `_meta` (`OriginToolset`), which the model never writes: an `origin`
argument the model adds is dropped before the card, and a clean turn sends none (what it saves
is the person's). A recall that does not say it keeps origin (`RemoteTool.keeps_origin`) gets no
memory from a tainted turn: the write is refused like a guard, before any card, and nothing is
stored. A trusted server reports the origins of what a result shows (`ToolOutcome.origins`, from
the bundled recall); the first one taints the turn that reads it, named as a memory.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from palui.domain import RECALL_ID, Taint, TaintVia, ToolOutcome
from palui.errors import GuardRejected
from palui.policy.taint_rule import taints
from palui.ports import OriginToolset, ScopedToolset
from palui.tools.names import split_name
from palui.tools.registry import OfferedTool

ORIGIN = "origin"  # never an argument of a memory write to a recall that keeps origin
MEMORY_WRITE = "add_memory"


def is_memory_write(tool: OfferedTool) -> bool:
    return tool.toolset.id == RECALL_ID and tool.remote.name == MEMORY_WRITE


def keeps_origin(tool: OfferedTool) -> bool:
    """Whether the recall stores where a memory came from (the bundled one does)."""
    return tool.remote.keeps_origin and isinstance(tool.toolset, OriginToolset)


def stamped(tool: OfferedTool, arguments: dict[str, Any], taint: Taint | None) -> dict[str, Any]:
    """A call's arguments as the card shows them. Raises `GuardRejected` (the model reads why)
    for a memory write in a tainted turn to a recall that can't keep its origin."""
    if not is_memory_write(tool):
        return arguments
    if taint is not None and not keeps_origin(tool):
        raise GuardRejected(
            f"This turn read untrusted content (from {taint.source}), and this recall "
            "server can't record where a memory came from, so Palui saves no memory in such a "
            "turn. Nothing was saved; tell the user what you would have saved."
        )
    if keeps_origin(tool):
        return {name: value for name, value in arguments.items() if name != ORIGIN}
    return arguments


async def call(tool: OfferedTool, arguments: dict[str, Any], taint: Taint | None) -> ToolOutcome:
    """Call the tool; a memory write in a tainted turn carries the turn's origin (checked
    again here: taint that came after the card counts)."""
    if not is_memory_write(tool) or taint is None:
        return await tool.toolset.call(tool.remote.name, arguments)
    try:
        arguments = stamped(tool, arguments, taint)
    except GuardRejected as exc:
        return ToolOutcome(f"Error: {tool.remote.name} was not run. {exc.message}", is_error=True)
    assert isinstance(tool.toolset, OriginToolset)  # keeps_origin said so
    return await tool.toolset.call_with_origin(tool.remote.name, arguments, taint.origin)


def result_taint(name: str, tool: OfferedTool, outcome: ToolOutcome) -> Taint | None:
    """The taint a result brings in: any result (an error or a write's confirmation too) from a
    connector that is not trusted, or content a trusted one marks untrusted (run_code's
    output); else the first untrusted origin a trusted server reports for what it shows (a
    memory saved in a tainted turn)."""
    if taints(tool.toolset.trust) or outcome.untrusted:
        connector = (split_name(name) or (tool.toolset.id, ""))[0]
        return Taint(connector, name)
    if outcome.origins:
        return Taint.from_label(outcome.origins[0]).through(TaintVia.MEMORY)
    return None


def repeated(tool: OfferedTool, recorded: ToolOutcome) -> ToolOutcome:
    """A result the ledger recorded, given back for an identical call: it taints as the fresh
    one did. A built-in's counts as untrusted, as it may be run_code's output."""
    built_in = isinstance(tool.toolset, ScopedToolset)
    return replace(recorded, untrusted=recorded.untrusted or built_in)
