"""Voice notes and audio: a voice note's transcript is the person's message (their own words,
untainted), and the reply first quotes, in one short line, what was heard. A forwarded voice
note is someone else's: its transcript goes into the forward's `Foreign` item instead (fenced,
tainting). An audio file is anyone's recording: its transcript, title and performer go into its
own `Foreign` audio item (`audio_words`), and the person's row holds only their caption.
"""

from __future__ import annotations

from palui.domain import Attachment
from palui.errors import ModelError
from palui.ports import Transcriber

QUOTE_CHARS = 80  # the quote line is a reminder of what was heard, not the transcript

NO_TRANSCRIBER = (
    "I can't listen to voice messages yet: no transcription model is set. To turn it on, set "
    "PALUI_TRANSCRIPTION_MODEL (e.g. openai/whisper-1; PALUI_TRANSCRIPTION_API_BASE and "
    "PALUI_TRANSCRIPTION_API_KEY default to the model's). Meanwhile, type your message."
)
FAILED = (
    "I couldn't transcribe that voice message ({reason}). Try again or type it; if it keeps "
    "failing, check PALUI_TRANSCRIPTION_MODEL and its API base and key."
)
FORWARDED = "I forwarded you a voice message."  # the person's row; the words are the forward's
AUDIO_SENT = "I sent you an audio file."  # the person's row for one sent without a caption
SILENT = "I heard no words in that voice message. Try again, or type it."


async def transcribe(transcriber: Transcriber, attachment: Attachment, audio: bytes) -> str:
    """The words heard; raises `ModelError` (the caller words the reply)."""
    name = attachment.file_name or "voice.ogg"
    return await transcriber.transcribe(audio, name, attachment.mime_type)


def failed_note(error: ModelError) -> str:
    return FAILED.format(reason=str(error) or type(error).__name__)


def heard_line(transcript: str) -> str:
    """`🎙 “…”`: the transcript on one line, cut to QUOTE_CHARS."""
    words = " ".join(transcript.split())
    if len(words) > QUOTE_CHARS:
        words = words[: QUOTE_CHARS - 1].rstrip() + "…"
    return f"🎙 “{words}”"


def audio_words(attachment: Attachment, transcript: str) -> str:
    """What an audio file said, with the tags its maker gave it."""
    tags = [
        f"{name}: {value.strip()}"
        for name, value in (("Title", attachment.title), ("Performer", attachment.performer))
        if value and value.strip()
    ]
    return "\n".join([*tags, transcript]) if tags else transcript
