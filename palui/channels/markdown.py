"""Render the Markdown a model writes, through a renderer that decides what each element becomes.

Deliberately forgiving: any input renders, and a marker without its partner stays literal text,
so a renderer that only emits what it is handed produces balanced output.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Renderer", "closes_fence", "dedent", "fence_opener", "render"]

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
class Renderer:
    """What each Markdown element becomes; `render` hands it raw text to escape."""

    escape: Callable[[str], str]
    wrap: Callable[[str, str], str]  # (tag: b, i, s or code; rendered content)
    code_block: Callable[[str, str | None], str]  # (raw body, language)
    link: Callable[[str, str], str]  # (rendered label, raw url)
    quote: Callable[[str], str]  # rendered lines


# --- blocks -------------------------------------------------------------------------------


def fence_opener(line: str) -> tuple[str, str | None] | None:
    """(fence, language) if the line opens a fenced code block."""
    match = _FENCE_OPEN.match(line)
    if match is None or (match["fence"][0] == "`" and "`" in match["info"]):
        return None
    words = match["info"].split()
    language = words[0] if words and _LANGUAGE.fullmatch(words[0]) else None
    return match["fence"], language


def closes_fence(line: str, fence: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= len(fence) and stripped == fence[0] * len(stripped)


def render(markdown: str, r: Renderer) -> str:
    lines = markdown.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        opener = fence_opener(lines[i])
        if opener is not None:
            fence, language = opener
            indent = len(lines[i]) - len(lines[i].lstrip())
            body: list[str] = []
            i += 1
            while i < len(lines) and not closes_fence(lines[i], fence):
                body.append(dedent(lines[i], indent))
                i += 1
            i += 1  # the closing fence, or past the end when it was never closed
            out.append(r.code_block("\n".join(body), language))
        elif _QUOTE.match(lines[i]):
            quoted: list[str] = []
            while (
                i < len(lines) and (match := _QUOTE.match(lines[i])) and not fence_opener(lines[i])
            ):
                quoted.append(_render_line(match["text"], r))
                i += 1
            out.append(r.quote("\n".join(quoted)))
        else:
            out.append(_render_line(lines[i], r))
            i += 1
    return "\n".join(out)


def dedent(line: str, indent: int) -> str:
    removable = len(line) - len(line.lstrip(" \t"))
    return line[min(indent, removable) :]


def _render_line(line: str, r: Renderer) -> str:
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


def _inline(text: str, r: Renderer, *, links: bool = True) -> str:
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


def _render_link(label: str, url: str, r: Renderer) -> str:
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


def _resolve(items: list[str | _Delimiter], r: Renderer) -> str:
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
