"""Documents: text-like files and PDFs become text in the turn, cut at `[media]
max_document_chars` with a marker. Other types get a reply that says what is read.

The text is someone else's words (DESIGN §1.1): it travels as the message's `Foreign` document
item (`palui.channels.telegram.attachments` names it), which the turn fences as data, stores as
untrusted history and taints the turn with (`palui.turns.foreign`); the person's row holds only
their caption.
"""

from __future__ import annotations

import io
from enum import StrEnum
from pathlib import PurePosixPath

from palui.domain import Attachment


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


TEXT_EXTENSIONS = _words(
    ".txt .md .markdown .rst .csv .tsv .json .jsonl .yaml .yml .toml .ini .cfg .conf .log "
    ".xml .html .htm .css .py .js .mjs .ts .tsx .jsx .java .kt .go .rs .c .h .cc .cpp .hpp "
    ".cs .rb .php .swift .sh .bash .zsh .sql .r .lua .pl .scala .ex .exs .hs .ml .vue "
    ".svelte .tex .diff .patch .properties .gradle .dockerfile .srt .vtt"
)
TEXT_MIMES = _words(
    "application/json application/xml application/x-yaml application/yaml "
    "application/toml application/javascript application/x-javascript application/x-sh "
    "application/x-python application/sql application/x-httpd-php application/ld+json "
    "application/x-ndjson"
)
PDF_MIME = "application/pdf"

UNSUPPORTED = (
    "I can't read {name} ({kind}). I read text files (txt, md, csv, json, source code) and "
    "PDFs; for anything else, paste the part you need as text."
)
NO_TEXT = "I found no text in {name}: a scanned PDF is images, and I can't read those."
EMPTY = "{name} is empty: there is nothing in it for me to read."
UNREADABLE = "I couldn't read {name}: {reason}."


class DocumentKind(StrEnum):
    TEXT = "text"
    PDF = "pdf"


def kind_of(attachment: Attachment) -> DocumentKind | None:
    """TEXT, PDF, or None for a type Palui doesn't read (by MIME type, then file extension)."""
    mime = (attachment.mime_type or "").split(";")[0].strip().lower()
    suffix = PurePosixPath((attachment.file_name or "").lower()).suffix
    if mime == PDF_MIME or suffix == ".pdf":
        return DocumentKind.PDF
    if mime.startswith("text/") or mime in TEXT_MIMES or suffix in TEXT_EXTENSIONS:
        return DocumentKind.TEXT
    return None


def display_name(attachment: Attachment) -> str:
    return attachment.file_name or "that file"


def unsupported_note(attachment: Attachment) -> str:
    kind = attachment.mime_type or PurePosixPath(attachment.file_name or "").suffix or "unknown"
    return UNSUPPORTED.format(name=display_name(attachment), kind=kind)


def text_of(data: bytes, kind: DocumentKind) -> str:
    """The document's text (CPU-bound for a PDF: run it in a thread). Raises ValueError."""
    if kind is DocumentKind.PDF:
        return _pdf_text(data)
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    if b"\x00" in data[:4096]:
        raise ValueError("it looks like a binary file, not text")
    return data.decode("utf-8-sig", errors="replace")


def _pdf_text(data: bytes) -> str:
    from pypdf import PdfReader  # imported when a PDF arrives: most turns never need it
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ValueError("the PDF is password-protected")
        pages = [page.extract_text() or "" for page in reader.pages]
    except PdfReadError as exc:
        raise ValueError(f"it is not a PDF I can open ({exc})") from None
    except (KeyError, IndexError, TypeError, AttributeError, RecursionError) as exc:
        # pypdf meets a malformed file with whatever its parser tripped on.
        raise ValueError(f"the PDF is damaged ({type(exc).__name__})") from None
    return "\n\n".join(f"[page {n}]\n{text.strip()}" for n, text in enumerate(pages, 1) if text)


def cut(text: str, max_chars: int) -> str:
    """The document's text cut at `max_chars`, with a marker saying how much was left out."""
    shown = text[:max_chars]
    if len(shown) == len(text):
        return text
    return (
        f"{shown}\n[… cut here: the document is {len(text):,} characters; "
        f"only the first {len(shown):,} are shown]"
    )


def said_with(attachment: Attachment, caption: str | None) -> str:
    """The person's own words with the document: the caption, else that they sent it."""
    return (caption or "").strip() or f"I sent you a document: {display_name(attachment)}."
