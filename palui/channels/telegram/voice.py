"""Voice messages Palui sends: an answer spoken back (OGG/Opus, as Telegram plays it)."""

from __future__ import annotations

from telegram import InputFile, Message, ReplyParameters
from telegram.ext import ExtBot

VOICE_FILE = "answer.ogg"


def replying(reply_to: int | None) -> ReplyParameters | None:
    """A reply to that message, sent anyway (unthreaded) if it was deleted meanwhile."""
    if reply_to is None:
        return None
    return ReplyParameters(reply_to, allow_sending_without_reply=True)


async def send_voice(
    bot: ExtBot[None], chat_id: int, topic_id: int, audio: bytes, reply_to: int | None
) -> Message:
    audio_file = InputFile(audio, filename=VOICE_FILE)
    return await bot.send_voice(
        chat_id,
        audio_file,
        reply_parameters=replying(reply_to),
        message_thread_id=topic_id or None,
    )
