"""An in-memory channel: Palui in this process, without the fake Telegram server or litellm.

`MemoryChannel` implements every channel port (`palui.ports.Channel`) and records what Palui
sends (reply parts, cards, card edits, callback answers); a test hands Palui what a person sends
with `send`, `send_file`, `command` and `tap`, each of which returns once Palui has answered it
(its turn, command or tap is done and the replies are delivered).

Use it through the app, so everything is wired as in production:

    async with running_palui(settings, ScriptedModel([answer("Hello!")])) as (app, chat):
        await chat.send("hi")
        assert chat.texts() == ["Hello!"]
        await chat.command("status")
        card = chat.cards[-1]                       # an approval card, say
        await chat.tap(card.buttons[0].data)        # ✅ Approve

`settings` is a `palui.config.Settings` (e.g. `load_settings()` after setting PALUI_* in the
environment, as `settings_env` does, or `in_memory_settings(...)` below); `allowed_users` must
contain `chat.user_id`. Or build chat-layer parts directly and pass `MemoryChannel()` as their
channel; then call `chat.attach(sink)` with the part that accepts inbounds (`Chats`) yourself.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from collections.abc import AsyncIterator, Collection, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from palui.app.root import Palui
from palui.channels.telegram.attachments import foreign_of
from palui.config import Settings
from palui.db import Store
from palui.domain import Attachment, Card, ChatUser, Inbound, ToolSettingRecord
from palui.errors import ChannelError
from palui.ports import ChatModel, Part, Toolset
from palui.tools.watch import stored_tool

CHAT_ID = 1001
USER_ID = 1001


class Sink(Protocol):
    async def accept(self, inbound: Inbound) -> bool: ...

    async def wait_idle(self, chat_id: int) -> None: ...


@dataclass(frozen=True, slots=True)
class SentCard:
    chat_id: int
    message_id: int
    card: Card


@dataclass
class MemoryChannel:
    """The `Channel` port in memory. Its sinks are set by `attach` (or `running_palui`)."""

    chat_id: int = CHAT_ID
    user_id: int = USER_ID
    parts: list[tuple[int, str]] = field(default_factory=list)  # (chat, text) in send order
    notices: list[tuple[int, str]] = field(default_factory=list)
    cards: list[Card] = field(default_factory=list)
    sent_cards: list[SentCard] = field(default_factory=list)
    edits: list[tuple[int, int, Card]] = field(default_factory=list)  # (chat, message id, card)
    answers: list[tuple[str, str]] = field(default_factory=list)  # (callback id, toast)
    reactions: list[tuple[int, int, str]] = field(default_factory=list)  # (chat, message, emoji)
    replies_to: list[tuple[int, int]] = field(default_factory=list)  # (chat, message answered)
    voices: list[tuple[int, bytes]] = field(default_factory=list)  # (chat, OGG/Opus audio)
    files: dict[str, bytes] = field(default_factory=dict)  # what `send_file` put, by file id
    _sink: Sink | None = None
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def attach(self, sink: Sink) -> None:
        self._sink = sink

    # -- what a person does ----------------------------------------------------------------------

    async def push(self, inbound: Inbound) -> bool:
        """Hand Palui one inbound and wait until it has answered; whether it was stored."""
        assert self._sink is not None, "attach the channel to Palui first (see running_palui)"
        stored = await self._sink.accept(inbound)
        await self._sink.wait_idle(inbound.chat_id)
        return stored

    async def send(self, text: str, *, user_id: int | None = None) -> bool:
        return await self.push(self.inbound(text=text, user_id=user_id))

    async def send_file(
        self, attachment: Attachment, data: bytes, *, caption: str | None = None
    ) -> bool:
        """A file with its caption, labelled whose words it is as the Telegram channel does."""
        self.files[attachment.file_id] = data
        inbound = self.inbound(text=caption)
        return await self.push(
            dataclasses.replace(inbound, attachment=attachment, foreign=foreign_of(attachment))
        )

    async def command(self, name: str, args: str = "") -> bool:
        return await self.send(f"/{name} {args}".strip())

    async def tap(self, data: str, *, message_id: int | None = None) -> bool:
        """Tap a button whose callback data is `data` (on the card `message_id`, else the last
        card that carries it)."""
        if message_id is None:
            message_id = next(
                (
                    sent.message_id
                    for sent in reversed(self.sent_cards)
                    if any(b.data == data for row in sent.card.keyboard for b in row)
                ),
                None,
            )
        inbound = self.inbound(message_id=message_id, callback_data=data)
        return await self.push(inbound)

    def inbound(
        self,
        *,
        text: str | None = None,
        user_id: int | None = None,
        message_id: int | None = None,
        callback_data: str | None = None,
    ) -> Inbound:
        update_id = next(self._ids) + 1_000_000
        return Inbound(
            update_id=update_id, chat_id=self.chat_id,
            user=ChatUser(id=user_id or self.user_id, username="ana", first_name="Ana"),
            text=text, message_id=message_id,
            callback_query_id=f"cb{update_id}" if callback_data else None,
            callback_data=callback_data,
        )  # fmt: skip

    # -- what Palui did ---------------------------------------------------------------------------

    def texts(self, chat_id: int | None = None) -> list[str]:
        chat = self.chat_id if chat_id is None else chat_id
        return [text for to, text in self.parts if to == chat]

    # -- the Channel port --------------------------------------------------------------------------

    def stream_faces(self, chat_id: int) -> None:
        return None

    def render(self, text: str) -> Sequence[Part]:
        return [Part(text, text)]

    async def send_part(self, chat_id: int, part: Part, *, reply_to: int | None = None) -> None:
        self.parts.append((chat_id, part.plain))
        if reply_to is not None:
            self.replies_to.append((chat_id, reply_to))

    async def edit_part(self, chat_id: int, message_id: int, part: Part) -> None:
        self.parts.append((chat_id, part.plain))  # never streams: no preview to edit

    async def delete_message(self, chat_id: int, message_id: int) -> None:
        return None

    def newest_sent_id(self, chat_id: int) -> int | None:
        return None

    async def find_unrecorded(self, chat_id: int, floor: int, text: str) -> int | None:
        return None  # never streams: no preview is ever left unrecorded

    async def find_part(
        self, chat_id: int, floor: int, part: Part, skip: Collection[int]
    ) -> int | None:
        return None

    async def send_notice(self, chat_id: int, text: str) -> None:
        self.notices.append((chat_id, text))

    async def typing(self, chat_id: int) -> None:
        return None

    async def send_voice(
        self, chat_id: int, audio: bytes, *, reply_to: int | None = None
    ) -> int | None:
        self.voices.append((chat_id, audio))
        return next(self._ids)

    async def send_card(self, chat_id: int, card: Card, *, reply_to: int | None = None) -> int:
        message_id = next(self._ids)
        if reply_to is not None:
            self.replies_to.append((chat_id, reply_to))
        self.cards.append(card)
        self.sent_cards.append(SentCard(chat_id, message_id, card))
        return message_id

    async def edit_card(self, chat_id: int, message_id: int, card: Card) -> None:
        self.edits.append((chat_id, message_id, card))

    async def answer_callback(self, callback_query_id: str, text: str) -> None:
        self.answers.append((callback_query_id, text))

    async def react(self, chat_id: int, message_id: int, emoji: str) -> None:
        self.reactions.append((chat_id, message_id, emoji))

    async def download(self, file_id: str, max_bytes: int) -> bytes:
        if file_id not in self.files:
            raise ChannelError(f"no file {file_id!r} was sent")
        return self.files[file_id]


def approval_cards(chat: MemoryChannel) -> list[Card]:
    """The approval cards the chat has been sent, oldest first."""
    return [card for card in chat.cards if "Approval needed" in card.text]


def button(card: Card, label: str) -> str:
    """The callback data of the card's button labelled `label` (as a tap sends it)."""
    return next(b.data for row in card.keyboard for b in row if b.label == label)


def approve(card: Card) -> str:
    return button(card, "✅ Approve")


def in_memory_settings(database_url: str, data_dir: str, **fields: Any) -> Settings:
    """Settings for an in-process Palui: the owner `USER_ID`, recall off, HTTP on a free port."""
    values: dict[str, Any] = {
        "allowed_users": frozenset({USER_ID}),
        "database_url": database_url,
        "data_dir": data_dir,
        "http_port": 0,
        "recall": {"enabled": False},
        **fields,
    }
    return Settings(**values)


async def switch_on(app: Palui, connector_id: str, *tools: str) -> None:
    """Switch tools on as a person does on the connector sheet (or palui.toml's `enable`)."""
    toolset = app.registry.get(connector_id)
    assert toolset is not None, f"no toolset {connector_id!r}"
    saved = await app.store.tool_settings.all()
    for remote in toolset.tools():
        if remote.name not in tools:
            continue
        entry = app.catalog.entry(connector_id, remote)
        record = saved.get(entry.name) or ToolSettingRecord(
            entry.name, True, None, entry.classification.definition_hash, False
        )
        record = dataclasses.replace(record, enabled=True)
        await app.store.tool_settings.save(record)
        app.catalog.remember(entry.name, stored_tool(record))


@asynccontextmanager
async def running_palui(
    settings: Settings,
    model: ChatModel,
    channel: MemoryChannel | None = None,
    *,
    toolsets: Sequence[Toolset] = (),
    store: Store | None = None,
) -> AsyncIterator[tuple[Any, MemoryChannel]]:
    """The real app, serving `channel` instead of Telegram, answering with `model`, with
    `toolsets` (e.g. `tests.toolkit.FunctionToolset`) beside the configured connectors, over
    `store` if given (repositories of the test's own, e.g. one refusing a write)."""
    chat = channel or MemoryChannel()
    app = Palui(settings, channel=chat, model=model, toolsets=toolsets, store=store)
    async with app:
        stop = asyncio.Event()
        task = asyncio.create_task(app.serve_telegram(stop))
        serving = asyncio.ensure_future(app.serving.wait())
        try:
            await asyncio.wait({task, serving}, return_when=asyncio.FIRST_COMPLETED)
            if not serving.done():
                serving.cancel()
                await task  # it failed to start: raise why
                raise AssertionError("Palui stopped before it served")
            chat.attach(app.chats)
            yield app, chat
        finally:
            stop.set()
            await asyncio.wait_for(task, 15)
