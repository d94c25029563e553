"""The operator's pre hooks on a card's ✏️ Edit (DESIGN §1.6 step 1).

Values a person types go through the same pre hooks as the model's, before the edited card is
shown: a person approving their own edit must not get past a rule the model could not. A `Block`
refuses the edit with the hook's reason (the question is asked again, nothing runs); a `Rewrite`
is applied, so the edited card shows, and its approval binds to, what will run (the hooks do not
run again on Approve). A hook that supplies a result or fails refuses the edit too: neither
leaves a call a person could approve as shown. Each answer is checked by the hooks and the
parameter guards as it comes (`EditHooks.check`, `check_guards`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from palui.db.turns import TurnRepo
from palui.domain import ApprovalRecord, TurnKind
from palui.errors import GuardRejected, HookFailed
from palui.logs import get_logger
from palui.tools.guards import Guards
from palui.tools.hooks import Block, Rewrite, Supply, ToolCall, run_pre
from palui.tools.names import split_name
from palui.tools.rules import ToolRules

log = get_logger("palui.approvals.edits")


class EditRefused(Exception):
    """The operator's rules refuse the edited call; `message` is for the person."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def check_guards(
    guards: Guards, tool: str, candidate: dict[str, Any], before: dict[str, Any], schema: Any
) -> None:
    """The guards' verdict on a new value (GuardRejected); a refusal the old values share is not
    its fault (it is checked again on the whole call at the end)."""
    try:
        guards.apply(tool, candidate, schema)
    except GuardRejected as exc:
        try:
            guards.apply(tool, before, schema)
        except GuardRejected as earlier:
            if earlier.message == exc.message:
                return
        raise


class EditHooks:
    def __init__(self, rules: ToolRules, turns: TurnRepo) -> None:
        self._rules = rules
        self._turns = turns

    async def apply(self, record: ApprovalRecord, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments as the pre hooks leave them (maybe rewritten); EditRefused if a hook
        blocks the call, supplies its result or fails."""
        current = dict(arguments)
        if not self._rules.pre_hooks:
            return current
        # An unknown turn is shown as tainted: a hook's own caution should err that way.
        kind, tainted = await self._turns.kind_and_taint(record.turn_id) or (TurnKind.CHAT, True)
        parts = split_name(record.tool)
        view = ToolCall(
            tool=record.tool,
            connector=parts[0] if parts else "",
            arguments=dict(current),
            tool_class=record.tool_class,
            sends_out=record.sends_out,
            turn_kind=str(kind),
            tainted=tainted,
            chat_id=record.chat_id,
            turn_id=record.turn_id,
        )
        for hook in self._rules.pre_hooks:
            try:
                result = await run_pre(hook, view, self._rules.hook_timeout_s)
            except HookFailed as exc:
                log.warning("approval_edit_hook_failed", tool=record.tool, hook=hook.path)
                raise EditRefused(f"a safety check failed ({exc.reason})") from None
            if isinstance(result, Block):
                log.info("approval_edit_blocked", tool=record.tool, hook=hook.path)
                raise EditRefused(f"the operator's rules block it: {result.reason}")
            if isinstance(result, Supply):
                log.info("approval_edit_supplied", tool=record.tool, hook=hook.path)
                raise EditRefused(
                    "the operator's rules answer this call without running it, so it can't be "
                    "approved with these values"
                )
            if isinstance(result, Rewrite):
                current = dict(result.arguments)
                view = dataclasses.replace(view, arguments=dict(current))
        return current

    async def check(
        self, record: ApprovalRecord, candidate: dict[str, Any], before: dict[str, Any]
    ) -> None:
        """The pre hooks' verdict on a new value, as `check_guards` (their rewrites are applied
        to the whole call at the end)."""
        try:
            await self.apply(record, candidate)
        except EditRefused as exc:
            try:
                await self.apply(record, before)
            except EditRefused as earlier:
                if earlier.message == exc.message:
                    return
            raise
