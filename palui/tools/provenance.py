"""Taint that travels through memory (DESIGN §1.1): the origin Palui stamps on a memory write, and
the taint a result brings in when it shows memories saved from tainted turns.

A `recall__add_memory` call is saved with the turn's untrusted source as its `origin` argument,
set here and not by the model: in a tainted turn whatever the model put there is replaced, in a
clean turn it is dropped (what a clean turn saves is the person's). A recall whose `add_memory`
takes no `origin` can't keep it, so in a tainted turn the write is refused and nothing is stored.
A trusted server reports the origins of what a result shows (`ToolOutcome.origins`, from the
bundled recall); the first one taints the turn that reads it, named as a memory.
"""

from __future__ import annotations

from typing import Any

from palui.domain import RECALL_ID, Taint, TaintVia, ToolOutcome
from palui.policy.taint import taints
from palui.tools.guards import GuardRejected
from palui.tools.names import split_name
from palui.tools.registry import OfferedTool

ORIGIN = "origin"
MEMORY_WRITE = "add_memory"


def is_memory_write(tool: OfferedTool) -> bool:
    return tool.toolset.id == RECALL_ID and tool.remote.name == MEMORY_WRITE


def keeps_origin(tool: OfferedTool) -> bool:
    """Whether the recall stores where a memory came from: its add_memory takes an `origin`."""
    properties = (tool.remote.input_schema or {}).get("properties")
    return isinstance(properties, dict) and ORIGIN in properties


def stamped(tool: OfferedTool, arguments: dict[str, Any], taint: Taint | None) -> dict[str, Any]:
    """The arguments a call runs with: a memory write carries the turn's origin. Raises
    `GuardRejected` (like a guard: the model reads why) for a memory write in a tainted turn
    to a recall that can't keep its origin."""
    if not is_memory_write(tool):
        return arguments
    final = {name: value for name, value in arguments.items() if name != ORIGIN}
    if taint is None:
        return final
    if not keeps_origin(tool):
        raise GuardRejected(
            f"This turn read untrusted content (from {taint.connector}), and this recall "
            "server can't record where a memory came from, so Palui saves no memory in such a "
            "turn. Nothing was saved; tell the user what you would have saved."
        )
    final[ORIGIN] = taint.origin
    return final


def result_taint(name: str, tool: OfferedTool, outcome: ToolOutcome) -> Taint | None:
    """The taint a result brings in: any result (an error or a write's confirmation too) from a
    connector that is not trusted; else the first untrusted origin a trusted server reports for
    what it shows (a memory saved in a tainted turn)."""
    if taints(tool.toolset.trust):
        connector = (split_name(name) or (tool.toolset.id, ""))[0]
        return Taint(connector, name)
    if outcome.origins:
        return Taint.from_label(outcome.origins[0]).through(TaintVia.MEMORY)
    return None
