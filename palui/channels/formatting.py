"""Turn the Markdown a model writes into Telegram-safe HTML, split to Telegram's size limit.

Telegram rejects a whole message for one stray `<` or unclosed tag, so all text is escaped and
the only tags emitted are ones opened and closed here: the output is balanced by construction.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "TELEGRAM_TEXT_LIMIT",
    "Chunk",
    "split_for_telegram",
    "to_plain_text",
    "to_telegram_html",
]

TELEGRAM_TEXT_LIMIT = 4096
_MIN_LIMIT = 128  # room for `<pre><code class="language-…">` around at least a few characters

_PUNCT = frozenset(string.punctuation)
_FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>.*?)[ \t]*$")
_LANGUAGE = re.compile(r"[A-Za-z0-9_+#.-]{1,32}")
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+(?P<text>.*?)(?:[ \t]+#+)?[ \t]*$")
_BULLET = re.compile(r"^(?P<indent>[ \t]*)[-*+][ \t]+(?P<text>.*)$")
_NUMBERED = re.compile(r"^(?P<indent>[ \t]*)(?P<number>\d{1,9}[.)])[ \t]+(?P<text>.*)$")
_RULE = re.compile(r"^[ \t]{0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_QUOTE = re.compile(r"^[ \t]{0,3}>[ \t]?(?P<text>.*)$")
_AUTOLINK = re.compile(r"<(?P<url>(?:https?|tg)://[^\s<>]+|mailto:[^\s<>]+)>")
# Bare URLs are left for Telegram to link; matching them keeps `_` and `*` inside them literal.
_BARE_URL = re.compile(r"(?:https?|tg)://[^\s<>]*[^\s<>*_~.,;:!?)'\"]")
_LINK_SCHEMES = ("http://", "https://", "tg://", "mailto:")


@dataclass(frozen=True)
class Chunk:
    """One Telegram message: `html` for parse_mode HTML, `plain` to send if the HTML is refused."""

    html: str
    plain: str


@dataclass(frozen=True)
class _Renderer:
    escape: Callable[[str], str]
    wrap: Callable[[str, str], str]  # (tag, rendered content)
    code_block: Callable[[str, str | None], str]  # (raw body, language)
    link: Callable[[str, str], str]  # (rendered label, raw url)
    quote: Callable[[str], str]


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


_HTML = _Renderer(
    escape=_escape_html,
    wrap=lambda tag, content: f"<{tag}>{content}</{tag}>" if content else "",
    code_block=_html_code_block,
    link=_html_link,
    quote=lambda content: f"<blockquote>{content}</blockquote>" if content.strip() else "",
)
_PLAIN = _Renderer(
    escape=lambda text: text,
    wrap=lambda _tag, content: content,
    code_block=lambda body, _language: body,
    link=lambda label, url: label if label == url else f"{label} ({url})",
    quote=lambda content: content,
)


def to_telegram_html(markdown: str) -> str:
    """Render Markdown as HTML that Telegram's parse_mode=HTML accepts; never raises."""
    return _render(markdown, _HTML)


def to_plain_text(markdown: str) -> str:
    """The same text with the Markdown markers dropped, for sending without parse_mode."""
    return _render(markdown, _PLAIN)


# --- blocks -------------------------------------------------------------------------------


def _fence_opener(line: str) -> tuple[str, str | None] | None:
    """(fence, language) if the line opens a fenced code block."""
    match = _FENCE_OPEN.match(line)
    if match is None or (match["fence"][0] == "`" and "`" in match["info"]):
        return None
    words = match["info"].split()
    language = words[0] if words and _LANGUAGE.fullmatch(words[0]) else None
    return match["fence"], language


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= len(fence) and stripped == fence[0] * len(stripped)


def _render(markdown: str, r: _Renderer) -> str:
    lines = markdown.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        opener = _fence_opener(lines[i])
        if opener is not None:
            fence, language = opener
            indent = len(lines[i]) - len(lines[i].lstrip())
            body: list[str] = []
            i += 1
            while i < len(lines) and not _closes(lines[i], fence):
                body.append(_dedent(lines[i], indent))
                i += 1
            i += 1  # the closing fence, or past the end when it was never closed
            out.append(r.code_block("\n".join(body), language))
        elif _QUOTE.match(lines[i]):
            quoted: list[str] = []
            while (
                i < len(lines) and (match := _QUOTE.match(lines[i])) and not _fence_opener(lines[i])
            ):
                quoted.append(_render_line(match["text"], r))
                i += 1
            out.append(r.quote("\n".join(quoted)))
        else:
            out.append(_render_line(lines[i], r))
            i += 1
    return "\n".join(out)


def _dedent(line: str, indent: int) -> str:
    removable = len(line) - len(line.lstrip(" \t"))
    return line[min(indent, removable) :]


def _render_line(line: str, r: _Renderer) -> str:
    if not line.strip():
        return ""
    if _RULE.match(line):
        return "———"
    if match := _HEADING.match(line):
        return r.wrap("b", _inline(match["text"], r))
    if match := _BULLET.match(line):
        return f"{match['indent']}• {_inline(match['text'], r)}"
    if match := _NUMBERED.match(line):
        return f"{match['indent']}{match['number']} {_inline(match['text'], r)}"
    return _inline(line, r)


# --- inline -------------------------------------------------------------------------------


@dataclass
class _Delimiter:
    char: str
    size: int
    can_open: bool
    can_close: bool


@dataclass
class _Opener:
    char: str
    size: int


_TAGS = {("*", 1): "i", ("_", 1): "i", ("*", 2): "b", ("_", 2): "b", ("~", 2): "s"}


def _inline(text: str, r: _Renderer, *, links: bool = True) -> str:
    items: list[str | _Delimiter] = []
    plain: list[str] = []

    def flush() -> None:
        if plain:
            items.append(r.escape("".join(plain)))
            plain.clear()

    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n and text[i + 1] in _PUNCT:
            plain.append(text[i + 1])
            i += 2
        elif c == "`":
            run = _run_length(text, i)
            close = _find_backtick_run(text, i + run, run)
            if close < 0:
                plain.append(c * run)
            else:
                flush()
                items.append(r.wrap("code", r.escape(_code_span(text[i + run : close]))))
            i = i + run if close < 0 else close + run
        elif c == "[" and links and (link := _match_link(text, i)):
            label, url, end = link
            flush()
            items.append(_render_link(label, url, r))
            i = end
        elif c == "<" and (auto := _AUTOLINK.match(text, i)):
            flush()
            items.append(r.link(r.escape(auto["url"]), auto["url"]))
            i = auto.end()
        elif (
            c in "htm"
            and (i == 0 or not text[i - 1].isalnum())
            and (bare := _BARE_URL.match(text, i))
        ):
            plain.append(bare.group())
            i = bare.end()
        elif c in "*_~":
            run = _run_length(text, i)
            flush()
            items.append(_delimiter(text, i, run))
            i += run
        else:
            plain.append(c)
            i += 1
    flush()
    return _resolve(items, r)


def _run_length(text: str, start: int) -> int:
    end = start
    while end < len(text) and text[end] == text[start]:
        end += 1
    return end - start


def _find_backtick_run(text: str, start: int, run: int) -> int:
    pos = start
    while (pos := text.find("`" * run, pos)) >= 0:
        if _run_length(text, pos) == run:
            return pos
        pos += _run_length(text, pos)
    return -1


def _code_span(content: str) -> str:
    if len(content) > 1 and content[0] == content[-1] == " " and content.strip():
        return content[1:-1]
    return content


def _match_link(text: str, start: int) -> tuple[str, str, int] | None:
    depth, i = 0, start
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        depth += {"[": 1, "]": -1}.get(text[i], 0)
        if depth == 0:
            break
        i += 1
    else:
        return None
    if i + 1 >= len(text) or text[i + 1] != "(":
        return None
    label, j, parens = text[start + 1 : i], i + 2, 1
    while j < len(text):
        parens += {"(": 1, ")": -1}.get(text[j], 0)
        if parens == 0:
            url, _, title = text[i + 2 : j].strip().partition(" ")
            title = title.strip()
            if not url or (title and not (title[0] == title[-1] and title[0] in "\"'")):
                return None  # spaces in the target: not a link after all
            return label, url, j + 1
        j += 1
    return None


def _render_link(label: str, url: str, r: _Renderer) -> str:
    rendered = _inline(label, r, links=False) if label.strip() else r.escape(url)
    if url.lower().startswith(_LINK_SCHEMES):
        return r.link(rendered, url)
    return f"{rendered} ({r.escape(url)})"


def _is_punct(c: str) -> bool:
    return c in _PUNCT or (not c.isalnum() and not c.isspace())


def _delimiter(text: str, start: int, run: int) -> _Delimiter:
    # CommonMark's flanking rules, which keep `2 * 3` and snake_case_words literal.
    before = text[start - 1] if start > 0 else " "
    after = text[start + run] if start + run < len(text) else " "
    left = not after.isspace() and (not _is_punct(after) or before.isspace() or _is_punct(before))
    right = not before.isspace() and (not _is_punct(before) or after.isspace() or _is_punct(after))
    char = text[start]
    if char == "_":
        return _Delimiter(
            char,
            run,
            left and (not right or _is_punct(before)),
            right and (not left or _is_punct(after)),
        )
    if char == "~" and run != 2:
        return _Delimiter(char, run, False, False)
    return _Delimiter(char, run, left, right)


def _resolve(items: list[str | _Delimiter], r: _Renderer) -> str:
    out: list[str | _Opener] = []
    stack: list[int] = []  # positions in `out` of openers still waiting for a closer

    def literal(part: str | _Opener) -> str:
        return part if isinstance(part, str) else r.escape(part.char * part.size)

    for item in items:
        if isinstance(item, str):
            out.append(item)
            continue
        remaining = item.size
        while item.can_close and remaining:
            same = [k for k, pos in enumerate(stack) if _char_at(out, pos) == item.char]
            if not same:
                break
            k = same[-1]
            opener = out[stack[k]]
            assert isinstance(opener, _Opener)
            if opener.size > remaining:
                break
            content = "".join(literal(part) for part in out[stack[k] + 1 :])
            out[stack[k] :] = [r.wrap(_TAGS[(opener.char, opener.size)], content)]
            del stack[k:]
            remaining -= opener.size
        if remaining and item.can_open:
            for size in _opener_sizes(item.char, remaining):
                stack.append(len(out))
                out.append(_Opener(item.char, size))
        elif remaining:
            out.append(r.escape(item.char * remaining))
    return "".join(literal(part) for part in out)


def _char_at(out: list[str | _Opener], pos: int) -> str:
    part = out[pos]
    return part.char if isinstance(part, _Opener) else ""


def _opener_sizes(char: str, run: int) -> list[int]:
    if char == "~":
        return [2] if run == 2 else []
    return [2] * (run // 2) + [1] * (run % 2)


# --- splitting ----------------------------------------------------------------------------


def split_for_telegram(markdown: str, limit: int = TELEGRAM_TEXT_LIMIT) -> list[Chunk]:
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
        return len(to_telegram_html(piece)) <= limit and len(to_plain_text(piece)) <= limit

    pieces: list[str] = []
    for block in _blocks(markdown):
        if fits(block):
            pieces.append(block)
        elif _fence_opener(block.strip("\r\n").split("\n", 1)[0]):
            pieces.extend(_split_code(block, fits))
        else:
            pieces.extend(_split(block, fits, 0))
    chunks = [
        Chunk(to_telegram_html(p.strip()), to_plain_text(p.strip())) for p in _pack(pieces, fits)
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
            if _closes(line, fence):
                blocks.append("".join(current))
                current, fence = [], None
            continue
        opener = _fence_opener(line.rstrip("\r\n"))
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
    """Join neighbouring pieces greedily while the join still fits."""
    packed: list[str] = []
    start = 0
    while start < len(pieces):
        good, step = 1, 1
        while start + good < len(pieces) and fits("".join(pieces[start : start + good + step])):
            good += step
            step *= 2
        bad = min(good + step, len(pieces) - start + 1)
        while bad - good > 1:  # the longest run that fits lies between good and bad
            mid = (good + bad) // 2
            good, bad = (mid, bad) if fits("".join(pieces[start : start + mid])) else (good, mid)
        packed.append("".join(pieces[start : start + good]))
        start += good
    return packed


def _split_code(block: str, fits: Callable[[str], bool]) -> list[str]:
    first, _, rest = block.strip("\r\n").partition("\n")
    opener = _fence_opener(first)
    assert opener is not None
    fence = opener[0]
    lines = rest.split("\n")
    if lines and _closes(lines[-1], fence):
        lines.pop()
    dedented_first = first.lstrip(" \t")

    def wrap(body: str) -> str:
        return f"{dedented_first}\n{body.rstrip(chr(10))}\n{fence}\n\n"

    body = "\n".join(_dedent(line, len(first) - len(dedented_first)) for line in lines)
    return [wrap(p) for p in _split(body, lambda p: fits(wrap(p)), 0)]
