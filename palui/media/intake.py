"""What a message's file becomes for the chat turn, or the reply that says why it can't be read.

Every refusal is decided before anything costly where it can be: a voice note without a
transcription model, a photo for a model without vision, a document of a type Palui doesn't
read and a file the channel says is too large are refused without a download.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from palui.domain import Attachment, AttachmentKind, Foreign, ForeignKind, Inbound
from palui.errors import ChannelError, FileTooLarge, ModelError
from palui.logs import get_logger
from palui.media import documents, photos, voice
from palui.media.child import ChildLimits, Unreadable, read_pdf
from palui.ports import Files, Transcriber

log = get_logger("palui.media")

TOO_LARGE = (
    "That file is too large for me ({size}; I read files up to {limit}). "
    "Send a smaller one, or paste the part you need as text."
)
NOT_FETCHED = "I couldn't fetch that file ({reason}). Try sending it again."


@dataclass(frozen=True, slots=True)
class MediaLimits:
    """`[media]` (palui.config.sections.MediaSettings says what each is)."""

    max_bytes: int  # never past the channel's own limit
    max_document_chars: int
    max_document_pages: int
    document_timeout_s: float
    document_memory_mb: int

    def child(self) -> ChildLimits:
        return ChildLimits(
            self.max_document_chars,
            self.max_document_pages,
            self.document_timeout_s,
            self.document_memory_mb,
        )


@dataclass(frozen=True, slots=True)
class Read:
    """A file made into the turn's message."""

    text: str  # the person's message as the turn and the history hold it
    images: tuple[str, ...] = ()  # data URLs for this turn's model calls only (photos)
    heard: str | None = None  # a voice note's transcript, quoted back before the answer
    # The message's someone-else's-words with what the file said filled in (a document's text);
    # None: as the message had them.
    foreign: tuple[Foreign, ...] | None = None


@dataclass(frozen=True, slots=True)
class Refused:
    """The file can't be read: this reply is sent instead, and no turn runs for it."""

    note: str


class MediaIntake:
    def __init__(
        self,
        channel: Files,
        limits: MediaLimits,
        *,
        transcriber: Transcriber | None,
        sees_images: Callable[[], Awaitable[bool]],
    ) -> None:
        self._channel = channel
        self._limits = limits
        self._transcriber = transcriber
        self._sees_images = sees_images

    async def read(self, inbound: Inbound) -> Read | Refused:
        attachment = inbound.attachment
        assert attachment is not None
        caption = inbound.text
        limit = self._limits.max_bytes
        if attachment.file_size is not None and attachment.file_size > limit:
            return Refused(_too_large(attachment.file_size, limit))
        kind = attachment.kind
        document_kind = documents.kind_of(attachment) if kind is AttachmentKind.DOCUMENT else None
        if kind in (AttachmentKind.VOICE, AttachmentKind.AUDIO) and self._transcriber is None:
            return Refused(voice.NO_TRANSCRIBER)
        if kind is AttachmentKind.PHOTO and not await self._sees_images():
            return Refused(photos.NO_VISION)
        if kind is AttachmentKind.DOCUMENT and document_kind is None:
            return Refused(documents.unsupported_note(attachment))
        try:
            data = await self._channel.download(attachment.file_id, limit)
        except FileTooLarge as error:
            return Refused(_too_large(error.size, limit))
        except ChannelError as error:
            log.warning("media_download_failed", kind=kind, error=str(error))
            return Refused(NOT_FETCHED.format(reason=error))
        if kind is AttachmentKind.PHOTO:
            url = photos.data_url(attachment, data)
            shown = _filled(inbound.foreign, ForeignKind.PHOTO, photos.ATTACHED)
            return Read(photos.placeholder(caption), (url,), foreign=shown)
        if document_kind is not None:
            return await self._document(inbound, attachment, document_kind, data)
        assert self._transcriber is not None
        return await self._voice(self._transcriber, inbound, attachment, data)

    async def _voice(
        self, transcriber: Transcriber, inbound: Inbound, attachment: Attachment, audio: bytes
    ) -> Read | Refused:
        try:
            transcript = await voice.transcribe(transcriber, attachment, audio)
        except ModelError as error:
            log.warning("transcription_failed", error=str(error))
            return Refused(voice.failed_note(error))
        if not transcript:
            return Refused(voice.SILENT)
        heard = voice.heard_line(transcript)
        caption = (inbound.text or "").strip()
        if attachment.kind is AttachmentKind.AUDIO:
            # An audio file: anyone's recording. Its words and tags are in its own item; the
            # person's row is their caption alone.
            words = voice.audio_words(attachment, transcript)
            shown = _filled(inbound.foreign, ForeignKind.AUDIO, words)
            return Read(caption or voice.AUDIO_SENT, heard=heard, foreign=shown)
        if any(item.kind is ForeignKind.FORWARD for item in inbound.foreign):
            # Someone else's voice: its words are the forward's, never the person's own.
            forward = _filled(inbound.foreign, ForeignKind.FORWARD, transcript)
            return Read(voice.FORWARDED, heard=heard, foreign=forward)
        return Read(f"{caption}\n\n{transcript}" if caption else transcript, heard=heard)

    async def _document(
        self,
        inbound: Inbound,
        attachment: Attachment,
        kind: documents.DocumentKind,
        data: bytes,
    ) -> Read | Refused:
        name = documents.display_name(attachment)
        try:
            if kind is documents.DocumentKind.PDF:
                pdf = await read_pdf(data, self._limits.child())
                text, shown = pdf.text, documents.pdf_shown(pdf)
            else:
                text = await asyncio.to_thread(documents.text_of, data)
                shown = documents.cut(text, self._limits.max_document_chars)
        except (ValueError, Unreadable) as error:
            return Refused(documents.UNREADABLE.format(name=name, reason=error))
        if not text.strip():
            empty = documents.NO_TEXT if kind is documents.DocumentKind.PDF else documents.EMPTY
            return Refused(empty.format(name=name))
        said = documents.said_with(inbound.text)
        return Read(said, foreign=_filled(inbound.foreign, ForeignKind.DOCUMENT, shown))


def _filled(items: tuple[Foreign, ...], kind: ForeignKind, text: str) -> tuple[Foreign, ...]:
    """`items` with the words of the file's own item (`kind`) filled in."""
    return tuple(
        Foreign(item.kind, item.label, text) if item.kind is kind and not item.text else item
        for item in items
    )


def _too_large(size: int | None, limit: int) -> str:
    shown = _megabytes(size) if size is not None else "more than that"
    return TOO_LARGE.format(size=shown, limit=_megabytes(limit))


def _megabytes(size: int) -> str:
    if size < 1024 * 1024:
        return f"{max(size // 1024, 1)} KB"
    return f"{size / (1024 * 1024):.1f} MB".replace(".0 MB", " MB")
