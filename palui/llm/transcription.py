"""Speech to text through litellm's transcription API (the `Transcriber` port), and whether the
chat model accepts images.

Like `ModelClient`, one request per attempt (litellm's and the OpenAI client's retries off), a
hard bound on the whole call, and error messages without the API key.
"""

from __future__ import annotations

import asyncio
from typing import Any

from palui.errors import ModelError
from palui.llm import model_map
from palui.llm.failures import redact, short, unreachable_reason
from palui.llm.via_litellm import import_litellm


class LiteLLMTranscriber:
    """`Transcriber` over `litellm.atranscription` (an OpenAI-compatible
    `/audio/transcriptions` behind `api_base`, or any provider litellm knows)."""

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        request_timeout: float = 60,
    ) -> None:
        self.name = model
        self._api_base = api_base
        self._api_key = api_key
        self._timeout = request_timeout
        self._litellm: Any = None

    def __repr__(self) -> str:  # the key stays out on purpose
        return f"LiteLLMTranscriber({self.name!r})"

    async def transcribe(self, audio: bytes, file_name: str, mime_type: str | None) -> str:
        if self._litellm is None:
            self._litellm = await asyncio.to_thread(import_litellm)
        upload = (file_name, audio, mime_type or "application/octet-stream")
        try:
            async with asyncio.timeout(self._timeout):
                response = await self._litellm.atranscription(
                    model=self.name,
                    file=upload,
                    api_base=self._api_base,
                    api_key=self._api_key,
                    timeout=self._timeout,
                    max_retries=0,
                )
        except TimeoutError:
            raise ModelError(f"{self.name}: no transcript within {self._timeout:g} s") from None
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
