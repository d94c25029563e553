"""The file a Telegram message carries, as a channel-neutral `Attachment`, and whose words it is.

A voice note (recorded in Telegram) is the person speaking: their own words. An audio file (a
Telegram `audio`, or a document with an audio MIME type), a document or a photo is content they
brought (someone else's words, DESIGN §1.1): anyone may have recorded it, and its name and tags
are its maker's. It is named as `Foreign`, so the turn that reads it is tainted and a card's
"why" says what it read.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from palui.config.sections import TELEGRAM_DOWNLOAD_LIMIT
from palui.domain import Attachment, AttachmentKind, Foreign, ForeignKind


def attachment_of(message: Any) -> Attachment | None:
    """The message's voice note, audio, photo (the largest size Telegram lets a bot download)
    or document; None for a message without one (or with a kind Palui doesn't read)."""
    if (voice := message.voice) is not None:
        return Attachment(
            AttachmentKind.VOICE,
            voice.file_id,
            voice.file_size,
            voice.mime_type or "audio/ogg",
            "voice.ogg",
            _seconds(voice.duration),
        )
    if (audio := message.audio) is not None:
        return Attachment(
            AttachmentKind.AUDIO,
            audio.file_id,
            audio.file_size,
            audio.mime_type,
            audio.file_name or "audio",
            _seconds(audio.duration),
            audio.title,
            audio.performer,
        )
    if message.photo:
        sizes = sorted(message.photo, key=lambda size: (size.width * size.height, size.file_size))
        within = [s for s in sizes if (s.file_size or 0) <= TELEGRAM_DOWNLOAD_LIMIT] or sizes
        photo = within[-1]
        return Attachment(AttachmentKind.PHOTO, photo.file_id, photo.file_size, "image/jpeg")
    if (document := message.document) is not None:
        # An audio file sent as a file is an audio file still: transcribed, and not the person's.
        mime = (document.mime_type or "").lower()
        kind = AttachmentKind.AUDIO if mime.startswith("audio/") else AttachmentKind.DOCUMENT
        return Attachment(
            kind, document.file_id, document.file_size, document.mime_type, document.file_name
        )
    return None


def _seconds(duration: Any) -> int | None:
    """A duration as whole seconds (PTB gives a timedelta with PTB_TIMEDELTA=1, else an int)."""
    if duration is None:
        return None
    return int(duration.total_seconds()) if isinstance(duration, timedelta) else int(duration)


def foreign_of(attachment: Attachment | None) -> tuple[Foreign, ...]:
    """A document, an audio file or a photo is content the person brought, not their words: it
    taints. Only a voice note is theirs."""
    if attachment is None:
        return ()
    if attachment.kind is AttachmentKind.DOCUMENT:
        name = attachment.file_name or "a file"
        return (Foreign(ForeignKind.DOCUMENT, f"a document you sent: {name}"),)
    if attachment.kind is AttachmentKind.AUDIO:
        name = attachment.file_name or "audio"
        return (Foreign(ForeignKind.AUDIO, f"an audio file you sent: {name}"),)
    if attachment.kind is AttachmentKind.PHOTO:
        return (Foreign(ForeignKind.PHOTO, "a photo you sent"),)
    return ()
