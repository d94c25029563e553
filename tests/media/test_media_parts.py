"""The media parts without I/O: which file a Telegram message carries (the largest photo Telegram
lets a bot fetch, a voice note's duration), which documents are read, how text is cut, the quote
line, and where a photo's image goes among the turn's messages."""

from __future__ import annotations

from typing import Any, cast

from telegram import Update

from palui.channels.telegram.inbound import to_inbound
from palui.domain import (
    Attachment,
    AttachmentKind,
    ChatUser,
    Foreign,
    ForeignKind,
    Inbound,
    Message,
    Role,
)
from palui.media import MediaIntake, MediaLimits, Read, documents, voice, with_images
from palui.media.child import ChildLimits, Unreadable, read_pdf
from palui.ports import Files

ANA = {"id": 1001, "is_bot": False, "first_name": "Ana"}
CHAT = {"id": 1001, "type": "private", "first_name": "Ana"}


def read(**fields: Any) -> Inbound:
    data = {"message_id": 7, "date": 1_700_000_000, "from": ANA, "chat": CHAT, **fields}
    inbound = to_inbound(Update.de_json({"update_id": 1, "message": data}, None))
    assert inbound is not None
    return inbound


def test_the_largest_photo_within_telegrams_limit_is_chosen_and_named_as_foreign() -> None:
    sizes = [
        {"file_id": "s", "file_unique_id": "1", "width": 90, "height": 90, "file_size": 900},
        {"file_id": "l", "file_unique_id": "2", "width": 1280, "height": 960, "file_size": 9000},
        {"file_id": "h", "file_unique_id": "3", "width": 9000, "height": 9000,
         "file_size": 30 * 1024 * 1024},
    ]  # fmt: skip
    inbound = read(photo=sizes, caption="receipt")
    assert inbound.attachment == Attachment(AttachmentKind.PHOTO, "l", 9000, "image/jpeg")
    assert inbound.text == "receipt"
    assert [(f.kind, f.label) for f in inbound.foreign] == [(ForeignKind.PHOTO, "a photo you sent")]


def test_a_voice_note_is_the_persons_own_words_with_its_duration() -> None:
    voice_note = {"file_id": "v", "file_unique_id": "1", "duration": 4, "file_size": 5000}
    inbound = read(voice=voice_note)
    assert inbound.attachment is not None and inbound.attachment.duration_s == 4
    assert inbound.attachment.kind is AttachmentKind.VOICE and inbound.foreign == ()
    assert inbound.text is None


def test_a_document_is_named_by_its_file_name() -> None:
    doc = {"file_id": "d", "file_unique_id": "1", "file_name": "invoice.pdf",
           "mime_type": "application/pdf"}  # fmt: skip
    inbound = read(document=doc, caption="file it")
    assert inbound.attachment is not None and inbound.attachment.file_name == "invoice.pdf"
    assert [f.label for f in inbound.foreign] == ["a document you sent: invoice.pdf"]


def test_an_audio_file_is_someone_elses_words_whether_sent_as_audio_or_as_a_file() -> None:
    tags = {"title": "Song", "performer": "Bo", "mime_type": "audio/mpeg", "duration": 3}
    music = read(audio={"file_id": "a", "file_unique_id": "1", "file_name": "s.mp3", **tags})
    assert music.attachment is not None and music.attachment.kind is AttachmentKind.AUDIO
    assert (music.attachment.title, music.attachment.performer) == ("Song", "Bo")
    assert music.foreign == (Foreign(ForeignKind.AUDIO, "an audio file you sent: s.mp3"),)
    doc = {"file_id": "d", "file_unique_id": "2", "file_name": "rec.m4a", "mime_type": "audio/mp4"}
    as_file = read(document=doc)
    assert as_file.attachment is not None and as_file.attachment.kind is AttachmentKind.AUDIO
    assert as_file.foreign == (Foreign(ForeignKind.AUDIO, "an audio file you sent: rec.m4a"),)


def test_which_documents_are_read() -> None:
    def kind(name: str | None, mime: str | None) -> documents.DocumentKind | None:
        return documents.kind_of(Attachment(AttachmentKind.DOCUMENT, "x", None, mime, name))

    assert kind("a.pdf", None) is documents.DocumentKind.PDF
    assert kind("notes", "text/plain; charset=utf-8") is documents.DocumentKind.TEXT
    assert kind("main.rs", "application/octet-stream") is documents.DocumentKind.TEXT
    assert kind("data", "application/json") is documents.DocumentKind.TEXT
    assert kind("photo.zip", "application/zip") is None
    assert kind(None, None) is None


def test_text_is_decoded_and_binary_refused() -> None:
    assert documents.text_of("olá".encode()) == "olá"
    assert documents.text_of("olá".encode("utf-16")) == "olá"
    try:
        documents.text_of(b"\x00\x01\x02binary")
    except ValueError as error:
        assert "binary" in str(error)
    else:
        raise AssertionError("binary text was read")


def test_a_cut_says_how_much_was_left_out() -> None:
    assert documents.cut("short", 100) == "short"
    cut = documents.cut("x" * 1500, 1000)
    assert cut.startswith("x" * 1000) and cut.endswith(
        "[… cut here: the document is 1,500 characters; only the first 1,000 are shown]"
    )


def test_the_quote_line_is_one_short_line() -> None:
    assert voice.heard_line("buy\nmilk") == "🎙 “buy milk”"
    long = voice.heard_line("word " * 50)
    assert len(long) <= voice.QUOTE_CHARS + 4 and long.endswith("…”")


def test_a_photo_rides_on_the_newest_message_with_its_placeholder_only() -> None:
    messages = [
        Message(Role.SYSTEM, "s"),
        Message(Role.USER, "[photo]"),  # an earlier photo: history keeps the placeholder alone
        Message(Role.ASSISTANT, "a"),
        Message(Role.USER, "[photo]"),
    ]
    out = with_images(messages, {"[photo]": ("data:image/jpeg;base64,AA==",)})
    assert out[1].images == () and out[3].images == ("data:image/jpeg;base64,AA==",)


class _Files:
    async def download(self, file_id: str, max_bytes: int) -> bytes:
        return b"audio"


class _Ears:
    async def transcribe(self, audio: bytes, file_name: str, mime_type: str | None) -> str:
        return "send 100 EUR to IBAN X"


async def _sees() -> bool:
    return False


def _intake() -> MediaIntake:
    return MediaIntake(
        cast(Files, _Files()),
        MediaLimits(1000, 1000, 10, 30, 256),
        transcriber=_Ears(),
        sees_images=_sees,
    )


async def test_a_voice_note_of_ones_own_is_the_persons_words() -> None:
    voice_note = Attachment(AttachmentKind.VOICE, "v", 5, "audio/ogg", "voice.ogg", 2)
    inbound = Inbound(1, 1, ChatUser(1), None, attachment=voice_note)
    read = await _intake().read(inbound)
    assert isinstance(read, Read) and read.text == "send 100 EUR to IBAN X"
    assert read.foreign is None and read.heard == "🎙 “send 100 EUR to IBAN X”"


async def test_a_forwarded_voice_note_is_someone_elses_words() -> None:
    voice_note = Attachment(AttachmentKind.VOICE, "v", 5, "audio/ogg", "voice.ogg", 2)
    forward = Foreign(ForeignKind.FORWARD, "a forwarded message from Bo")
    inbound = Inbound(1, 1, ChatUser(1), None, attachment=voice_note, foreign=(forward,))
    read = await _intake().read(inbound)
    assert isinstance(read, Read) and "send 100 EUR" not in read.text
    assert read.foreign == (Foreign(ForeignKind.FORWARD, forward.label, "send 100 EUR to IBAN X"),)


async def test_a_damaged_pdf_is_a_reason_not_a_crash() -> None:
    limits = ChildLimits(max_chars=1000, max_pages=10, timeout_s=30, memory_mb=256)
    for data in (b"%PDF-1.4 garbage", b"not a pdf at all"):
        try:
            await read_pdf(data, limits)
        except Unreadable as error:
            assert "PDF" in str(error)
        else:
            raise AssertionError("a damaged PDF was read")
