"""The preview an interrupted turn left, taken over by its re-run when this process does not
stream (streaming switched off since): nothing is previewed, but the answer still replaces that
message (the outbox edits it) and a re-run without an answer removes it, as a streamed re-run
would (`palui.delivery.preview`)."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

from palui.errors import ChannelError
from palui.logs import get_logger
from palui.ports.channel import Sending

log = get_logger("palui.delivery")

REPLACED = "(replaced below)"  # a left preview that could not be deleted, as the outbox says it


class LeftPreview:
    """A `ReplyStream` that shows nothing itself: it only carries the adopted preview."""

    def __init__(self, channel: Sending, chat_id: int, message_id: int) -> None:
        self._channel = channel
        self._chat_id = chat_id
        self._message_id = message_id
        self._gone = False

    @property
    def message_ids(self) -> tuple[int, ...]:
        return ()

    @property
    def preview_message_id(self) -> int | None:
        return None if self._gone else self._message_id

    @property
    def adopted(self) -> bool:
        return True

    def watch_preview(
        self,
        on_preview: Callable[[int], Awaitable[None]],
        on_sending: Callable[[str], Awaitable[None]] | None = None,
        guard: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        return None  # no preview of its own is ever sent

    def adopt(self, message_id: int) -> None:
        self._message_id = message_id

    async def push(self, delta: str) -> None:
        return None

    async def finish(self, final_text: str) -> None:
        raise RuntimeError("the outbox delivers the answer into a left preview (close, then end)")

    async def close(self) -> None:
        return None  # the reply's outbox row names the preview; the outbox edits it

    async def abort(self, note: str | None = None) -> None:
        await self.discard()  # it shows an earlier run's words, not this one's

    async def discard(self) -> None:
        """No answer will fill it: delete it, or else say it was replaced. Best effort."""
        if self._gone:
            return
        self._gone = True
        try:
            await self._channel.delete_message(self._chat_id, self._message_id)
        except ChannelError as exc:
            log.warning("left_preview_not_deleted", error=str(exc))
            [part] = self._channel.render(REPLACED)
            with contextlib.suppress(ChannelError):
                await self._channel.edit_part(self._chat_id, self._message_id, part)
