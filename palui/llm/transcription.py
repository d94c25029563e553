"""Speech to text (the `Transcriber` port), and whether the chat model accepts images.

A transcription model in OpenAI's format (`openai/whisper-1`, `gpt-4o-transcribe`) is asked
straight over HTTP (`openai_http`), any other through litellm's transcription API (imported on
first use). Like `ModelClient`: one request per attempt, a hard bound on the whole call, and
error messages without the API key.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp

from palui.errors import ModelError
from palui.llm import model_map
from palui.llm.failures import Unreachable, redact, short, unreachable_reason
from palui.llm.openai_http import OpenAIHttp, speaks_openai, wire_name
from palui.llm.via_litellm import import_litellm


class ModelTranscriber:
    """`Transcriber` over an OpenAI-compatible `/audio/transcriptions` behind `api_base`, or
    `litellm.atranscription` for any other provider litellm knows."""

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        request_timeout: float = 60,
        via_litellm: bool = False,
    ) -> None:
        self.name = model
        self._api_base = api_base
        self._api_key = api_key
        self._timeout = request_timeout
        self._direct = speaks_openai(model) and not via_litellm
        self._litellm: Any = None

    def __repr__(self) -> str:  # the key stays out on purpose
        return f"ModelTranscriber({self.name!r})"

    async def transcribe(self, audio: bytes, file_name: str, mime_type: str | None) -> str:
        try:
            async with asyncio.timeout(self._timeout):
                if self._direct:
                    return await self._over_http(audio, file_name, mime_type)
                return await self._through_litellm(audio, file_name, mime_type)
        except TimeoutError:
            raise ModelError(f"{self.name}: no transcript within {self._timeout:g} s") from None
        except Unreachable as failure:
            raise ModelError(f"{self.name}: {failure}") from None

    async def _over_http(self, audio: bytes, file_name: str, mime_type: str | None) -> str:
        form = aiohttp.FormData()
        form.add_field("model", wire_name(self.name))
        form.add_field(
            "file", audio, filename=file_name, content_type=mime_type or "application/octet-stream"
        )
        # Voice notes are rare next to chat calls: a session per transcript, closed after it.
        route = OpenAIHttp(self._api_base, self._api_key, self._timeout)
        try:
            raw = await route.post(self.name, "/audio/transcriptions", form=form)
        finally:
            await route.close()
        try:
            answer = json.loads(raw)
        except ValueError:
            return raw.decode(errors="replace").strip()  # a server that answers in plain text
        return str((answer.get("text") if isinstance(answer, dict) else "") or "").strip()

    async def _through_litellm(self, audio: bytes, file_name: str, mime_type: str | None) -> str:
        if self._litellm is None:
            self._litellm = await asyncio.to_thread(import_litellm)
        upload = (file_name, audio, mime_type or "application/octet-stream")
        try:
            response = await self._litellm.atranscription(
                model=self.name,
                file=upload,
                api_base=self._api_base,
                api_key=self._api_key,
                timeout=self._timeout,
                max_retries=0,
            )
        except Exception as error:
            reason = unreachable_reason(error, self._timeout) or short(str(error))
            raise ModelError(f"{self.name}: {redact(reason, self._api_key)}") from None
        text = getattr(response, "text", None)
        if text is None and isinstance(response, dict):
            text = response.get("text")
        return str(text or "").strip()


async def model_sees_images(model: str, override: bool | None = None) -> bool:
    """Whether `model` accepts image parts: the operator's `PALUI_MODEL_VISION` when set, else
    litellm's model map (a model it doesn't know is taken as text-only)."""
    if override is not None:
        return override
    return await asyncio.to_thread(model_map.sees_images, model)  # a 5 MB file: off the loop
