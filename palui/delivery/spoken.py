"""An answer to a voice note, spoken back: the last part of its reply in the outbox.

The reply's row says it is spoken (`OutboxItem.voice`, decided at the turn's start: it answers a
voice note and the chat has /voice on); its parts are the text's, then one `Spoken` part, sent
and recorded like any other (`palui.chat.outbox`): after the text, never instead of it, and a
restart sends it once or not at all past its record. A reply past `max_chars`, no speech model,
a failing one or a refused send: the text stands alone, and the failure is logged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from palui.domain import OutboxItem
from palui.errors import ChannelError, ModelError
from palui.logs import get_logger
from palui.ports import Speaker, Voice

log = get_logger("palui.delivery.spoken")


@dataclass(frozen=True, slots=True)
class Spoken:
    """The voice message of a reply whose text parts are `text`'s."""

    text: str


@dataclass(frozen=True, slots=True)
class VoiceReplies:
    speaker: Speaker
    max_chars: int = 600


def with_voice(item: OutboxItem, parts: Sequence[Any]) -> Sequence[Any]:
    """The reply's parts, with its voice message last when it is spoken."""
    if not item.voice:
        return parts
    words = " ".join(str(getattr(part, "plain", part)) for part in parts)
    return [*parts, Spoken(words)]


async def send_spoken(
    channel: Voice, voice: VoiceReplies | None, item: OutboxItem, part: Spoken
) -> int | None:
    """Speak the reply and send it as a voice message: its message id, or None when it was not
    sent (then the text stands alone)."""
    if voice is None or not part.text.strip():
        return None
    if len(part.text) > voice.max_chars:
        log.info("voice_reply_too_long", chat_id=item.chat_id, chars=len(part.text))
        return None
    try:
        audio = await voice.speaker.speak(part.text)
        return await channel.send_voice(item.chat_id, audio, reply_to=item.reply_to)
    except (ModelError, ChannelError) as exc:
        log.warning("voice_reply_failed", chat_id=item.chat_id, error=str(exc))
        return None
