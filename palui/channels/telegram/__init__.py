"""Telegram: long polling through an inbox, and a careful sender.

The only package importing telegram: `inbound.py` reads updates (`attachments.py` their files),
`keyboards.py` builds buttons, `drafts.py` decides which chats get native drafts, `leftovers.py`
looks for messages sent unrecorded, `files.py` downloads what people send, `link.py` knows
whether Telegram answers (an outage: polls and sends alike). Pacing an answer's preview or draft
is `palui.delivery`'s: this package gives it the raw calls (`stream_faces`).

Why Palui polls by itself instead of using python-telegram-bot's Application/Updater: the updater
confirms an update (moves the offset) on its next poll, before the handler has run, so a crash
mid-turn would lose the message. Here an update's offset moves only after the inbox stores it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable, Collection, Sequence
from typing import Any

from telegram import BotCommand, LinkPreviewOptions, Message, ReplyParameters, Update
from telegram.constants import ChatAction, ParseMode
from telegram.error import BadRequest, InvalidToken, NetworkError, TelegramError
from telegram.ext import Defaults, ExtBot
from telegram.request import HTTPXRequest

from palui.channels.formatting import split_for_telegram
from palui.channels.ratelimit import SendRateLimiter
from palui.channels.telegram import files, leftovers, voice
from palui.channels.telegram.drafts import Drafts
from palui.channels.telegram.inbound import ALLOWED_UPDATES, poll, to_inbound
from palui.channels.telegram.keyboards import keyboard
from palui.channels.telegram.link import Link
from palui.channels.telegram.pacing import paced
from palui.channels.telegram.topics import Addresses
from palui.domain import Card, Conversation
from palui.errors import (
    ChannelError,
    ConfigError,
    MarkupRejected,
    MessageNotModified,
    PermanentChannelError,
)
from palui.logs import get_logger
from palui.observe import Metrics
from palui.ports import ConversationKeys, InboundSink, Part, StreamFaces

log = get_logger("palui.telegram")

POLL_TIMEOUT_S = 25
# The first preview (or draft) of an answer waits this long after its first words: an answer
# done by then is sent once, formatted, with no preview and no edit. One send per fast turn
# instead of two against Telegram's ~1 message per second per chat.
FIRST_PREVIEW_AFTER_S = 1.0
# Telegram's servers fetch the first URL of a message for its link preview, at once: a card
# showing a held call's URL (with the data in its query) would reach that site before the
# person could tap Deny. Set once on the bot, so no send or edit can forget it.
NO_LINK_PREVIEWS = Defaults(link_preview_options=LinkPreviewOptions(is_disabled=True))


class TelegramChannel:
    """Implements every channel port (`palui.ports.Channel`) over the Bot API (polling mode)."""

    def __init__(
        self,
        token: str,
        api_url: str,
        *,
        limiter: SendRateLimiter | None = None,
        poll_timeout_s: int = POLL_TIMEOUT_S,
        stream_replies: bool = True,
        drafts: bool = True,
        first_preview_after_s: float | None = None,
        read_timeout_s: float = 15.0,
        metrics: Metrics | None = None,
        conversations: ConversationKeys | None = None,
    ) -> None:
        self._metrics = metrics
        self._addresses = Addresses(conversations)  # topics as conversations (topics.py)
        request = HTTPXRequest(
            connection_pool_size=16, read_timeout=read_timeout_s, connect_timeout=10
        )
        # PTB adds getUpdates' own `timeout` to this: a hung long poll is given up 10 s past it.
        poll_request = HTTPXRequest(connection_pool_size=2, read_timeout=10)
        self.bot: ExtBot[None] = ExtBot(
            token,
            base_url=f"{api_url}/bot",
            base_file_url=f"{api_url}/file/bot",
            request=request,
            get_updates_request=poll_request,
            defaults=NO_LINK_PREVIEWS,
        )
        self._limiter = limiter or SendRateLimiter()
        self._link = Link()  # whether Telegram answers, as the poll and every send find it
        self._paced = functools.partial(paced, self._limiter, metrics=metrics, link=self._link)
        self._poll_timeout_s = poll_timeout_s
        self._stream_replies = stream_replies
        self._first_after_s = (
            FIRST_PREVIEW_AFTER_S if first_preview_after_s is None else first_preview_after_s
        )
        self._drafts = Drafts(self.bot, self._limiter, enabled=drafts)
        self._poller: asyncio.Task[None] | None = None
        self._sent = leftovers.SentIds()  # where to look for a message sent but not recorded

    # -- lifecycle -----------------------------------------------------------------------------

    async def initialize(self) -> None:
        try:
            await self.bot.initialize()
        except InvalidToken:
            raise ConfigError(
                "PALUI_TELEGRAM_TOKEN was refused by Telegram. Get a fresh token from @BotFather."
            ) from None
        except NetworkError as exc:
            raise ChannelError(f"Telegram can't be reached: {exc.message}") from exc
        log.info("telegram_ready", bot=self.bot.username)

    async def start_polling(
        self, sink: InboundSink, menu: Sequence[tuple[str, str]] | None = None
    ) -> None:
        """Poll for updates and hand each to `sink`; `menu` is the command menu to register
        (None: `set_menu` registers it later, once the commands are known)."""
        await self.bot.delete_webhook(drop_pending_updates=False)
        if menu is not None:
            await self.set_menu(menu)
        self._poller = asyncio.create_task(self._poll(sink), name="telegram-poller")

    async def set_menu(self, menu: Sequence[tuple[str, str]]) -> None:
        await self.bot.set_my_commands([BotCommand(name, text) for name, text in menu])

    async def start_webhook(
        self, url: str, secret_token: str, menu: Sequence[tuple[str, str]]
    ) -> None:
        """Webhook mode: Telegram POSTs updates to `url` (Palui's `POST /telegram`), each with
        `secret_token` in a header; see `feed`."""
        await self.bot.set_webhook(
            url, secret_token=secret_token, allowed_updates=list(ALLOWED_UPDATES)
        )
        await self.set_menu(menu)
        log.info("telegram_webhook_set")

    async def feed(self, sink: InboundSink, data: dict[str, Any]) -> None:
        """One update POSTed by Telegram: returns once it is stored (then it may be answered 200).

        Raises ValueError for a body that is not an update."""
        try:
            update = Update.de_json(data, self.bot)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a Telegram update ({type(exc).__name__})") from None
        await self._take(sink, update)

    def _username(self) -> str | None:
        """This bot's username (known once `initialize` asked Telegram)."""
        try:
            return self.bot.username
        except RuntimeError:  # not initialized: every `/cmd@name` then counts as another bot's
            return None

    async def close(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller
        with contextlib.suppress(TelegramError):
            await self.bot.shutdown()

    async def _poll(self, sink: InboundSink) -> None:
        await poll(self.bot, self._poll_timeout_s, functools.partial(self._take, sink), self._link)

    def on_back(self, callback: Callable[[], object]) -> None:
        """Call `callback` each time Telegram answers again after failing (an outage ends)."""
        self._link.on_back(callback)

    async def _take(self, sink: InboundSink, update: Update) -> None:
        inbound = to_inbound(update, self._username())
        if inbound is not None:
            await sink.accept(await self._addresses.keyed(inbound))

    # -- the channel ports ------------------------------------------------------------------------

    def stream_faces(self, chat_id: int) -> StreamFaces | None:
        if not self._stream_replies:
            return None

        async def send(text: str, html: bool) -> int:
            to = await self._addresses.where(chat_id)
            return self._noted(
                chat_id, await self._translated(to.chat_id, self._sender(to), text, html)
            )

        async def edit(message_id: int, text: str, html: bool) -> None:
            to = (await self._addresses.where(chat_id)).chat_id
            await self._translated(
                to, self.bot.edit_message_text, text, html, chat_id=to, message_id=message_id
            )

        async def delete(message_id: int) -> None:
            await self.delete_message(chat_id, message_id)

        # A draft where Telegram drafts (a topic this process has not seen yet: none), else
        # only the edited preview.
        to = self._addresses.known(chat_id)
        send_draft = None if to is None else self._drafts.sender(to.chat_id, to.topic_id)
        return StreamFaces(send, edit, delete, send_draft, self._first_after_s)

    async def _translated(self, for_chat: int, method: Any, *args: Any, **kwargs: Any) -> Any:
        """`_call` with the Bad Requests a stream must tell apart mapped to its errors."""
        *positional, html = args
        parse_mode = ParseMode.HTML if html else None
        call = functools.partial(method, *positional, parse_mode=parse_mode, **kwargs)
        try:
            return await self._call(for_chat, call)
        except BadRequest as exc:
            text = exc.message.lower()
            if "not modified" in text:
                raise MessageNotModified(exc.message) from exc
            if "parse" in text:
                raise MarkupRejected(exc.message) from exc
            raise ChannelError(f"Telegram refused the message: {exc.message}") from exc

    def render(self, text: str) -> Sequence[Part]:
        return split_for_telegram(text)

    async def send_part(self, chat_id: int, part: Part, *, reply_to: int | None = None) -> int:
        # A reply to a message that was deleted meanwhile is sent anyway, unthreaded.
        threaded = (
            ReplyParameters(reply_to, allow_sending_without_reply=True)
            if reply_to is not None
            else None
        )
        to = await self._addresses.where(chat_id)
        try:
            sent = await self._call(
                to.chat_id, self._send_html, to, part, threaded, again_on_timeout=False
            )
            return self._noted(chat_id, sent)
        except BadRequest as exc:
            if "parse" not in exc.message.lower():
                raise ChannelError(f"Telegram refused the message: {exc.message}") from exc
            # Formatting is a nicety: if Telegram can't parse it, the words still arrive.
            log.warning("html_rejected", error=exc.message)
            send = functools.partial(self._sender(to), part.plain, reply_parameters=threaded)
            try:
                sent = await self._call(to.chat_id, send, again_on_timeout=False)
                return self._noted(chat_id, sent)
            except BadRequest as plain_exc:
                raise PermanentChannelError(plain_exc.message) from plain_exc

    async def edit_part(self, chat_id: int, message_id: int, part: Part) -> None:
        edit = functools.partial(
            self.bot.edit_message_text,
            chat_id=(to := (await self._addresses.where(chat_id)).chat_id),
        )
        try:
            try:
                await self._translated(to, edit, part.html, True, message_id=message_id)
            except MarkupRejected as exc:
                log.warning("html_rejected", error=str(exc))
                await self._translated(to, edit, part.plain, False, message_id=message_id)
        except MessageNotModified:
            return  # it shows this already: an edit repeated after a crash
        except (MarkupRejected, BadRequest) as exc:
            raise PermanentChannelError(f"Telegram refused the edit: {exc}") from exc
        except ChannelError as exc:
            if isinstance(exc.__cause__, BadRequest):  # e.g. "message to edit not found"
                raise PermanentChannelError(str(exc)) from exc
            raise

    async def delete_message(self, chat_id: int, message_id: int) -> None:
        to = (await self._addresses.where(chat_id)).chat_id
        try:
            done = await self._call(to, self.bot.delete_message, to, message_id)
        except BadRequest as exc:
            raise PermanentChannelError(f"Telegram refused to delete: {exc.message}") from exc
        if not done:
            raise PermanentChannelError("Telegram did not delete the message")

    async def _send_html(
        self, to: Conversation, chunk: Part, threaded: ReplyParameters | None
    ) -> Message:
        send = self._sender(to)
        return await send(chunk.html, parse_mode=ParseMode.HTML, reply_parameters=threaded)  # type: ignore[no-any-return]

    async def send_voice(self, chat_id: int, audio: bytes, *, reply_to: int | None = None) -> int:
        to = await self._addresses.where(chat_id)
        send = functools.partial(
            voice.send_voice, self.bot, to.chat_id, to.topic_id, audio, reply_to
        )
        try:
            sent = await self._call(to.chat_id, send, again_on_timeout=False)
            return self._noted(chat_id, sent)
        except BadRequest as exc:
            raise PermanentChannelError(
                f"Telegram refused the voice message: {exc.message}"
            ) from exc

    async def send_notice(self, chat_id: int, text: str) -> None:
        to = await self._addresses.where(chat_id)
        self._noted(chat_id, await self._call(to.chat_id, self._sender(to), text))

    async def typing(self, chat_id: int) -> None:
        # Not through `_call`: a chat action is not a message, so it takes no send slot and the
        # answer after it does not wait a second behind it.
        to = await self._addresses.where(chat_id)
        with contextlib.suppress(TelegramError):
            await self.bot.send_chat_action(to.chat_id, ChatAction.TYPING, to.topic_id or None)

    async def send_card(self, chat_id: int, card: Card, *, reply_to: int | None = None) -> int:
        to = await self._addresses.where(chat_id)
        send = functools.partial(
            self._sender(to),
            card.text,
            reply_markup=keyboard(card),
            reply_parameters=voice.replying(reply_to),
        )
        message = await self._call(to.chat_id, send)
        return self._noted(chat_id, message)

    async def edit_card(self, chat_id: int, message_id: int, card: Card) -> None:
        to = (await self._addresses.where(chat_id)).chat_id
        call = functools.partial(
            self.bot.edit_message_text,
            card.text,
            chat_id=to,
            message_id=message_id,
            reply_markup=keyboard(card),
        )
        try:
            await self._call(to, call)
        except BadRequest as exc:
            if "not modified" not in exc.message.lower():
                raise ChannelError(f"Telegram refused the edit: {exc.message}") from exc

    async def answer_callback(self, callback_query_id: str, text: str) -> None:
        try:
            await self.bot.answer_callback_query(callback_query_id, text=text)
        except TelegramError as exc:
            raise ChannelError(str(exc)) from exc

    async def react(self, chat_id: int, message_id: int, emoji: str) -> None:
        """setMessageReaction, best effort: a chat that allows no reactions changes nothing."""
        try:
            to = (await self._addresses.where(chat_id)).chat_id
            await self.bot.set_message_reaction(to, message_id, emoji)
        except TelegramError as exc:
            log.info("reaction_not_set", chat_id=chat_id, error=str(exc))

    async def download(self, file_id: str, max_bytes: int) -> bytes:
        return await files.download(self.bot, file_id, max_bytes)

    def newest_sent_id(self, chat_id: int) -> int | None:
        return self._sent.newest(chat_id)

    async def find_unrecorded(self, chat_id: int, floor: int, text: str) -> int | None:
        probe = functools.partial(self._probe, chat_id, ((text, None),))
        below = self._sent.first_above(chat_id, floor)
        return await leftovers.find(probe, floor, below, strict=True)  # not found: a new preview

    async def find_part(
        self, chat_id: int, floor: int, part: Part, skip: Collection[int]
    ) -> int | None:
        # Edited to exactly what `send_part` sent ("not modified" needs the same entities):
        # the HTML, or the plain words where Telegram refused the markup.
        forms = ((part.html, ParseMode.HTML), (part.plain, None))
        probe = functools.partial(self._probe, chat_id, forms)
        below = self._sent.first_above(chat_id, floor)
        return await leftovers.find(probe, floor, below, skip, strict=True)  # not found: sent

    async def _probe(
        self, key: int, forms: Sequence[tuple[str, str | None]], message_id: int
    ) -> leftovers.Probe:
        chat_id = (await self._addresses.where(key)).chat_id
        if await self._addresses.has_topics(key):
            return leftovers.Probe.UNSURE  # the ids above the floor may be another topic's
        return await leftovers.edit_to(
            self.bot.edit_message_text,
            functools.partial(self._call, chat_id),
            chat_id,
            forms,
            message_id,
        )

    def _sender(self, to: Conversation) -> Any:
        """sendMessage to the conversation: its chat, in its topic if it is one."""
        return functools.partial(
            self.bot.send_message, to.chat_id, message_thread_id=to.topic_id or None
        )

    def _noted(self, chat_id: int, message: Message) -> int:
        self._sent.note(chat_id, message.message_id)
        return int(message.message_id)

    async def _call(
        self, chat_id: int, method: Any, *args: Any, again_on_timeout: bool = True
    ) -> Any:
        return await self._paced(chat_id, method, *args, again_on_timeout=again_on_timeout)
