"""Turn the Markdown a model writes into Telegram-safe HTML, split to Telegram's size limit.

Telegram rejects a whole message for one stray `<` or unclosed tag, so all text is escaped and
the only tags emitted are ones opened and closed here: the output is balanced by construction.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from palui.channels.markdown import Renderer, closes_fence, dedent, fence_opener, render
from palui.ports.channel import Part

__all__ = [
    "TELEGRAM_TEXT_LIMIT",
    "split_for_telegram",
    "to_plain_text",
    "to_telegram_html",
]

TELEGRAM_TEXT_LIMIT = 4096
_MIN_LIMIT = 128  # room for `<pre><code class="language-…">` around at least a few characters


def _escape_html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _html_code_block(body: str, language: str | None) -> str:
    if not body:
        return ""
    if language:
        return f'<pre><code class="language-{language}">{_escape_html(body)}</code></pre>'
    return f"<pre>{_escape_html(body)}</pre>"


def _html_link(label: str, url: str) -> str:
    href = _escape_html(url).replace('"', "&quot;")
    return f'<a href="{href}">{label}</a>'


_HTML = Renderer(
    escape=_escape_html,
    wrap=lambda tag, content: f"<{tag}>{content}</{tag}>" if content else "",
    code_block=_html_code_block,
    link=_html_link,
    quote=lambda content: f"<blockquote>{content}</blockquote>" if content.strip() else "",
)
_PLAIN = Renderer(
    escape=lambda text: text,
    wrap=lambda _tag, content: content,
    code_block=lambda body, _language: body,
    link=lambda label, url: label if label == url else f"{label} ({url})",
    quote=lambda content: content,
)


def to_telegram_html(markdown: str) -> str:
    """Render Markdown as HTML that Telegram's parse_mode=HTML accepts; never raises."""
    return render(markdown, _HTML)


def to_plain_text(markdown: str) -> str:
    """The same text with the Markdown markers dropped, for sending without parse_mode."""
    return render(markdown, _PLAIN)


# --- splitting ----------------------------------------------------------------------------


def telegram_length(text: str) -> int:
    """Telegram counts UTF-16 code units: an emoji outside the BMP counts twice."""
    return len(text.encode("utf-16-le")) // 2


def split_for_telegram(markdown: str, limit: int = TELEGRAM_TEXT_LIMIT) -> list[Part]:
    """Split Markdown into messages whose HTML and plain text each fit in `limit` characters.

    Paragraphs are kept whole where possible, then lines, sentences, words; a code block that
    has to be split is closed and reopened so every chunk renders on its own.
    """
    if limit < _MIN_LIMIT:
        raise ValueError(f"limit must be at least {_MIN_LIMIT}, got {limit}")

    def fits(piece: str) -> bool:
        piece = piece.strip()
        if len(piece) > 8 * limit:  # no Markdown shrinks that much; saves rendering huge text
            return False
        return (
            telegram_length(to_telegram_html(piece)) <= limit
            and telegram_length(to_plain_text(piece)) <= limit
        )

    pieces: list[str] = []
    for block in _blocks(markdown):
        if fits(block):
            pieces.append(block)
        elif _is_code_block(block):
            pieces.extend(_split_code(block, fits))
        else:
            pieces.extend(_split(block, fits, 0))
    chunks = [
        Part(to_telegram_html(p.strip()), to_plain_text(p.strip())) for p in _pack(pieces, fits)
    ]
    return [chunk for chunk in chunks if chunk.plain.strip()]


def _blocks(markdown: str) -> list[str]:
    """Paragraphs and whole code blocks; concatenated they give back `markdown`."""
    blocks: list[str] = []
    current: list[str] = []
    fence: str | None = None
    for line in markdown.splitlines(keepends=True):
        if fence is not None:
            current.append(line)
            if closes_fence(line, fence):
                blocks.append("".join(current))
                current, fence = [], None
            continue
        opener = fence_opener(line.rstrip("\r\n"))
        starts_paragraph = bool(line.strip()) and bool(current) and not current[-1].strip()
        if (opener or starts_paragraph) and "".join(current).strip():
            blocks.append("".join(current))
            current = []
        current.append(line)
        if opener:
            fence = opener[0]
    if current:
        blocks.append("".join(current))
    return blocks


def _split_lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _split_after(pattern: str) -> Callable[[str], list[str]]:
    compiled = re.compile(pattern)

    def split(text: str) -> list[str]:
        cuts = [m.end() for m in compiled.finditer(text) if 0 < m.end() < len(text)]
        return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]

    return split


_SPLITTERS = (_split_lines, _split_after(r"(?<=[.!?…])\s+"), _split_after(r"\s+"))


def _split(text: str, fits: Callable[[str], bool], level: int) -> list[str]:
    """Pieces that each fit and concatenate back to `text`, cut at the coarsest level that works."""
    if fits(text):
        return [text]
    if level == len(_SPLITTERS):
        return _hard_split(text, fits)
    segments = _SPLITTERS[level](text)
    if len(segments) <= 1:
        return _split(text, fits, level + 1)
    return _pack([p for s in segments for p in _split(s, fits, level + 1)], fits)


def _hard_split(text: str, fits: Callable[[str], bool]) -> list[str]:
    pieces: list[str] = []
    while text:
        lo, hi = 1, len(text)  # the longest prefix that fits; at least one character
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if fits(text[:mid]) else (lo, mid - 1)
        pieces.append(text[:lo])
        text = text[lo:]
    return pieces


def _pack(pieces: list[str], fits: Callable[[str], bool]) -> list[str]:
    """Join neighbouring pieces greedily while the join still fits (each piece fits alone)."""
    packed: list[str] = []
    start = 0
    while start < len(pieces):
        left = len(pieces) - start
        good, bad = 1, left + 1  # joining `good` pieces fits; joining `bad` does not
        step = 1
        while good < left:  # gallop, then bisect: few renders of long joins
            probe = min(good + step, left)
            if not fits("".join(pieces[start : start + probe])):
                bad = probe
                break
            good, step = probe, step * 2
        while bad - good > 1:
            mid = (good + bad) // 2
            good, bad = (mid, bad) if fits("".join(pieces[start : start + mid])) else (good, mid)
        packed.append("".join(pieces[start : start + good]))
        start += good
    return packed


def _split_code(block: str, fits: Callable[[str], bool]) -> list[str]:
    lines = block.strip("\r\n").splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    first = lines[0]
    opener = fence_opener(first)
    assert opener is not None
    fence = opener[0]
    body_lines = lines[1:]
    if body_lines and closes_fence(body_lines[-1], fence):
        body_lines.pop()
    indent = len(first) - len(first.lstrip(" \t"))

    def wrap(body: str) -> str:
        return f"{first.lstrip()}\n{body.rstrip(chr(10))}\n{fence}\n"

    body = "\n".join(dedent(line, indent) for line in body_lines)
    return [wrap(p) for p in _split(body, lambda p: fits(wrap(p)), 0)]


def _is_code_block(block: str) -> bool:
    first = next((line for line in block.splitlines() if line.strip()), "")
    return fence_opener(first) is not None
