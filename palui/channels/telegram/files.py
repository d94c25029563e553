"""Files people send, fetched from the Bot API: `getFile`, then the file endpoint under the same
`PALUI_TELEGRAM_API_URL` (`<api>/file/bot<token>/<file_path>`), so a local Bot API server works.

The size is checked where it is known: the message's own size before any request (palui.media),
the size `getFile` reports before the download, and the bytes fetched after it. Telegram itself
refuses files past 20 MB (`getFile`: "file is too big").
"""

from __future__ import annotations

from telegram import Bot
from telegram.error import BadRequest, TelegramError

from palui.config.sections import TELEGRAM_DOWNLOAD_LIMIT
from palui.errors import ChannelError, FileTooLarge


async def download(bot: Bot, file_id: str, max_bytes: int) -> bytes:
    """The file's bytes; `FileTooLarge` past `max_bytes` (or Telegram's 20 MB), `ChannelError`
    when Telegram can't give it."""
    limit = min(max_bytes, TELEGRAM_DOWNLOAD_LIMIT)
    try:
        file = await bot.get_file(file_id)
    except BadRequest as exc:
        if "too big" in exc.message.lower():
            raise FileTooLarge(None, limit) from None
        raise ChannelError(f"Telegram can't give the file: {exc.message}") from None
    except TelegramError as exc:
        raise ChannelError(f"Telegram can't give the file: {exc.message}") from None
    if file.file_size is not None and file.file_size > limit:
        raise FileTooLarge(file.file_size, limit)
    try:
        data = bytes(await file.download_as_bytearray())
    except TelegramError as exc:
        raise ChannelError(f"the file couldn't be downloaded: {exc.message}") from None
    if len(data) > limit:
        raise FileTooLarge(len(data), limit)
    return data
