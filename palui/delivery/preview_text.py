"""What a preview (or a draft) shows of an answer still being written: plain text, within one
Telegram message."""

from __future__ import annotations

from palui.channels.formatting import TELEGRAM_TEXT_LIMIT, telegram_length, to_plain_text

__all__ = ["MORE", "preview_text"]

MORE = " …"  # ends a preview that has more text than one message holds


def preview_text(markdown: str, suffix: str = "", limit: int = TELEGRAM_TEXT_LIMIT) -> str:
    """The plain text to show for `markdown` so far, `suffix` kept whole, within `limit`.

    Too long for one message: the beginning, cut after a word if one is near, and " …". The
    beginning, not the newest end, so what the person is reading does not move away; it is
    what the final answer's first message will show.
    """
    source = markdown[: 8 * limit]  # no Markdown shrinks that much; saves rendering huge text
    plain = to_plain_text(source).strip()
    if not plain:
        return ""
    if len(source) == len(markdown) and _utf16_len(plain + suffix) <= limit:
        return plain + suffix
    head = _fit(plain, limit - _utf16_len(MORE + suffix))
    space = max(head.rfind(" "), head.rfind("\n"))
    if space > len(head) * 3 // 4:
        head = head[:space]
    return _fit(head.rstrip() + MORE + suffix, limit)


_utf16_len = telegram_length


def _fit(text: str, limit: int) -> str:
    """The longest prefix of `text` (give or take one unit) within `limit` UTF-16 units."""
    head = text[: max(limit, 0)]
    while (excess := _utf16_len(head) - limit) > 0:
        head = head[: len(head) - (excess + 1) // 2]  # each character is one or two units
    return head
