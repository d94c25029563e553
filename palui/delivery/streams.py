"""The stream a chat turn's answer is shown through while the model writes it.

Built here from the channel's raw calls (`palui.ports.streaming.StreamFaces`): where the chat
shows drafts, a `DraftReply` that falls back to the edited preview; else the preview itself;
None where the channel does not stream. A chat turn's stream (`answer_stream`) also takes over
the preview an interrupted run left (`adopt`; `LeftPreview` when this run does not stream), and
records its own preview as it goes out: its text and the floor above which to look for it
before it is sent, its message id once it is (`palui.delivery.shown` finds one never recorded).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Sequence
from dataclasses import dataclass

from palui.db import Store
from palui.delivery.draft import DraftReply
from palui.delivery.pacer import REPLACED
from palui.delivery.preview import StreamingReply
from palui.delivery.shown import preview_floor
from palui.domain import Inbound
from palui.errors import ChannelError
from palui.logs import get_logger
from palui.ports.channel import Answering, Sending
from palui.ports.model import DeltaHandler
from palui.ports.streaming import Guard, OnPreview, OnSending, ReplyStream, Streaming

log = get_logger("palui.delivery")


def reply_stream(channel: Streaming, chat_id: int) -> ReplyStream | None:
    """A stream for the chat's next answer, or None where the channel doesn't stream."""
    faces = channel.stream_faces(chat_id)
    if faces is None:
        return None
    preview = StreamingReply(
        faces.send, faces.edit, delete=faces.delete, first_after_s=faces.first_after_s
    )
    if faces.send_draft is None:
        return preview
    return DraftReply(faces.send_draft, preview, first_after_s=faces.first_after_s)


@dataclass(frozen=True, slots=True)
class AnswerStream:
    stream: ReplyStream | None  # what the turn's end closes or discards (None: nothing shown)
    on_delta: DeltaHandler | None  # where the model's words go as they come (None: not shown)


def answer_stream(
    channel: Answering,
    store: Store,
    chat_id: int,
    turn_id: str,
    batch: Sequence[Inbound],
    *,
    left: int | None,
    group: bool,
    guard: Guard | None,
) -> AnswerStream:
    """The stream of a chat turn answering `batch`; `left`: the preview an interrupted run
    left, which this answer replaces; `guard`: raises `LeaseLost` once the turn's lease is."""
    # In a group the answer is one message threaded to what it answers: no preview edited
    # once a second under the group's 20 messages a minute.
    stream = None if group else reply_stream(channel, chat_id)
    if stream is None:
        # No streaming now (off, or a group), but the answer still replaces what the
        # interrupted run left.
        return AnswerStream(None if left is None else LeftPreview(channel, chat_id, left), None)
    if left is not None:
        stream.adopt(left)  # an interrupted turn's preview: this answer replaces it

    async def sending(text: str) -> None:
        if (floor := preview_floor(channel, chat_id, batch)) is not None:
            await store.turns.preview_going_out(turn_id, floor, text)

    stream.watch_preview(functools.partial(store.turns.record_preview, turn_id), sending, guard)
    return AnswerStream(stream, stream.push)


class LeftPreview:
    """The preview an interrupted turn left, taken over by its re-run when this process does
    not stream (streaming switched off since): nothing is previewed, but the answer still
    replaces that message (the outbox edits it) and a re-run without an answer removes it, as a
    streamed re-run would. A `ReplyStream` that shows nothing itself."""

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
        on_preview: OnPreview,
        on_sending: OnSending | None = None,
        guard: Guard | None = None,
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
