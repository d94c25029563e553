"""Show a model's answer growing as a native draft, then send the formatted answer once.

A draft (Telegram's `sendMessageDraft`, private chats only) is not a message: it animates in the
chat while the answer is written and vanishes when the answer is sent, or after ~30 s. So a
streamed answer costs ONE message (the final one, sent by the outbox) instead of a preview plus
an edit, and a turn killed mid-answer leaves nothing behind in the chat.

`DraftReply` knows nothing about Telegram: it is given `send_draft` and a `StreamingReply` (the
edited preview) to fall back to. It falls back, with the text so far, when a draft is refused
(`DraftRefused`: a group, an older Bot API, a chat Telegram won't draft in) and when it is to
take over a preview an interrupted turn left (`adopt`): that message must show this answer.

Drafts are paced by the same pacer as a preview (`palui.delivery.pacer`: at most one per
`min_interval_s`, after the same first hold, so an answer that is done at once makes no draft at
all), not by the sender's message slots: they are not messages, and the final answer must not
wait behind them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from palui.delivery.pacer import MIN_INTERVAL_S, Pacer
from palui.delivery.preview import StreamingReply, StreamState
from palui.errors import DraftRefused
from palui.logs import get_logger
from palui.ports.streaming import Guard, OnPreview, OnSending, SendDraft

__all__ = ["DraftReply"]

log = get_logger("palui.drafts")


class DraftReply:
    """One answer on its way into one private chat as a draft; one instance per answer.

    Implements `palui.ports.ReplyStream`. While drafting there is never a preview message, so
    `preview_message_id` is None and the outbox sends the answer as new messages."""

    def __init__(
        self,
        send_draft: SendDraft,
        fallback: StreamingReply,
        *,
        min_interval_s: float = MIN_INTERVAL_S,
        first_after_s: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self._send_draft = send_draft
        self._fallback = fallback
        self._drafting = True  # False: everything goes to the fallback
        self._drafts = 0
        self._state = StreamState.COLLECTING
        self._pacer = Pacer(
            self._show,
            lambda: self._drafts == 0,
            name="streaming-draft",
            min_interval_s=min_interval_s,
            first_after_s=first_after_s,
            clock=clock,
            sleep=sleep,
            failed="draft_failed",
        )

    @property
    def drafting(self) -> bool:
        """Whether the answer still streams as a draft (not yet fallen back to edits)."""
        return self._drafting

    @property
    def state(self) -> StreamState:
        return self._state if self._drafting else self._fallback.state

    @property
    def text(self) -> str:
        return self._pacer.text

    @property
    def message_ids(self) -> tuple[int, ...]:
        return self._fallback.message_ids

    @property
    def preview_message_id(self) -> int | None:
        return None if self._drafting else self._fallback.preview_message_id

    @property
    def adopted(self) -> bool:
        return self._fallback.adopted

    def watch_preview(
        self,
        on_preview: OnPreview,
        on_sending: OnSending | None = None,
        guard: Guard | None = None,
    ) -> None:
        # Only the fallback ever sends a preview.
        self._fallback.watch_preview(on_preview, on_sending, guard)

    def adopt(self, message_id: int) -> None:
        """A preview an interrupted turn left must show this answer: edit it, no draft."""
        if self._pacer.text or self._pacer.closing:
            raise RuntimeError("adopt a preview before the stream shows anything")
        self._drafting = False
        self._fallback.adopt(message_id)

    async def push(self, delta: str) -> None:
        if self._pacer.closing:
            return
        if not self._drafting:
            await self._fallback.push(delta)
            return
        self._pacer.add(delta)
        if self._pacer.text.strip():
            self._pacer.kick()

    async def finish(self, final_text: str) -> None:
        await self._pacer.stop()
        self._state = StreamState.FINISHED
        await self._fallback.finish(final_text)  # no preview: the answer goes out as new messages

    async def close(self) -> None:
        """Stop drafting; the outbox sends the answer (the draft vanishes when it arrives)."""
        if self._pacer.closing:
            return
        await self._pacer.stop()
        self._state = StreamState.FINISHED
        if not self._drafting:
            await self._fallback.close()

    async def abort(self, note: str | None = None) -> None:
        """Stop drafting. A draft leaves nothing behind: the turn's own reply says why."""
        if self._pacer.closing:
            return
        await self._pacer.stop()
        self._state = StreamState.ABORTED
        if not self._drafting:
            await self._fallback.abort(note)

    async def discard(self) -> None:
        if self._pacer.closing:
            return
        await self._pacer.stop()
        self._state = StreamState.ABORTED
        if not self._drafting:
            await self._fallback.discard()

    # -- the drafts (the pacer calls `_show`) -----------------------------------------------

    async def _show(self, text: str) -> bool:
        try:
            await self._send_draft(text)
        except DraftRefused as exc:
            log.info("draft_refused", error=str(exc))
            await self._fall_back()
            return False
        self._drafts += 1
        self._state = StreamState.PREVIEWING
        return True

    async def _fall_back(self) -> None:
        """Edits from now on: the preview starts from the text so far."""
        self._drafting = False
        if self._pacer.first_delta_at is not None:
            self._fallback.held_since(self._pacer.first_delta_at)  # the hold is over: no second
        if self._pacer.text and not self._pacer.closing:
            await self._fallback.push(self._pacer.text)
