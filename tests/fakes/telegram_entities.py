"""The Bot API's text rules, for the fake server: HTML entity parsing, lengths, keyboards.

Error texts follow what Telegram (tdlib's parser) answers, so code that matches on them in
production behaves the same against the fake.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "EntityError",
    "ParsedText",
    "command_entities",
    "parse_text",
    "utf16_len",
    "validate_reply_markup",
]

_TYPES = {
    "b": "bold",
    "strong": "bold",
    "i": "italic",
    "em": "italic",
    "u": "underline",
    "ins": "underline",
    "s": "strikethrough",
    "strike": "strikethrough",
    "del": "strikethrough",
    "a": "text_link",
    "code": "code",
    "pre": "pre",
    "blockquote": "blockquote",
    "tg-spoiler": "spoiler",
    "span": "spoiler",
    "tg-emoji": "custom_emoji",
}
_NAMED_ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}
_ENTITY = re.compile(r"&(#[xX][0-9a-fA-F]{1,6}|#[0-9]{1,7}|[a-zA-Z]{2,4});")
_ATTRIBUTE = re.compile(r"""\s*([a-zA-Z_-]+)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s>"']+))?""")
_BUTTON_ACTIONS = (
    "url",
    "callback_data",
    "web_app",
    "login_url",
    "switch_inline_query",
    "switch_inline_query_current_chat",
    "switch_inline_query_chosen_chat",
    "copy_text",
    "callback_game",
    "pay",
)
_COMMAND = re.compile(r"(?<![\w/])/[A-Za-z0-9_]{1,32}(?:@[A-Za-z0-9_]{3,32})?")


class EntityError(ValueError):
    """Telegram's "can't parse entities" (the text after the colon)."""


@dataclass(frozen=True)
class ParsedText:
    """Message text as Telegram stores it: entities parsed out, outer whitespace trimmed."""

    text: str
    entities: tuple[dict[str, Any], ...]


def utf16_len(text: str) -> int:
    """Telegram measures entity offsets and lengths in UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


def parse_text(source: str, parse_mode: str | None) -> ParsedText:
    """Parse `source` the way sendMessage does; raises EntityError or ValueError(parse_mode)."""
    mode = (parse_mode or "").lower()
    if mode == "html":
        text, spans = _parse_html(source)
    elif mode in ("", "markdown", "markdownv2"):
        # The fake doesn't model Markdown entities; Palui sends HTML or plain text.
        text, spans = source, []
    else:
        raise ValueError(parse_mode)
    return _trim(text, spans)


def _parse_html(source: str) -> tuple[str, list[tuple[int, int, dict[str, Any]]]]:
    out: list[str] = []
    length = 0  # code points in `out`
    stack: list[tuple[str, int, dict[str, Any]]] = []  # (tag, start, entity fields)
    spans: list[tuple[int, int, dict[str, Any]]] = []
    i = 0
    while i < len(source):
        c = source[i]
        if c == "&" and (m := _ENTITY.match(source, i)) and (decoded := _decode(m.group(1))):
            out.append(decoded)
            length += len(decoded)
            i = m.end()
        elif c == "<" and source.startswith("</", i):
            end = source.find(">", i)
            if end < 0:
                raise EntityError(f"Unclosed end tag at byte offset {_byte(source, i)}")
            name = source[i + 2 : end].strip().lower()
            if not stack:
                raise EntityError(f"Unexpected end tag at byte offset {_byte(source, i)}")
            tag, start, fields = stack.pop()
            if name != tag:
                raise EntityError(
                    f"Unmatched end tag at byte offset {_byte(source, i)}, "
                    f'expected "</{tag}>", found "</{name}>"'
                )
            _close(tag, start, length, fields, stack, spans)
            i = end + 1
        elif c == "<":
            i, tag, fields = _start_tag(source, i)
            stack.append((tag, length, fields))
        else:
            out.append(c)
            length += 1
            i += 1
    if stack:
        raise EntityError(f"Can't find end tag corresponding to start tag {stack[-1][0]}")
    return "".join(out), spans


def _start_tag(source: str, start: int) -> tuple[int, str, dict[str, Any]]:
    i = start + 1
    while i < len(source) and not source[i].isspace() and source[i] != ">":
        i += 1
    if i >= len(source):
        raise EntityError(f"Unclosed start tag at byte offset {_byte(source, start)}")
    tag = source[start + 1 : i].lower()
    if tag not in _TYPES:
        raise EntityError(f'Unsupported start tag "{tag}" at byte offset {_byte(source, start)}')
    attributes: dict[str, str] = {}
    while (m := _ATTRIBUTE.match(source, i)) and m.end() > i:
        value = m.group(2) or ""
        attributes[m.group(1).lower()] = value[1:-1] if value[:1] in "\"'" and value else value
        i = m.end()
    while i < len(source) and source[i].isspace():
        i += 1
    if i >= len(source) or source[i] != ">":
        raise EntityError(f"Unclosed start tag at byte offset {_byte(source, start)}")
    fields: dict[str, Any] = {"type": _TYPES[tag]}
    if tag == "span" and attributes.get("class") != "tg-spoiler":
        raise EntityError(
            f'Tag "span" must have class "tg-spoiler" at byte offset {_byte(source, start)}'
        )
    if tag == "a":
        fields["url"] = _unescape(attributes.get("href", ""))
    elif tag == "code" and attributes.get("class", "").startswith("language-"):
        fields["language"] = attributes["class"].removeprefix("language-")
    elif tag == "tg-emoji":
        fields["custom_emoji_id"] = attributes.get("emoji-id", "")
    elif tag == "blockquote" and "expandable" in attributes:
        fields["type"] = "expandable_blockquote"
    return i + 1, tag, fields


def _close(
    tag: str,
    start: int,
    end: int,
    fields: dict[str, Any],
    stack: list[tuple[str, int, dict[str, Any]]],
    spans: list[tuple[int, int, dict[str, Any]]],
) -> None:
    if end == start or (tag == "a" and not fields["url"]):
        return
    if tag == "code" and "language" in fields and stack and stack[-1][0] == "pre":
        stack[-1][2]["language"] = fields["language"]  # <pre><code class=…> is one pre entity
        return
    fields = {k: v for k, v in fields.items() if k != "language" or tag == "pre"}
    spans.append((start, end, fields))


def _decode(name: str) -> str | None:
    if name.startswith(("#x", "#X")):
        code = int(name[2:], 16)
    elif name.startswith("#"):
        code = int(name[1:])
    else:
        return _NAMED_ENTITIES.get(name)  # anything else stays literal text
    return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else None


def _unescape(text: str) -> str:
    return _ENTITY.sub(lambda m: _decode(m.group(1)) or m.group(0), text)


def _byte(source: str, index: int) -> int:
    return len(source[:index].encode("utf-8"))


def _trim(text: str, spans: list[tuple[int, int, dict[str, Any]]]) -> ParsedText:
    lead = len(text) - len(text.lstrip())
    trimmed = text.strip()
    entities = []
    for start, end, fields in sorted(spans, key=lambda s: (s[0], -s[1])):
        a = min(max(start - lead, 0), len(trimmed))
        b = min(max(end - lead, 0), len(trimmed))
        if b > a:
            offset = utf16_len(trimmed[:a])
            entities.append({**fields, "offset": offset, "length": utf16_len(trimmed[a:b])})
    ordered = sorted(entities, key=lambda e: (e["offset"], -e["length"]))
    return ParsedText(trimmed, tuple(ordered))


def command_entities(text: str) -> list[dict[str, Any]]:
    """The bot_command entities Telegram attaches to incoming text (PTB's CommandHandler needs
    them: it only sees a command when an entity starts at offset 0)."""
    return [
        {"type": "bot_command", "offset": utf16_len(text[: m.start()]), "length": utf16_len(m[0])}
        for m in _COMMAND.finditer(text)
    ]


def validate_reply_markup(markup: Any) -> str | None:
    """The Bad Request description for an invalid reply_markup, or None when it is fine."""
    if markup is None:
        return None
    if not isinstance(markup, dict):
        return "can't parse reply keyboard markup JSON object"
    if "inline_keyboard" not in markup:
        return None  # reply keyboards, remove_keyboard and force_reply are not checked
    rows = markup["inline_keyboard"]
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        return 'field "inline_keyboard" must be an Array of Arrays'
    for button in (b for row in rows for b in row):
        if not isinstance(button, dict) or not isinstance(button.get("text"), str):
            return 'can\'t parse inline keyboard button: Field "text" must be of type String'
        if not any(key in button for key in _BUTTON_ACTIONS):
            return (
                "can't parse inline keyboard button: Text buttons are unallowed in the inline "
                "keyboard"
            )
        data = button.get("callback_data")
        if data is not None and not 1 <= len(str(data).encode("utf-8")) <= 64:
            return "BUTTON_DATA_INVALID"
        if "url" in button and not str(button["url"]).strip():
            return "BUTTON_URL_INVALID"
    return None
