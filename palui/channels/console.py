"""The terminal as a channel, for `palui chat`: replies are printed, nothing is split."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TextIO

from palui import callbacks
from palui.callbacks import ApprovalAction, ApprovalButton
from palui.domain import Card
from palui.errors import ChannelError
from palui.ports import Part


class ConsoleChannel:
    """Implements every channel port (`palui.ports.Channel`) on a text stream."""

    def __init__(self, out: TextIO, chat_id: int = 0) -> None:
        self._out = out
        self._chat_id = chat_id  # the console's chat: nothing of another chat is printed
        self.pending_cards: list[Card] = []  # approval cards shown and not yet asked about
        self._cards = 0

    def stream_faces(self, chat_id: int) -> None:
        return None  # a terminal shows the whole answer at once

    def render(self, text: str) -> Sequence[Part]:
        return [Part(text, text)]  # printed as written: `plain`

    def _only_mine(self, chat_id: int) -> None:
        if chat_id != self._chat_id:
            # Not permanent: whatever it was stays pending for the process serving that chat.
            raise ChannelError(f"chat {chat_id} is not the console's")

    async def send_part(self, chat_id: int, part: Part, *, reply_to: int | None = None) -> None:
        self._print(chat_id, part.plain)

    async def send_voice(
        self, chat_id: int, audio: bytes, *, reply_to: int | None = None
    ) -> int | None:
        return None  # a terminal plays no voice: the text is the answer

    async def edit_part(self, chat_id: int, message_id: int, part: Part) -> None:
        await self.send_part(chat_id, part)  # never streams, so there is no preview to edit

    def _print(self, chat_id: int, text: str) -> None:
        self._only_mine(chat_id)
        self._out.write(f"\npalui> {text}\n\n")
        self._out.flush()

    async def delete_message(self, chat_id: int, message_id: int) -> None:
        return None

    def newest_sent_id(self, chat_id: int) -> int | None:
        return None  # no message ids: nothing is ever looked for

    async def find_unrecorded(self, chat_id: int, floor: int, text: str) -> int | None:
        return None

    async def find_part(
        self, chat_id: int, floor: int, part: Part, skip: Collection[int]
    ) -> int | None:
        return None

    async def send_notice(self, chat_id: int, text: str) -> None:
        self._print(chat_id, text)

    async def typing(self, chat_id: int) -> None:
        return None

    async def send_card(self, chat_id: int, card: Card, *, reply_to: int | None = None) -> int:
        """Print the card; `palui chat` then asks the question as a y/n prompt."""
        self._only_mine(chat_id)
        self._out.write(f"\n{card.text}\n")
        self._out.flush()
        buttons = tuple(b for row in card.keyboard for b in row)
        if any(isinstance(callbacks.parse(b.data), ApprovalButton) for b in buttons):
            # An approval card: `palui chat` asks it as y/n, reading its buttons as one row.
            self.pending_cards.append(Card(card.text, buttons))
        self._cards += 1
        return self._cards

    async def edit_card(self, chat_id: int, message_id: int, card: Card) -> None:
        self._only_mine(chat_id)
        last_line = card.text.rsplit("\n", 1)[-1]
        self._out.write(f"{last_line}\n")
        self._out.flush()

    async def answer_callback(self, callback_query_id: str, text: str) -> None:
        return None

    async def react(self, chat_id: int, message_id: int, emoji: str) -> None:
        return None  # one person types in turn: nothing waits unseen

    async def download(self, file_id: str, max_bytes: int) -> bytes:
        raise ChannelError("the terminal holds no files")  # only text is typed here

    def decision(self, card: Card, approve: bool) -> str:
        """The callback data of the card's Approve or Deny, as if its button were tapped."""
        token = next(
            button.token
            for button in map(callbacks.parse, (b.data for b in card.buttons))
            if isinstance(button, ApprovalButton)
        )
        action = ApprovalAction.APPROVE if approve else ApprovalAction.DENY
        return callbacks.approval(token, action)
