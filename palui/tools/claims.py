"""Duplicate protection (DESIGN §1.6 step 4): a world-changing call is claimed in the action
ledger before it goes out, keyed by chat + tool + canonical arguments within a window.

New → it runs. Completed → the recorded result comes back and nothing fires. In progress → it is
not started again. Unknown (interrupted by a crash, /stop or a timeout) → never re-fired by
Palui. Failed → it may run again. Reads are never ledgered.
"""

from __future__ import annotations

from typing import Any

from palui.domain import ActionState, ToolOutcome
from palui.ports import Ledger
from palui.tools.digest import call_digest, canonical

LEDGER_REASONS = {
    "new": "the action key is stored before the call goes out",
    "completed": "this exact call already ran in this chat a short while ago",
    "in_progress": "this exact call is already running",
    "unknown": "this exact call was interrupted earlier; its outcome is unknown",
}

# What the ledger keeps for how a call ended (anything else, e.g. a timeout, is "unknown").
SETTLED_STATES = {"ok": "completed", "error": "failed"}


class ActionClaims:
    """One turn's claims on the action ledger of its chat."""

    def __init__(self, ledger: Ledger | None, chat_id: int, turn_id: str) -> None:
        self._ledger = ledger
        self._chat_id = chat_id
        self._turn_id = turn_id

    async def claim(self, tool: str, tool_class: str | None, arguments: dict[str, Any]) -> Any:
        """The ledger's claim for a world-changing call; None for reads (never ledgered)."""
        if self._ledger is None or tool_class in (None, "read"):
            return None
        key = call_digest(f"{self._chat_id}:{tool}", arguments, "")
        return await self._ledger.claim(
            key, self._chat_id, tool, canonical(arguments), self._turn_id
        )

    async def settle(self, action_id: int, status: str, result: str) -> None:
        assert self._ledger is not None
        await self._ledger.settle(action_id, SETTLED_STATES.get(status, "unknown"), result)


def repeated_outcome(action: Any) -> ToolOutcome:
    """What the model gets for an identical call within the window: nothing went out again."""
    if action.state == ActionState.COMPLETED:
        return ToolOutcome(
            "Already done: this exact call ran a short while ago in this chat, so it was "
            f"not sent again. Its result was:\n{action.result or ''}"
        )
    if action.state == ActionState.IN_PROGRESS:
        return ToolOutcome(
            "This exact call is already running; it was not started a second time.", True
        )
    return ToolOutcome(
        "Unknown outcome: this exact call was interrupted earlier, so it may or may not "
        "have happened. It was not sent again; check before retrying, or tell the user.",
        True,
    )
