"""Streaming an answer while the model writes it.

A channel gives the raw calls (`Streaming.stream_faces`); `palui.delivery.streams` paces them
into a `ReplyStream`, the preview edited in place or a native draft."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

SendText = Callable[[str, bool], Awaitable[int]]
"""`send(text, html) -> message_id`; `html` means formatted (parse_mode HTML), else plain."""
EditText = Callable[[int, str, bool], Awaitable[None]]
"""`edit(message_id, text, html)`; replaces the message's text. Raises `MarkupRejected` when
html=True text can't be parsed, `MessageNotModified` when it changes nothing."""
DeleteMessage = Callable[[int], Awaitable[None]]
"""`delete(message_id)`; removes the message from the chat."""
SendDraft = Callable[[str], Awaitable[None]]
"""`send_draft(text)`: show `text` (plain) as the answer's draft; `DraftRefused` if it can't."""
OnPreview = Callable[[int], Awaitable[None]]
"""Told the preview's message id once it is sent."""
OnSending = Callable[[str], Awaitable[None]]
"""Told the first preview's text just before it is sent (a send may reach the chat and the
process die before its id is heard: the text is what the re-run looks for)."""
Guard = Callable[[], Awaitable[None]]
"""Awaited before each preview send or edit; raises `LeaseLost` once the turn's chat lease was
taken over (a stalled holder must not touch the preview its successor has taken over)."""


@dataclass(frozen=True, slots=True)
class StreamFaces:
    """The calls one answer in one chat streams with: the preview's (`send`, `edit`,
    `delete`), and `send_draft` where the chat shows drafts (None: previews only)."""

    send: SendText
    edit: EditText
    delete: DeleteMessage | None
    send_draft: SendDraft | None
    first_after_s: float  # the first preview (or draft) waits this long after the first words


class Streaming(Protocol):
    def stream_faces(self, chat_id: int) -> StreamFaces | None:
        """The calls for the chat's next answer, or None where the channel doesn't stream."""
        ...


class ReplyStream(Protocol):
    """An answer shown while the model writes it (`palui.delivery`)."""

    @property
    def message_ids(self) -> tuple[int, ...]: ...

    @property
    def preview_message_id(self) -> int | None: ...

    @property
    def adopted(self) -> bool: ...

    def watch_preview(
        self,
        on_preview: OnPreview,
        on_sending: OnSending | None = None,
        guard: Guard | None = None,
    ) -> None:
        """Hear the preview's message id as soon as it is sent (to record it), and the first
        preview's text just before it is sent (to find it if the id is never recorded); `guard()`
        before each preview call (it raises `LeaseLost` once the turn's lease is lost)."""
        ...

    def adopt(self, message_id: int) -> None:
        """Show this answer in a preview an interrupted turn left."""
        ...

    async def push(self, delta: str) -> None: ...

    async def finish(self, final_text: str) -> None: ...

    async def close(self) -> None:
        """Stop previewing; the outbox edits the preview into the answer."""
        ...

    async def abort(self, note: str | None = None) -> None: ...

    async def discard(self) -> None:
        """Remove the preview (no answer will fill it)."""
        ...
