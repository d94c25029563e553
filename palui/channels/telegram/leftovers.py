"""Finding a message the bot sent but whose id a crash kept from being recorded.

The Bot API has no way to list a chat's messages and no idempotency key, but `editMessageText`
works only on the bot's own messages: on a person's message Telegram answers "message can't be
edited", on an id with no message in this chat "message to edit not found", and on a message
already showing the text "message is not modified". Message ids only grow (per chat in a
supergroup or channel; per bot account in private chats and small groups, so in a busy bot a
chat's ids jump). So the message is looked for above a floor (the newest id known in the chat
when it was sent), one id at a time, by editing each candidate to the text it was sent with.
Bounds keep the probes from reaching anything else of ours: at most `MAX_PROBES` ids, never an
id at or past one this process has sent in the chat since (that came after the crash), and never
an id the records name as another message (a reply's part, a card: `palui.db.outbox_search`).
"""

from __future__ import annotations

import functools
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Collection, Sequence
from enum import StrEnum
from typing import Any

from telegram.error import BadRequest, TelegramError

from palui.errors import ChannelError
from palui.logs import get_logger

log = get_logger("palui.telegram")

MAX_PROBES = 6  # edits tried per search; each takes one of the chat's send slots
KEPT_IDS = 32  # per chat: the newest ids this process sent there
KEPT_CHATS = 4096


class Probe(StrEnum):
    OURS = "ours"  # edited, or showing the text already: the bot's own message
    NOT_OURS = "not_ours"  # a person's message, or no message with that id in this chat
    UNSURE = "unsure"  # the answer says nothing about the message: stop looking
    FAILED = "failed"  # Telegram did not answer (an outage, a flood): stop looking, or fail


def read_refusal(description: str) -> Probe:
    """What a Bad Request to an edit says about the message it named."""
    text = description.lower()
    if "not modified" in text:
        return Probe.OURS
    if "can't be edited" in text or "not found" in text or "message_id_invalid" in text:
        return Probe.NOT_OURS
    return Probe.UNSURE


class SentIds:
    """The newest message ids this process sent, per chat (bounded: recent chats only)."""

    def __init__(self) -> None:
        self._chats: OrderedDict[int, deque[int]] = OrderedDict()

    def note(self, chat_id: int, message_id: int) -> None:
        ids = self._chats.get(chat_id)
        if ids is None:
            ids = self._chats[chat_id] = deque(maxlen=KEPT_IDS)
            if len(self._chats) > KEPT_CHATS:
                self._chats.popitem(last=False)
        else:
            self._chats.move_to_end(chat_id)
        ids.append(message_id)

    def newest(self, chat_id: int) -> int | None:
        ids = self._chats.get(chat_id)
        return max(ids) if ids else None

    def first_above(self, chat_id: int, floor: int) -> int | None:
        """The oldest id sent here above `floor`: what was sent later can't be older."""
        above = [i for i in self._chats.get(chat_id, ()) if i > floor]
        return min(above) if above else None


async def find(
    probe: Callable[[int], Awaitable[Probe]],
    floor: int,
    below: int | None,
    skip: Collection[int] = (),
    *,
    strict: bool = False,
) -> int | None:
    """The first id above `floor` (and under `below`) that `probe` finds ours, else None.
    The ids in `skip` (messages the records name as something else) are passed over unprobed:
    they take none of the `MAX_PROBES`. `strict`: a probe Telegram did not answer fails the
    search (a transient `ChannelError`) instead of ending it: the caller, about to send the
    message if it is not found, keeps it until Telegram can be asked (an outage's end)."""
    last = floor + MAX_PROBES + sum(1 for i in skip if i > floor)
    if below is not None:
        last = min(last, below - 1)
    probed = 0
    for message_id in range(floor + 1, last + 1):
        if message_id in skip:
            continue
        if probed == MAX_PROBES:
            break
        probed += 1
        found = await probe(message_id)
        if found is Probe.OURS:
            log.info("unrecorded_message_found", message_id=message_id, floor=floor)
            return message_id
        if found is Probe.FAILED and strict:
            raise ChannelError("Telegram could not be asked whether the message is there")
        if found is not Probe.NOT_OURS:
            break
    log.info("unrecorded_message_not_found", floor=floor, probed=probed)
    return None


async def edit_to(
    edit_text: Callable[..., Awaitable[Any]],
    paced: Callable[..., Awaitable[Any]],
    chat_id: int,
    forms: Sequence[tuple[str, str | None]],
    message_id: int,
) -> Probe:
    """One probe: edit `message_id` to each form of the text in turn (HTML, then plain words
    where Telegram refused the markup), through the chat's send pacing (`paced`)."""
    for text, parse_mode in forms:
        edit = functools.partial(
            edit_text, text, chat_id=chat_id, message_id=message_id, parse_mode=parse_mode
        )
        try:
            await paced(edit)
        except BadRequest as exc:
            if "parse" in exc.message.lower():
                continue  # such a part went out as plain words
            return read_refusal(exc.message)
        except (TelegramError, ChannelError) as exc:
            log.warning("unrecorded_probe_failed", chat_id=chat_id, error=str(exc))
            transient = isinstance(exc, ChannelError) and not exc.permanent
            return Probe.FAILED if transient else Probe.UNSURE
        return Probe.OURS
    return Probe.UNSURE
