"""Text to speech (the `Speaker` port): an answer to a voice note spoken back, as OGG/Opus (what
Telegram plays as a voice message).

A speech model in OpenAI's format (`openai/tts-1`) is asked straight over HTTP
(`openai_http`), any other through litellm's speech API (imported on first use). Like the
transcriber: one request per attempt, a hard bound on the whole call, and error messages
without the API key.
"""

from __future__ import annotations

import asyncio
from typing import Any

from palui.errors import ModelError
from palui.llm.failures import Unreachable, redact, short, unreachable_reason
from palui.llm.openai_http import OpenAIHttp, speaks_openai, wire_name
from palui.llm.via_litellm import import_litellm

OPUS = "opus"  # OpenAI's name for OGG/Opus: Telegram's voice message format


class ModelSpeaker:
    """`Speaker` over an OpenAI-compatible `/audio/speech` behind `api_base`, or
    `litellm.aspeech` for any other provider litellm knows."""

    def __init__(
        self,
        model: str,
        *,
        voice: str = "alloy",
        api_base: str | None = None,
        api_key: str | None = None,
        request_timeout: float = 60,
        via_litellm: bool = False,
    ) -> None:
        self.name = model
        self._voice = voice
        self._api_base = api_base
        self._api_key = api_key
        self._timeout = request_timeout
        self._direct = speaks_openai(model) and not via_litellm
        self._litellm: Any = None

    def __repr__(self) -> str:  # the key stays out on purpose
        return f"ModelSpeaker({self.name!r})"

    async def speak(self, text: str) -> bytes:
        try:
            async with asyncio.timeout(self._timeout):
                audio = await (
                    self._over_http(text) if self._direct else self._through_litellm(text)
                )
        except TimeoutError:
            raise ModelError(f"{self.name}: no speech within {self._timeout:g} s") from None
        except Unreachable as failure:
            raise ModelError(f"{self.name}: {failure}") from None
        if not audio:
            raise ModelError(f"{self.name}: no audio in the answer")
        return audio

    async def _over_http(self, text: str) -> bytes:
        body = {
            "model": wire_name(self.name),
            "input": text,
            "voice": self._voice,
            "response_format": OPUS,
        }
        # Spoken replies are rare next to chat calls: a session per answer, closed after it.
        route = OpenAIHttp(self._api_base, self._api_key, self._timeout)
        try:
            return await route.post(self.name, "/audio/speech", json_body=body)
        finally:
            await route.close()

    async def _through_litellm(self, text: str) -> bytes:
        if self._litellm is None:
            self._litellm = await asyncio.to_thread(import_litellm)
        try:
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
        except Exception as error:
            reason = unreachable_reason(error, self._timeout) or short(str(error))
            raise ModelError(f"{self.name}: {redact(reason, self._api_key)}") from None
        return bytes(audio or b"")
