"""Answers to a server's question (palui/connectors/elicitation.py): a tap on one of its buttons,
or the person's next message for a field they type. The answer goes back to the call waiting for
it and the card is redrawn with the answer and without its buttons. A typed answer is the
server's, not a message to Palui: it never goes into the history. Both are taken in whichever
process receives them: the question is a row, and the call waiting for it (maybe in another
process) reads its answer from there.

A question answered after a restart has no call waiting: its call is continued here from the
round it asked in (its server did nothing yet), and what it answered is shown in the chat as the
server's words."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from palui.callbacks import QuestionButton
from palui.connectors import ConnectorManager
from palui.connectors.elicitation import Questions, Tapped, asked_of
from palui.db import Store
from palui.domain import Card, Inbound
from palui.errors import ChannelError
from palui.logs import get_logger
from palui.ports import Cards

log = get_logger("palui.interact")

SHOWN_CHARS = 1500


class QuestionTaps:
    def __init__(
        self,
        store: Store,
        channel: Cards,
        connectors: ConnectorManager,
        deliver: Callable[[int], None],
    ) -> None:
        self._store = store
        self._channel = channel
        self._connectors = connectors
        self._questions: Questions = connectors.questions
        self._deliver = deliver

    buttons = (QuestionButton,)

    async def tap(self, inbound: Inbound, tap: QuestionButton) -> bool:
        """A tap on one of a question's buttons (handed its button by the router)."""
        tapped = await self._questions.answer(tap.token, inbound.user.id, tap.choice)
        return await self._answered(inbound, tapped)

    async def owns(self, inbound: Inbound, *, asked: bool | None = None) -> bool:
        """The person's next message, when a question waits for a field they type — asked in
        this process or another (the question's row says; `asked`: the intake read it with
        the message's INSERT, so no query here)."""
        if inbound.callback_query_id or inbound.command is not None or not inbound.text:
            return False
        if asked is not None:
            return asked
        return await self._questions.wants_text(inbound.chat_id, inbound.user.id)

    async def handle(self, inbound: Inbound) -> bool:
        text = inbound.text or ""
        # Consumed before it is answered: the turn the answer lets go on must not find it
        # pending in the inbox and take it as its next message.
        await self._store.inbox.mark_done([inbound.update_id])
        tapped = await self._questions.answer_text(inbound.chat_id, inbound.user.id, text)
        return await self._answered(inbound, tapped)

    async def _answered(self, inbound: Inbound, tapped: Tapped) -> bool:
        await self._store.inbox.mark_done([inbound.update_id])
        with contextlib.suppress(ChannelError):
            if inbound.callback_query_id:
                await self._channel.answer_callback(inbound.callback_query_id, tapped.toast)
            elif not tapped.said:
                await self._channel.send_card(inbound.chat_id, Card(tapped.toast))
            if tapped.said and inbound.callback_query_id and inbound.message_id is not None:
                card = Card(f"{tapped.text}\n→ {tapped.said} (by {inbound.user.display})")
                await self._channel.edit_card(inbound.chat_id, inbound.message_id, card)
        if tapped.orphan is not None:
            await self._continue(tapped)
        return False

    async def _continue(self, tapped: Tapped) -> None:
        orphan = tapped.orphan
        assert orphan is not None
        asked = asked_of(orphan)
        connector = self._connectors.get(orphan.connector_id)
        if asked is None or asked.round_ is None or connector is None:
            return
        log.info("server_question_continued", connector=orphan.connector_id)
        outcome = await connector.continue_question(orphan)
        if outcome is None:
            return
        shown = outcome.text if len(outcome.text) <= SHOWN_CHARS else outcome.text[:SHOWN_CHARS]
        text = (
            f"{orphan.connector_id}__{asked.round_.tool}, continued after your answer "
            f"(the server's words, not Palui's):\n{shown}"
        )
        await self._store.outbox.add(orphan.chat_id, text)
        self._deliver(orphan.chat_id)
