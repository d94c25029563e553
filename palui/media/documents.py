"""Documents: text-like files and PDFs become text in the turn, cut at `[media]
max_document_chars` with a marker (a PDF also at `max_document_pages`, read in a child process
under a time and memory limit: `palui.media.child`). Other types get a reply that says what is
read.

The text is someone else's words (DESIGN §1.1): it travels as the message's `Foreign` document
item (`palui.channels.telegram.attachments` names it), which the turn fences as data, stores as
untrusted history and taints the turn with (`palui.turns.foreign`). Its file name is the
sender's choice too: it goes only into that item's label, never into the person's row, which
holds only their caption.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import PurePosixPath

from palui.domain import Attachment
from palui.media.child import PdfText


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
SENT = "I sent you a document."  # the person's row for a document sent without a caption


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


def text_of(data: bytes) -> str:
    """A text file's text (a PDF is read in a child process: `palui.media.child`). Raises
    ValueError for a file that is not text."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    if b"\x00" in data[:4096]:
        raise ValueError("it looks like a binary file, not text")
    return data.decode("utf-8-sig", errors="replace")


def cut(text: str, max_chars: int) -> str:
    """The document's text cut at `max_chars`, with a marker saying how much was left out."""
    shown = text[:max_chars]
    if len(shown) == len(text):
        return text
    return (
        f"{shown}\n[… cut here: the document is {len(text):,} characters; "
        f"only the first {len(shown):,} are shown]"
    )


def pdf_shown(pdf: PdfText) -> str:
    """A PDF's text as the child read it, marked where it stopped: at `max_chars` (the rest was
    never extracted, so its length is unknown) or at `max_pages`."""
    if pdf.more:
        return (
            f"{pdf.text}\n[… cut here: only the first {len(pdf.text):,} characters are shown; "
            f"the document has {pdf.pages:,} pages]"
        )
    if pdf.read < pdf.pages:
        return (
            f"{pdf.text}\n[… cut here: the document has {pdf.pages:,} pages; only the first "
            f"{pdf.read:,} were read]"
        )
    return pdf.text


def said_with(caption: str | None) -> str:
    """The person's own words with the document: their caption, else that they sent one. Never
    its file name: whoever made the file chose that (DESIGN §1.4: a name in the person's words
    is a destination they gave)."""
    return (caption or "").strip() or SENT
