"""Files people send."""

from __future__ import annotations

from typing import Protocol


class Files(Protocol):
    async def download(self, file_id: str, max_bytes: int) -> bytes:
        """A file a person sent (`Attachment.file_id`). Raises `FileTooLarge` past `max_bytes`
        (or the channel's own limit), `ChannelError` when it can't be fetched or the channel
        holds no files (the console)."""
        ...
