"""Taps on a server's question (palui/connectors/elicitation.py): the answer goes back to the
call waiting for it, and the card is redrawn with the answer and without its buttons."""

from __future__ import annotations

import contextlib

from palui.callbacks import QuestionButton
from palui.connectors.elicitation import CANCEL, DECLINE, Questions
from palui.db import Store
from palui.domain import Card, Inbound
from palui.errors import ChannelError
from palui.ports import Cards


class QuestionTaps:
    def __init__(self, store: Store, channel: Cards, questions: Questions) -> None:
        self._store = store
        self._channel = channel
        self._questions = questions

    buttons = (QuestionButton,)

    async def tap(self, inbound: Inbound, tap: QuestionButton) -> bool:
        toast, answered = self._questions.answer(tap.token, inbound.user.id, tap.choice)
        await self._store.inbox.mark_done([inbound.update_id])
        with contextlib.suppress(ChannelError):
            if inbound.callback_query_id:
                await self._channel.answer_callback(inbound.callback_query_id, toast)
            if answered is not None and inbound.message_id is not None:
                if tap.choice == DECLINE:
                    said = "declined"
                elif tap.choice == CANCEL:
                    said = "cancelled"
                else:
                    said = answered.field.labels[int(tap.choice)]
                card = Card(f"{answered.text}\n→ {said} (by {inbound.user.display})")
                await self._channel.edit_card(inbound.chat_id, inbound.message_id, card)
        return False
