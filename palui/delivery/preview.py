"""Show a model's answer growing in one chat message, then replace it with the formatted answer.

`StreamingReply` knows nothing about Telegram: it is given `send` and `edit` callables (the
channel's `StreamFaces`, wrapped with its rate limiter and flood retries) and decides what to
show; when is the pacer's (`palui.delivery.pacer`, shared with drafts).

    stream = StreamingReply(send, edit)
    completion = await model.complete(messages, on_delta=stream.push)
    await stream.finish(completion.text)   # or: await stream.abort("Stopped.")

While the answer grows, the preview is plain text (half-written Markdown sent as HTML would be
refused) and is edited at most once per `min_interval_s`, always to the latest text, by a
background task: `push` never waits for Telegram. `finish` edits the preview into the first
formatted chunk and sends the other chunks as new messages. With `first_after_s` the first
preview waits that long after the first delta: an answer complete by then goes out once,
formatted, with no preview and no edit (one send per fast turn, not two against Telegram's pace).

A preview outlives its process: `on_sending` hears the first preview's text before it is sent
and `on_preview` its message id as soon as it is sent (the turn records both), and the re-run of
an interrupted turn `adopt`s the message it left, so its own preview and answer replace it
rather than appear beside it. `close` stops previewing and leaves the final edit to the outbox
(`palui.delivery.outbox`), which records it; `discard` removes a preview that will show no answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from enum import StrEnum

from palui.channels.formatting import split_for_telegram
from palui.delivery.pacer import MIN_INTERVAL_S, REPLACED, Pacer, preview_text
from palui.errors import ChannelError, LeaseLost, MarkupRejected, MessageNotModified
from palui.logs import get_logger
from palui.ports.channel import Part
from palui.ports.streaming import DeleteMessage, EditText, Guard, OnPreview, OnSending, SendText

__all__ = ["StreamState", "StreamingReply"]

log = get_logger("palui.streaming")

# A few words, or a finished first line, before anything is shown: one lone word would notify
# the person and then jump around, and a short answer that is done by then goes out once,
# formatted, with no preview at all.
FIRST_CHARS = 20


class StreamState(StrEnum):
    COLLECTING = "collecting"  # nothing shown yet
    PREVIEWING = "previewing"  # a plain-text preview message is growing
    FINISHED = "finished"  # `finish` ran (see `message_ids` for what was delivered)
    ABORTED = "aborted"  # `abort` ran; the preview, if any, keeps the partial text


class StreamingReply:
    """One answer on its way into one chat; use each instance for one answer.

    `send` and `edit` raise `MarkupRejected` when Telegram can't parse html=True text,
    `MessageNotModified` when an edit changes nothing, and any other exception on failure.
    `clock` and `sleep` are injectable so tests control time.
    """

    def __init__(
        self,
        send: SendText,
        edit: EditText,
        *,
        min_interval_s: float = MIN_INTERVAL_S,
        first_chars: int = FIRST_CHARS,
        render: Callable[[str], Sequence[Part]] = split_for_telegram,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        delete: DeleteMessage | None = None,
        first_after_s: float = 0.0,
    ) -> None:
        self._send = send
        self._edit = edit
        self._delete = delete
        self._on_preview: OnPreview | None = None
        self._on_sending: OnSending | None = None
        self._guard: Guard | None = None
        self._adopted = False
        self._first_chars = first_chars
        self._render = render
        self._state = StreamState.COLLECTING
        self._preview_id: int | None = None
        self._message_ids: list[int] = []
        self._pacer = Pacer(
            self._show,
            lambda: self._preview_id is None,
            name="streaming-preview",
            min_interval_s=min_interval_s,
            first_after_s=first_after_s,
            clock=clock,
            sleep=sleep,
            failed="stream_preview_failed",
        )

    @property
    def state(self) -> StreamState:
        return self._state

    @property
    def text(self) -> str:
        """Everything pushed so far."""
        return self._pacer.text

    @property
    def preview_message_id(self) -> int | None:
        """The preview message, if one was sent. After `finish` it is `message_ids[0]`, unless
        it could not be edited (then it still shows a partial text)."""
        return self._preview_id

    @property
    def message_ids(self) -> tuple[int, ...]:
        """The messages showing the final answer, one per chunk delivered, in order. If
        `finish` raised, only the chunks that went out: its length is the parts sent."""
        return tuple(self._message_ids)

    @property
    def adopted(self) -> bool:
        """Whether the preview is one an earlier (interrupted) turn left."""
        return self._adopted

    def held_since(self, at: float) -> None:
        """Count the first preview's hold from `at` (when a draft that gave way began)."""
        self._pacer.first_delta_at = at

    def watch_preview(
        self,
        on_preview: OnPreview,
        on_sending: OnSending | None = None,
        guard: Guard | None = None,
    ) -> None:
        """Call `on_preview(message_id)` once the preview is sent (before it is edited again),
        `on_sending(text)` before it is sent, and `guard()` before each preview call: once it
        raises `LeaseLost` the preview is left alone for good."""
        self._on_preview = on_preview
        self._on_sending = on_sending
        self._guard = guard

    def adopt(self, message_id: int) -> None:
        """Take over a preview an interrupted turn left: show this answer in it. Call first."""
        if self._preview_id is not None or self._pacer.closing:
            raise RuntimeError("adopt a preview before the stream shows anything")
        self._preview_id = message_id
        self._adopted = True
        self._state = StreamState.PREVIEWING

    async def close(self) -> None:
        """Stop previewing without a final edit: the outbox edits the preview into the answer.
        Once this returns no preview call is in flight and `preview_message_id` is final."""
        if self._pacer.closing:
            return
        await self._pacer.stop()
        self._state = StreamState.FINISHED

    async def discard(self) -> None:
        """No answer will fill the preview (e.g. the turn failed): delete it, or if it can't be
        deleted, replace its text with a short note. Best effort; safe in a `finally`."""
        if self._pacer.closing:
            return
        await self._pacer.stop()
        self._state = StreamState.ABORTED
        if self._preview_id is None or not await self._still_ours():
            return
        try:
            if self._delete is None:
                raise ChannelError("this channel can't delete messages")
            await self._delete(self._preview_id)
        except Exception as exc:
            log.warning("stream_preview_not_deleted", error=str(exc))
            with contextlib.suppress(Exception):  # MessageNotModified too: it says so already
                await self._edit(self._preview_id, REPLACED, False)

    async def push(self, delta: str) -> None:
        """Add the next piece of the answer. Returns at once; never waits for the chat."""
        if self._pacer.closing:
            return  # e.g. a delta racing /stop
        self._pacer.add(delta)
        if self._preview_id is None and not self._worth_showing():
            return
        self._pacer.kick()

    async def finish(self, final_text: str) -> None:
        """Make the chat show `final_text`, formatted, exactly once.

        The first chunk replaces the preview; the others follow as new messages. If the
        preview can't be edited, every chunk is sent as a new message. Errors sending a chunk
        propagate, with `message_ids` telling how many chunks went out before.
        """
        if self._pacer.closing:
            raise RuntimeError(f"this reply is already {self._state}")
        chunks = list(self._render(final_text))
        if not chunks:
            raise ValueError("the final answer is empty: there is nothing to show")
        await self._pacer.stop()
        try:
            rest = chunks
            if self._preview_id is not None:
                if await self._replace_preview(self._preview_id, chunks[0]):
                    self._message_ids.append(self._preview_id)
                    rest = chunks[1:]
                else:
                    log.warning("stream_preview_left", message_id=self._preview_id)
            for chunk in rest:
                self._message_ids.append(await self._send_chunk(chunk))
        finally:
            self._state = StreamState.FINISHED

    async def abort(self, note: str | None = None) -> None:
        """Stop previewing; an existing preview keeps the text so far, plus `note`.

        Does nothing once `finish` or `abort` has begun, so it is safe in a `finally`.
        """
        if self._pacer.closing:
            return
        await self._pacer.stop()
        self._state = StreamState.ABORTED
        if self._preview_id is None or not await self._still_ours():
            return
        text = preview_text(self._pacer.text, f"\n\n{note}" if note else "")
        if text == self._pacer.shown:
            return
        try:
            await self._edit(self._preview_id, text, False)
        except MessageNotModified:
            pass
        except Exception as exc:
            log.warning("stream_abort_edit_failed", error=str(exc))
            return
        self._pacer.shown = text

    # -- the preview (the pacer calls `_show`) ----------------------------------------------

    def _worth_showing(self) -> bool:
        visible = self._pacer.text.strip()
        return len(visible) >= self._first_chars or "\n" in visible

    async def _still_ours(self) -> bool:
        if self._guard is not None:
            try:
                await self._guard()
            except LeaseLost:
                return False
        return True

    async def _show(self, text: str) -> bool:
        try:
            if self._guard is not None:
                await self._guard()
            if self._preview_id is None:
                if self._on_sending is not None:
                    await self._on_sending(text)
                self._preview_id = await self._send(text, False)
                self._state = StreamState.PREVIEWING
                if self._on_preview is not None:
                    await self._on_preview(self._preview_id)
            else:
                with contextlib.suppress(MessageNotModified):
                    await self._edit(self._preview_id, text, False)
        except LeaseLost:
            log.warning("stream_preview_lease_lost")
            return False  # another process runs the chat now: its re-run owns the preview
        return True

    # -- the final answer -------------------------------------------------------------------

    async def _replace_preview(self, message_id: int, chunk: Part) -> bool:
        try:
            try:
                await self._edit(message_id, chunk.html, True)
            except MarkupRejected as exc:
                log.warning("html_rejected", error=str(exc))
                await self._edit(message_id, chunk.plain, False)
        except MessageNotModified:
            pass
        except Exception as exc:
            log.warning("stream_final_edit_failed", error=str(exc))
            return False
        return True

    async def _send_chunk(self, chunk: Part) -> int:
        try:
            return await self._send(chunk.html, True)
        except MarkupRejected as exc:
            # Formatting is a nicety: if Telegram can't parse it, the words still arrive.
            log.warning("html_rejected", error=str(exc))
            return await self._send(chunk.plain, False)
