"""The stream a chat turn feeds its answer into: built here from the channel's raw calls.

Where the chat shows drafts, a `DraftReply` that falls back to the edited preview; else the
preview itself; None where the channel does not stream. A turn re-run after an interruption
that does not stream still owns the preview the interrupted run left (`LeftPreview`)."""

from __future__ import annotations

from palui.delivery.draft import DraftReply
from palui.delivery.preview import StreamingReply
from palui.ports.streaming import ReplyStream, Streaming


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
