"""Approvals as decisions: created for held calls, decided by a tap or by time, used once.

A decision exists only as a recorded tap on a card: bound to the card (an opaque token with 128
random bits in its callback data) and to a digest of tool + canonical arguments + the tool's
definition hash, so an approved call runs exactly as shown, once. This module reports each held
call's decision (`HeldDecision`); the resumed turn runs the approved ones through its runner.
How a card reads is `palui.approvals.cards`.
"""

from __future__ import annotations

import json
import secrets
import uuid
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from palui.approvals.cards import (
    card,
    closed_card,
    expires_in,
    outcome_line,
    render_arguments,
)
from palui.callbacks import ApprovalAction, ApprovalButton
from palui.db import Store
from palui.domain import (
    ApprovalRecord,
    ApprovalStatus,
    ChatKind,
    Fence,
    HeldDecision,
    Inbound,
    NewApproval,
    ToolCallRequest,
    Verdict,
)
from palui.logs import get_logger
from palui.observe import Metrics
from palui.policy.classify import definition_hash
from palui.ports import Cards
from palui.tools.digest import call_digest, canonical
from palui.tools.registry import ToolOffer
from palui.tools.runner import CallRunner, parse_arguments

log = get_logger("palui.approvals.decisions")

DENIED = "The person denied this call. Nothing was run."
EXPIRED = "Nobody approved this call in time, so it expired. Nothing was run."
STILL_RUNNING = (
    "Unknown outcome: this approved call was interrupted while it ran, so it may or may not "
    "have happened. Check before retrying, or tell the user."
)
CHANGED = (
    "The tool changed after the card was shown, so the approval no longer fits. Nothing was run."
)


NOT_YOURS = "Only the bot's owner can decide."
NOT_REQUESTER = "Only the person who asked can decide this card."
REQUESTER = "requester"  # `[groups] approver`: only the person whose message started the turn


class TapOutcome(StrEnum):
    """What a tap (or a press in the web console) came to: what the console shows by, never by
    reading the notice's words back."""

    APPROVED = "approved"
    DENIED = "denied"
    SHOWN_ALL = "shown_all"  # 📄 Show all arguments: sent below, nothing decided
    ALREADY_DECIDED = "already"
    EXPIRED = "expired"
    NOT_YOURS = "not_yours"  # a card of another chat
    NOT_REQUESTER = "not_requester"  # `[groups] approver = "requester"`, and not them
    EDITED = "edited"  # the card was replaced by its edited one
    CHANGED = "changed"  # the call changed after the console's page was loaded
    MISSING = "missing"  # no such approval (a forged or stale token)


@dataclass(frozen=True, slots=True)
class TapResult:
    outcome: TapOutcome
    notice: str  # the short answer the tapper sees
    resumable_turn: str | None = None  # the turn whose approvals are now all decided


class Approvals:
    def __init__(
        self,
        store: Store,
        channel: Cards,
        *,
        ttl_s: int,
        now: Callable[[], datetime],
        approver: str = "allowed",
        metrics: Metrics | None = None,
    ) -> None:
        self._metrics = metrics or Metrics()  # cards waiting: opened (the turn's pause) − settled
        self._store = store
        self._channel = channel
        self._ttl = timedelta(seconds=ttl_s)
        self._now = now
        self._approver = approver  # `[groups] approver`: "allowed" or "requester"
        # Opens ✏️ Edit's questions on a form tool's card (`EditFlow` sets it: the edits are
        # built on these approvals, so the hook points back rather than forward).
        self.open_form: Callable[[ApprovalRecord, int], Awaitable[None]] | None = None

    async def refusal(self, record: ApprovalRecord, inbound: Inbound) -> TapResult | None:
        """Why this tapper may not decide (or edit) the card; None: they may. A card is decided
        in its own chat; in a group under `[groups] approver = "requester"` only by the person
        whose message started the turn (a job's or webhook's turn has none: any allowed user)."""
        if record.chat_id != inbound.chat_id:
            return TapResult(TapOutcome.NOT_YOURS, NOT_YOURS)
        if inbound.chat_kind is not ChatKind.PRIVATE and await self._not_requester(
            record, inbound.user.id
        ):
            return TapResult(TapOutcome.NOT_REQUESTER, NOT_REQUESTER)
        return None

    async def _not_requester(self, record: ApprovalRecord, user_id: int) -> bool:
        """A group's card under `[groups] approver = "requester"`, and `user_id` is not whose
        message started its turn (a job's or webhook's turn has no requester: anyone allowed)."""
        if self._approver != REQUESTER:
            return False
        requester = await self._store.turns.requester(record.turn_id)
        if requester is None or requester == user_id:
            return False
        log.info("decision_by_non_requester", chat_id=record.chat_id, user_id=user_id)
        return True

    async def open(
        self, turn_id: str, chat_id: int, held: Sequence[ToolCallRequest], tools: CallRunner
    ) -> list[NewApproval]:
        """Approval records for the held calls (stored by the caller with the paused turn)."""
        approvals = []
        for call in held:
            tool = tools.offered[call.name]
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
                    why=tools.why(call),
                    decision_id=tools.decision_id(call.name, tools.decision(call)),
                    expires_at=self._now() + self._ttl,
                )
            )
        return approvals

    async def post_cards(
        self,
        turn_id: str,
        descriptions: dict[str, str],
        off_site: Collection[str] = (),
        *,
        forms: Collection[str] = (),
        after_update: int = 0,
    ) -> None:
        """Send the turn's unsent cards; `off_site` names the tools whose cards show the badge,
        `forms` those whose card opens ✏️ Edit's questions at once (answers: the messages after
        `after_update`). In a group each card is threaded to the message its turn answers."""
        threaded: list[int | None] = []  # the turn's reply_to, read with the first card
        for record in await self._store.approvals.for_turn(turn_id):
            if record.status != ApprovalStatus.PENDING or record.message_id is not None:
                continue
            description = descriptions.get(record.tool, "")
            shown = card(record, description, now=self._now(), off_site=record.tool in off_site)
            if not threaded:
                threaded.append(await self._store.turns.reply_to(turn_id))
            message_id = await self._channel.send_card(record.chat_id, shown, reply_to=threaded[0])
            await self._store.approvals.set_message(record.id, message_id)
            # A quick tap may have been decided before the card's id was stored: close it now.
            latest = await self._store.approvals.by_token(record.token)
            if latest is not None and latest.status != ApprovalStatus.PENDING:
                await self._close(latest, outcome_line(latest))
            elif latest is not None and record.tool in forms and self.open_form is not None:
                await self.open_form(latest, after_update)

    # -- taps ----------------------------------------------------------------------------------

    async def tap(self, inbound: Inbound, button: ApprovalButton) -> TapResult:
        record = await self._store.approvals.by_token(button.token)
        if record is None:
            if await self._store.approval_edits.was_edited(button.token):
                return TapResult(
                    TapOutcome.EDITED, "This card was edited: decide on the edited card below."
                )
            log.warning("forged_tap", chat_id=inbound.chat_id, user_id=inbound.user.id)
            return TapResult(TapOutcome.MISSING, "This button is no longer active.")
        if record.chat_id != inbound.chat_id:
            return TapResult(TapOutcome.NOT_YOURS, NOT_YOURS)
        if button.action is ApprovalAction.SHOW_ALL:
            arguments, _ = render_arguments(record.arguments, full=True)
            # In a code block: the values show as they are, never as formatting or links.
            await self._store.outbox.add(
                record.chat_id, f"All arguments of {record.tool}:\n```\n{arguments}\n```"
            )
            return TapResult(TapOutcome.SHOWN_ALL, "Sent below.")
        if (refused := await self.refusal(record, inbound)) is not None:
            return refused
        approve = button.action is ApprovalAction.APPROVE
        return await self._decide(record, approve, inbound.user.display)

    async def decide(
        self,
        approval_id: str,
        approve: bool,
        by: str,
        *,
        chat_ids: Collection[int],
        digest: str,
        user_id: int,
    ) -> TapResult:
        """A decision made in the web console by `by` (Telegram user `user_id`), allowed in
        `chat_ids`: the rules of a tap (single use, expiry, the requester in a group), bound to
        the digest of the call the person was shown."""
        record = await self._store.approvals.by_id(approval_id)
        if record is None or record.chat_id not in chat_ids:
            return TapResult(TapOutcome.MISSING, "There is no such approval.")
        if record.digest != digest:
            changed = "This call changed after the page was loaded. Nothing was decided."
            return TapResult(TapOutcome.CHANGED, changed)
        # No chat kind here; a private chat's requester is its one person, who alone sees it.
        if await self._not_requester(record, user_id):
            return TapResult(TapOutcome.NOT_REQUESTER, NOT_REQUESTER)
        return await self._decide(record, approve, by, on="web")

    async def _decide(
        self, record: ApprovalRecord, approve: bool, by: str, *, on: str | None = None
    ) -> TapResult:
        if record.status != ApprovalStatus.PENDING:
            return TapResult(TapOutcome.ALREADY_DECIDED, f"Already decided ({record.status}).")
        now = self._now()
        if record.expires_at <= now:
            await self.expire_due()  # its turn resumes, told that nothing ran
            expired = "This approval has expired. Nothing was run."
            return TapResult(TapOutcome.EXPIRED, expired, record.turn_id)
        if not await self._store.approvals.decide(record.id, approve, by, now, on=on):
            return TapResult(TapOutcome.ALREADY_DECIDED, "Already decided.")
        log.info(
            "approval_decided", tool=record.tool, approved=approve, chat_id=record.chat_id, on=on
        )
        self._metrics.card_settled()
        decided = await self._store.approvals.by_token(record.token)  # with its card's id
        if decided is not None:
            await self._close(decided, outcome_line(decided))
        remaining = [
            a
            for a in await self._store.approvals.for_turn(record.turn_id)
            if a.status == ApprovalStatus.PENDING
        ]
        resumable = None if remaining else record.turn_id
        if approve:
            return TapResult(TapOutcome.APPROVED, "Approved.", resumable)
        return TapResult(TapOutcome.DENIED, "Denied.", resumable)

    async def _close(self, record: ApprovalRecord, outcome: str) -> None:
        if record.message_id is None:
            return
        try:
            await self._channel.edit_card(
                record.chat_id, record.message_id, closed_card(record, outcome)
            )
        except Exception as exc:  # the decision stands even if the card can't be edited
            log.warning("card_edit_failed", error=str(exc))

    async def expire_due(self) -> set[int]:
        """Expire overdue approvals, edit their cards; the chats whose turns can now resume."""
        expired = await self._store.approvals.expire_due(self._now())
        for record in expired:
            self._metrics.card_settled()
            await self._close(record, outcome_line(record))
        return {record.chat_id for record in expired}

    # -- resuming ------------------------------------------------------------------------------

    async def decisions(
        self, turn_id: str, held: set[str], offer: ToolOffer
    ) -> dict[str, HeldDecision]:
        """Each held call's decision, by call id. An approval whose tool changed since its card
        was shown (checked against the tools offered now) is used up as `changed`."""
        found: dict[str, HeldDecision] = {}
        for record in await self._store.approvals.for_turn(turn_id):
            if record.call_id in held:
                verdict = await self._verdict(record, offer)
                found[record.call_id] = HeldDecision(
                    approval_id=record.id,
                    call=ToolCallRequest(record.call_id, record.tool, record.arguments),
                    verdict=verdict,
                    model_arguments=record.model_arguments,
                    result=record.result,
                )
        return found

    async def _verdict(self, record: ApprovalRecord, offer: ToolOffer) -> Verdict:
        if record.status == ApprovalStatus.DENIED:
            return Verdict.DENIED
        if record.status == ApprovalStatus.EXPIRED:
            return Verdict.EXPIRED
        if (
            record.status == ApprovalStatus.EXECUTED
        ):  # before a restart (or found changed, then a crash)
            return Verdict.CHANGED if record.result == CHANGED else Verdict.RAN
        if (
            record.status != ApprovalStatus.APPROVED
        ):  # "executing": a crash cut it off; never re-fire
            return Verdict.INTERRUPTED
        tool = offer.tools.get(record.tool)
        arguments = json.loads(record.arguments)
        if (
            tool is None
            or call_digest(record.tool, arguments, definition_hash(tool.remote)) != record.digest
        ):
            await self._store.approvals.executed(record.id, CHANGED)
            return Verdict.CHANGED
        return Verdict.APPROVED

    async def claim_execution(self, decision: HeldDecision, fence: Fence | None = None) -> bool:
        """approved -> executing, once: the approval is used up before the call goes out
        (under `fence`, only while the chat's lease holds: else `LeaseLost`)."""
        return await self._store.approvals.claim_execution(decision.approval_id, fence)

    async def executed(self, decision: HeldDecision, result: str) -> None:
        await self._store.approvals.executed(decision.approval_id, result)

    async def pending_text(self, chat_id: int) -> str:
        pending = await self._store.approvals.pending(chat_id)
        if not pending:
            return "No approvals are waiting."
        now = self._now()
        lines = [f"Pending approvals: {len(pending)}"]
        for record in pending:
            lines.append(
                f"• {record.tool} ({record.tool_class}) — expires in "
                f"{expires_in(record.expires_at - now)}"
            )
        return "\n".join(lines)
