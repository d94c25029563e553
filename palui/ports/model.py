"""Models: the language model reached one call at a time, speech to text and text to speech."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from palui.domain import Completion, Message, ToolSpec

DeltaHandler = Callable[[str], Awaitable[None]]


class ChatModel(Protocol):
    """A language model reached one call at a time."""

    name: str

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        on_delta: DeltaHandler | None = None,
    ) -> Completion: ...

    async def ping(self) -> str: ...


class Transcriber(Protocol):
    """Speech to text (`palui.llm.transcription`)."""

    async def transcribe(self, audio: bytes, file_name: str, mime_type: str | None) -> str:
        """The words heard; raises `ModelError` (or `ModelUnavailable`) when it can't."""
        ...


class Speaker(Protocol):
    """Text to speech (`palui.llm.speech`)."""

    name: str

    async def speak(self, text: str) -> bytes:
        """OGG/Opus audio of `text`; raises `ModelError` when it can't."""
        ...
