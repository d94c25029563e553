"""Approval cards: created for held calls, decided by a tap, used once, resumed from the database.

A decision exists only as a recorded tap on a card: bound to the card (an opaque token with 128
random bits in its callback data) and to a digest of tool + canonical arguments + the tool's
definition hash, so an approved call runs exactly as shown, once.
"""

from __future__ import annotations

import json
import secrets
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from palui import callbacks
from palui.callbacks import ApprovalAction, ApprovalButton
from palui.db import Store
from palui.db.approvals import ApprovalRecord, NewApproval
from palui.domain import Button, Card, Inbound, ToolCallRequest, ToolOutcome
from palui.logs import get_logger
from palui.policy.classify import definition_hash
from palui.ports import Channel
from palui.tools.digest import call_digest, canonical
from palui.tools.runner import TurnTools, parse_arguments

log = get_logger("palui.approvals.decisions")

ARG_VALUE_CHARS = 300
ARG_TOTAL_CHARS = 1500
DENIED = "The person denied this call. Nothing was run."
EXPIRED = "Nobody approved this call in time, so it expired. Nothing was run."
STILL_RUNNING = (
    "Unknown outcome: this approved call was interrupted while it ran, so it may or may not "
    "have happened. Check before retrying, or tell the user."
)
CHANGED = (
    "The tool changed after the card was shown, so the approval no longer fits. Nothing was run."
)


def _pretty(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def render_arguments(arguments: str, *, full: bool = False) -> tuple[str, bool]:
    """Readable `key: value` lines; long values and long lists are cut unless `full`."""
    try:
        data = json.loads(arguments)
    except json.JSONDecodeError:
        data = {"(raw)": arguments}
    if not data:
        return "  (none)", False
    lines, cut = [], False
    for key, value in data.items():
        text = _pretty(value)
        if not full and len(text) > ARG_VALUE_CHARS:
            text, cut = text[:ARG_VALUE_CHARS] + " …", True
        lines.append(f"  {key}: {text}")
    body = "\n".join(lines)
    if not full and len(body) > ARG_TOTAL_CHARS:
        body, cut = body[:ARG_TOTAL_CHARS] + " …", True
    return body, cut


def changed_arguments(record: ApprovalRecord) -> list[tuple[str, Any, Any]]:
    """(name, model's value, person's value) of each argument a person edited; absent = None."""
    if record.model_arguments is None:
        return []
    before, after = json.loads(record.model_arguments), json.loads(record.arguments)
    return [
        (name, before.get(name), after.get(name))
        for name in sorted(before.keys() | after.keys())
        if canonical({"v": before.get(name)}) != canonical({"v": after.get(name)})
    ]


def _short(value: Any, limit: int = 60) -> str:
    text = "(not set)" if value is None else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def edited_line(record: ApprovalRecord) -> str | None:
    """The card's line saying who changed which arguments (None when nobody edited it)."""
    if record.model_arguments is None:
        return None
    changes = ", ".join(f"{name} (was {_short(old)})" for name, old, _ in changed_arguments(record))
    return f"✏️ Edited by {record.edited_by}: {changes or 'no change'}"


def edited_note(record: ApprovalRecord) -> str:
    """What the model reads first in an edited call's result."""
    changes = "; ".join(
        f"{name}: you sent {_short(old, 200)}, they set {_short(new, 200)}"
        for name, old, new in changed_arguments(record)
    )
    return (
        "The person edited this call's arguments before approving it, and it ran with their "
        f"values ({changes}). Keep their values; don't change them back.\nResult:\n"
    )


def _expires_in(delta: timedelta) -> str:
    hours = delta.total_seconds() / 3600
    if hours >= 1:
        return f"{hours:.0f} h"
    return f"{max(int(delta.total_seconds() // 60), 1)} min"


def _summary(description: str) -> str:
    first = description.strip().split("\n", 1)[0]
    return first[:200]


def _outcome_line(record: ApprovalRecord) -> str:
    """The line a decided card ends with."""
    if record.status == "denied":
        return f"❌ Denied by {record.decided_by} — nothing was run"
    if record.status == "expired":
        return "⌛ Expired — nothing was run"
    at = record.decided_at.strftime("%H:%M") if record.decided_at else "?"
    return f"✅ Approved by {record.decided_by} at {at} UTC"


@dataclass(frozen=True, slots=True)
class TapResult:
    notice: str  # the short answer the tapper sees
    resumable_turn: str | None = None  # the turn whose approvals are now all decided


class Approvals:
    def __init__(
        self,
        store: Store,
        channel: Channel,
        *,
        ttl_s: int,
        now: Callable[[], datetime],
    ) -> None:
        self._store = store
        self._channel = channel
        self._ttl = timedelta(seconds=ttl_s)
        self._now = now

    # -- cards ---------------------------------------------------------------------------------

    def card(self, record: ApprovalRecord, description: str = "", *, full: bool = False) -> Card:
        label = record.tool_class + (" · sends out" if record.sends_out else "")
        arguments, cut = render_arguments(record.arguments, full=full)
        lines = [f"🔐 Approval needed — {record.tool}  ({label})"]
        if description:
            lines.append(_summary(description))
        lines.append(f"Why: {record.why}.")
        if edited := edited_line(record):
            lines.append(edited)
        lines += ["Arguments", arguments]
        lines.append(f"Expires in {_expires_in(record.expires_at - self._now())}.")
        approve, deny = ApprovalAction.APPROVE, ApprovalAction.DENY
        decide = (Button("✅ Approve", callbacks.approval(record.token, approve)),
                  Button("❌ Deny", callbacks.approval(record.token, deny)))  # fmt: skip
        more = [Button("✏️ Edit", callbacks.card_edit(record.token))]  # palui.approvals.edits
        if cut:
            show_all = callbacks.approval(record.token, ApprovalAction.SHOW_ALL)
            more.append(Button("📄 Show all arguments", show_all))
        return Card("\n".join(lines), rows=(decide, tuple(more)))

    def _closed(self, record: ApprovalRecord, outcome: str) -> Card:
        label = record.tool_class + (" · sends out" if record.sends_out else "")
        arguments, _ = render_arguments(record.arguments)
        edited = f"{edited_line(record)}\n" if record.model_arguments else ""
        return Card(f"🔐 {record.tool}  ({label})\n{edited}{arguments}\n{outcome}")

    async def open(
        self, turn_id: str, chat_id: int, held: Sequence[ToolCallRequest], tools: TurnTools
    ) -> list[NewApproval]:
        """Approval records for the held calls (stored by the caller with the paused turn)."""
        approvals = []
        for call in held:
            tool = tools.offer.tools[call.name]
            classification = tools.classification(call.name)
            assert classification is not None
            arguments = parse_arguments(call.arguments)
            approvals.append(
                NewApproval(
                    id=uuid.uuid4().hex,
                    token=secrets.token_urlsafe(16),  # 128 random bits
                    call_id=call.id,
                    tool=call.name,
                    arguments=canonical(arguments),
                    digest=call_digest(call.name, arguments, definition_hash(tool.remote)),
                    tool_class=classification.tool_class,
                    sends_out=classification.sends_out,
                    why=tools.why(call.name),
                    decision_id=tools.decision_id(call.name, tools.decision(call.name)),
                    expires_at=self._now() + self._ttl,
                )
            )
        return approvals

    async def post_cards(self, turn_id: str, descriptions: dict[str, str]) -> None:
        for record in await self._store.approvals.for_turn(turn_id):
            if record.status != "pending" or record.message_id is not None:
                continue
            card = self.card(record, descriptions.get(record.tool, ""))
            message_id = await self._channel.send_card(record.chat_id, card)
            await self._store.approvals.set_message(record.id, message_id)
            # A quick tap may have been decided before the card's id was stored: close it now.
            latest = await self._store.approvals.by_token(record.token)
            if latest is not None and latest.status != "pending":
                await self._close(latest, _outcome_line(latest))

    # -- taps ----------------------------------------------------------------------------------

    async def tap(self, inbound: Inbound) -> TapResult:
        button = callbacks.parse(inbound.callback_data)
        if not isinstance(button, ApprovalButton):
            return TapResult("This button is not valid.")
        token, action = button.token, button.action
        record = await self._store.approvals.by_token(token)
        if record is None:
            if await self._store.approval_edits.was_edited(token):
                return TapResult("This card was edited: decide on the edited card below.")
            log.warning("forged_tap", chat_id=inbound.chat_id, user_id=inbound.user.id)
            return TapResult("This button is no longer active.")
        if record.chat_id != inbound.chat_id:
            return TapResult("Only the bot's owner can decide.")
        if action is ApprovalAction.SHOW_ALL:
            arguments, _ = render_arguments(record.arguments, full=True)
            await self._store.outbox.add(
                record.chat_id, f"All arguments of {record.tool}:\n{arguments}"
            )
            return TapResult("Sent below.")
        if record.status != "pending":
            return TapResult(f"Already decided ({record.status}).")
        now = self._now()
        if record.expires_at <= now:
            await self.expire_due()  # its turn resumes, told that nothing ran
            return TapResult("This approval has expired. Nothing was run.", record.turn_id)
        approve = action is ApprovalAction.APPROVE
        if not await self._store.approvals.decide(record.id, approve, inbound.user.display, now):
            return TapResult("Already decided.")
        log.info("approval_decided", tool=record.tool, approved=approve, chat_id=record.chat_id)
        decided = await self._store.approvals.by_token(record.token)  # with its card's id
        if decided is not None:
            await self._close(decided, _outcome_line(decided))
        remaining = [
            a for a in await self._store.approvals.for_turn(record.turn_id) if a.status == "pending"
        ]
        return TapResult(
            "Approved." if approve else "Denied.", None if remaining else record.turn_id
        )

    async def _close(self, record: ApprovalRecord, outcome: str) -> None:
        if record.message_id is None:
            return
        try:
            await self._channel.edit_card(
                record.chat_id, record.message_id, self._closed(record, outcome)
            )
        except Exception as exc:  # the decision stands even if the card can't be edited
            log.warning("card_edit_failed", error=str(exc))

    async def expire_due(self) -> set[int]:
        """Expire overdue approvals, edit their cards; the chats whose turns can now resume."""
        expired = await self._store.approvals.expire_due(self._now())
        for record in expired:
            await self._close(record, _outcome_line(record))
        return {record.chat_id for record in expired}

    # -- resuming ------------------------------------------------------------------------------

    async def outcomes(
        self, turn_id: str, tools: TurnTools, step: int, held: set[str]
    ) -> dict[str, ToolOutcome]:
        """Each held call's outcome: run if approved (once), else the reason it did not run."""
        results: dict[str, ToolOutcome] = {}
        for record in await self._store.approvals.for_turn(turn_id):
            if record.call_id in held:
                results[record.call_id] = await self._outcome(record, tools, step)
        return results

    async def _outcome(self, record: ApprovalRecord, tools: TurnTools, step: int) -> ToolOutcome:
        if record.status == "denied":
            return ToolOutcome(DENIED, is_error=True)
        if record.status == "expired":
            return ToolOutcome(EXPIRED, is_error=True)
        if record.status == "executed":
            note = edited_note(record) if record.model_arguments is not None else ""
            return ToolOutcome(note + (record.result or ""))
        if record.status != "approved":  # "executing": a crash cut it off; never re-fire
            return ToolOutcome(STILL_RUNNING, is_error=True)
        tool = tools.offer.tools.get(record.tool)
        arguments = json.loads(record.arguments)
        if (
            tool is None
            or call_digest(record.tool, arguments, definition_hash(tool.remote)) != record.digest
        ):
            await self._store.approvals.executed(record.id, CHANGED)
            return ToolOutcome(CHANGED, is_error=True)
        if not await self._store.approvals.claim_execution(record.id):
            return ToolOutcome(STILL_RUNNING, is_error=True)
        call = ToolCallRequest(record.call_id, record.tool, record.arguments)
        outcome = await tools.run_approved(call, step, model_arguments=record.model_arguments)
        await self._store.approvals.executed(record.id, outcome.text)
        if record.model_arguments is not None:  # so the model does not "fix" the values back
            return ToolOutcome(edited_note(record) + outcome.text, outcome.is_error)
        return outcome

    async def pending_text(self, chat_id: int) -> str:
        pending = await self._store.approvals.pending(chat_id)
        if not pending:
            return "No approvals are waiting."
        now = self._now()
        lines = [f"Pending approvals: {len(pending)}"]
        for record in pending:
            lines.append(
                f"• {record.tool} ({record.tool_class}) — expires in "
                f"{_expires_in(record.expires_at - now)}"
            )
        return "\n".join(lines)
