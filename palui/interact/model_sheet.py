"""`/model`: the models a person may choose for a chat (PALUI_MODELS; by default only
PALUI_MODEL) as buttons, the chosen one marked. A tap stores the choice on the chat's row; the
chat's next turn asks that model, with the same fallbacks and stand-ins as the default
(`palui.app.parts.model_chooser`). A button names its model by a digest of the name
(`palui.callbacks.model`): data naming no listed model (forged, or a model since taken off the
list) chooses nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from palui import callbacks
from palui.callbacks import ModelButton
from palui.chat.groups import threaded_to
from palui.db import Store
from palui.domain import Button, Card, Inbound
from palui.interact.taps import SheetTap
from palui.logs import get_logger
from palui.ports import Cards

log = get_logger("palui.interact.model_sheet")

NOT_LISTED = "That model can't be chosen here."


def short(model: str) -> str:
    """A button's label: the name without its provider (`openai/gpt-4.1-mini` → `gpt-4.1-mini`)."""
    return model.rsplit("/", 1)[-1]


class ModelSheet:
    def __init__(self, store: Store, channel: Cards, models: Sequence[str]) -> None:
        self._store = store
        self._channel = channel
        self.models = tuple(models)  # the default (PALUI_MODEL) first
        self._by_key = {callbacks.model_key(m): m for m in self.models}

    async def chosen(self, chat_id: int) -> str:
        """The model the chat's next turn asks: its choice while listed, else the default."""
        choice = await self._store.choices.model(chat_id)
        return choice if choice in self.models else self.models[0]

    def card(self, chosen: str) -> Card:
        buttons = tuple(
            Button(f"✅ {short(m)}" if m == chosen else short(m), callbacks.model(m))
            for m in self.models
        )
        return Card(f"Model for this chat: {chosen}", buttons=buttons)

    async def post(self, inbound: Inbound) -> str | None:
        """The card, or the only model when there is nothing to choose."""
        chosen = await self.chosen(inbound.chat_id)
        if len(self.models) < 2:
            return f"Model for this chat: {chosen} (the only one: PALUI_MODELS lists more)"
        card = self.card(chosen)
        await self._channel.send_card(inbound.chat_id, card, reply_to=threaded_to(inbound))
        return None

    async def tap(self, inbound: Inbound, button: ModelButton) -> SheetTap:
        chat, message = inbound.chat_id, inbound.message_id
        model = self._by_key.get(button.key)
        if model is None:
            log.warning("model_not_listed", chat_id=chat)
            return SheetTap(NOT_LISTED, chat, message)
        await self._store.choices.choose_model(chat, None if model == self.models[0] else model)
        log.info("model_chosen", chat_id=chat, model=model)
        return SheetTap(f"This chat now uses {model}.", chat, message, self.card(model))
