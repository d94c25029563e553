"""The handlers of button taps, one per callback format (palui.callbacks): approval cards, a
card's ✏️ Edit and its questions, the connector, job and skills sheets. Each is handed the button
the router parsed; none parses callback data again."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Protocol

from palui.approvals.decisions import Approvals
from palui.approvals.edits import EditFlow
from palui.callbacks import (
    ApprovalButton,
    CardEditButton,
    ConnectorButton,
    EditQuestionButton,
    JobButton,
    ModelButton,
    SkillButton,
)
from palui.db import Store
from palui.domain import Card, Inbound
from palui.errors import ChannelError
from palui.logs import get_logger
from palui.ports import Cards

log = get_logger("palui.interact.taps")

SheetButton = ConnectorButton | JobButton | SkillButton | ModelButton


@dataclass(frozen=True, slots=True)
class SheetTap:
    """What a tap on a sheet's card comes to: the toast, and the card as it should be redrawn."""

    notice: str
    chat_id: int
    message_id: int | None
    card: Card | None = None


class Sheet(Protocol):
    async def tap(self, inbound: Inbound, button: Any) -> SheetTap: ...


class _Tap:
    """A tap is marked done, then answered with a toast (a failed toast changes nothing)."""

    def __init__(self, store: Store, channel: Cards) -> None:
        self._store = store
        self._channel = channel

    async def _done(self, inbound: Inbound, notice: str) -> None:
        await self._store.inbox.mark_done([inbound.update_id])
        assert inbound.callback_query_id is not None
        with contextlib.suppress(ChannelError):
            await self._channel.answer_callback(inbound.callback_query_id, notice)

    async def _redraw(self, chat_id: int, message_id: int | None, card: Card | None) -> None:
        if card is None or message_id is None:
            return
        try:
            await self._channel.edit_card(chat_id, message_id, card)
        except ChannelError as exc:
            log.warning("card_redraw_failed", error=str(exc))


class ApprovalTaps(_Tap):
    """✅ Approve, ❌ Deny and 📄 Show all arguments on an approval card."""

    def __init__(self, store: Store, channel: Cards, approvals: Approvals) -> None:
        super().__init__(store, channel)
        self._approvals = approvals

    buttons = (ApprovalButton,)

    async def tap(self, inbound: Inbound, button: ApprovalButton) -> bool:
        result = await self._approvals.tap(inbound, button)
        await self._done(inbound, result.notice)
        return bool(result.resumable_turn)


class EditTaps(_Tap):
    """✏️ Edit on an approval card, and Keep / Keep the rest / Cancel on its questions."""

    def __init__(self, store: Store, channel: Cards, edits: EditFlow) -> None:
        super().__init__(store, channel)
        self._edits = edits

    buttons = (CardEditButton, EditQuestionButton)

    async def tap(self, inbound: Inbound, button: CardEditButton | EditQuestionButton) -> bool:
        await self._done(inbound, await self._edits.tap(inbound, button))
        return False


class SheetTaps(_Tap):
    """The buttons of one sheet's cards (`/connectors` or `/jobs`): decided by the sheet, then
    the card is redrawn in place."""

    def __init__(
        self, store: Store, channel: Cards, button: type[SheetButton], sheet: Sheet
    ) -> None:
        super().__init__(store, channel)
        self.buttons = (button,)
        self._sheet = sheet

    async def tap(self, inbound: Inbound, button: SheetButton) -> bool:
        result = await self._sheet.tap(inbound, button)
        await self._done(inbound, result.notice)
        await self._redraw(result.chat_id, result.message_id, result.card)
        return False
