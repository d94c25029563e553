"""The litellm route: every model the direct route (`openai_http`) does not speak, through
`litellm.acompletion`, one request per attempt (litellm's own retries off).

litellm is imported on first need, in a thread (seconds, ~140 MB), and rehearsed once
(`palui.llm.warm`); a deployment whose models all speak OpenAI's format never loads it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable
from typing import Any

from palui.domain import Completion
from palui.errors import ModelError
from palui.llm import warm
from palui.llm.failures import (
    NotAllowed,
    Unreachable,
    http_status,
    not_allowed,
    redact,
    refusal,
    server_message,
    unreachable_reason,
)
from palui.llm.wire import Stream, from_response
from palui.ports import DeltaHandler

_LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")


class LiteLLMRoute:
    """One attempt through litellm. Raises `Unreachable`, `NotAllowed` or `ModelError`, never
    litellm's errors; errors of `on_delta` pass through."""

    def __init__(self, api_base: str | None, api_key: str | None, timeout: float) -> None:
        self._api_base = api_base
        self._api_key = api_key
        self._timeout = timeout
        self._litellm: Any = None
        self._loading: asyncio.Future[None] | None = None

    async def ready(self, model: str) -> Any:
        """litellm, imported and rehearsed (for the provider of `model`, the first caller's):
        every attempt waits for that (started by the first caller, the app's warm-up at
        start), so no call pays for a first use."""
        if self._litellm is None:
            if self._loading is None or self._loading.done():  # not started, or it failed
                self._loading = asyncio.ensure_future(self._load(model))
            # Shielded: a caller given up (a turn's /stop, the warm-up's time limit) leaves
            # the load going for the others.
            await asyncio.shield(self._loading)
        return self._litellm

    async def close(self) -> None:
        """litellm keeps its clients for the process; nothing of this route's to close."""

    async def _load(self, model: str) -> None:
        # The import takes seconds: off the event loop, so chats keep being served meanwhile.
        litellm = await asyncio.to_thread(import_litellm)
        await warm.rehearse(litellm, model)
        self._litellm = litellm

    async def attempt(
        self,
        model: str,
        request: dict[str, Any],
        on_delta: DeltaHandler | None,
        stream: Stream,
    ) -> Completion:
        litellm = await self.ready(model)
        kwargs: dict[str, Any] = {
            **request,
            "model": model,
            "api_base": self._api_base,
            "api_key": self._api_key,
            "timeout": self._timeout,
            # litellm retries in two places: its wrapper (num_retries) and the OpenAI client
            # underneath (max_retries, 2 by default). Both off: one request per attempt.
            "num_retries": 0,
            "max_retries": 0,
            "drop_params": True,  # a provider without e.g. stream_options must not fail the call
        }
        if on_delta is None:
            response = await self._guard(model, litellm.acompletion(**kwargs))
            return from_response(model, response)
        chunks = await self._guard(
            model,
            litellm.acompletion(**kwargs, stream=True, stream_options={"include_usage": True}),
        )
        iterator = chunks.__aiter__()
        try:
            while (chunk := await self._guard(model, _next(iterator))) is not None:
                text = stream.add(chunk)
                if text:
                    await on_delta(text)
        finally:
            await _close(chunks)  # on cancellation too: this ends the HTTP request
        return stream.completion()

    async def _guard(self, model: str, call: Awaitable[Any]) -> Any:
        """Await a litellm call, turning its errors (not on_delta's) into ours."""
        try:
            return await call
        except Exception as error:
            raise self._explain(model, error) from None

    def _explain(self, model: str, error: BaseException) -> Exception:
        reason = unreachable_reason(error, self._timeout)
        if reason is not None:
            return Unreachable(reason)
        words = refusal(http_status(error), redact(server_message(error), self._api_key))
        if not_allowed(error):
            return NotAllowed(f"{model}: {words}")
        return ModelError(f"{model}: {words}")


def import_litellm() -> Any:
    # Without this litellm downloads its model price map at import.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    # Imported on first use, in a thread: the import takes seconds, and at module level it would
    # slow every start-up and every CLI command by as much.
    import litellm

    litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banners on errors
    litellm.telemetry = False  # older releases report usage unless told not to
    litellm.callbacks = []
    litellm.success_callback = []
    litellm.failure_callback = []
    # litellm prices every call three times over (its logging, the streamed usage, the response's
    # hidden params): ~10% of the daemon's CPU under load. Palui records tokens, never litellm's
    # prices, so the price is "unknown" (None), which every caller of this hook accepts (its
    # stub says float; the Logging code that calls it takes `float | None`).
    litellm.response_cost_calculator = _unpriced  # type: ignore[assignment]
    # After every call litellm builds a "standard logging payload" (and hidden params, and a
    # cost) for its success callbacks, even with none registered: ~1 ms of CPU a call here,
    # 2 calls a turn. Palui registers none (above) and reads usage from the response or the
    # streamed chunks, never from that payload: the handler only puts back litellm's own
    # correlation ids. Failure logging is untouched (rare, and it explains failures).
    from litellm.litellm_core_utils.litellm_logging import Logging

    if callable(getattr(Logging, "_restore_correlation_context", None)):
        Logging.async_success_handler = _no_success_logging  # type: ignore[method-assign]
    for name in _LITELLM_LOGGERS:
        # litellm adds its own stderr handler; drop it so its records pass through Palui's
        # redacting log pipeline, and keep only warnings and worse.
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.setLevel(logging.WARNING)
        logger.propagate = True
    return litellm


def _unpriced(**_call: Any) -> None:
    return None


async def _no_success_logging(self: Any, *_args: Any, **_kwargs: Any) -> None:
    self._restore_correlation_context()


async def _next(iterator: Any) -> Any:
    """The next chunk of a litellm stream, or None at its end."""
    try:
        return await iterator.__anext__()
    except StopAsyncIteration:
        return None


async def _close(chunks: Any) -> None:
    closer = getattr(chunks, "aclose", None)
    if closer is not None:
        # Closing a broken stream may fail again; the first error is the one that matters.
        with contextlib.suppress(Exception):
            await closer()
