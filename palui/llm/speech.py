"""Text to speech through litellm's speech API (the `Speaker` port): an answer to a voice note
spoken back, as OGG/Opus (what Telegram plays as a voice message).

Like the transcriber, one request per attempt (retries off), a hard bound on the whole call,
and error messages without the API key.
"""

from __future__ import annotations

import asyncio
from typing import Any

from palui.errors import ModelError
from palui.llm.failures import redact, short, unreachable_reason
from palui.llm.via_litellm import import_litellm

OPUS = "opus"  # OpenAI's name for OGG/Opus: Telegram's voice message format


class LiteLLMSpeaker:
    """`Speaker` over `litellm.aspeech` (an OpenAI-compatible `/audio/speech` behind
    `api_base`, or any provider litellm knows)."""

    def __init__(
        self,
        model: str,
        *,
        voice: str = "alloy",
        api_base: str | None = None,
        api_key: str | None = None,
        request_timeout: float = 60,
    ) -> None:
        self.name = model
        self._voice = voice
        self._api_base = api_base
        self._api_key = api_key
        self._timeout = request_timeout
        self._litellm: Any = None

    def __repr__(self) -> str:  # the key stays out on purpose
        return f"LiteLLMSpeaker({self.name!r})"

    async def speak(self, text: str) -> bytes:
        if self._litellm is None:
            self._litellm = await asyncio.to_thread(import_litellm)
        try:
            async with asyncio.timeout(self._timeout):
                response = await self._litellm.aspeech(
                    model=self.name,
                    input=text,
                    voice=self._voice,
                    response_format=OPUS,
                    api_base=self._api_base,
                    api_key=self._api_key,
                    timeout=self._timeout,
                    max_retries=0,
                )
                audio = response.content if hasattr(response, "content") else bytes(response)
        except TimeoutError:
            raise ModelError(f"{self.name}: no speech within {self._timeout:g} s") from None
        except Exception as error:
            reason = unreachable_reason(error, self._timeout) or short(str(error))
            raise ModelError(f"{self.name}: {redact(reason, self._api_key)}") from None
        if not audio:
            raise ModelError(f"{self.name}: no audio in the answer")
        return bytes(audio)
