"""The litellm adapter of the `ChatModel` port (palui.ports); the only package importing litellm
(`transcription` beside it turns voice into text, and says whether a model sees images).

`LiteLLMModel` makes exactly one HTTP request per model attempt: litellm's own retries are off
(it would otherwise send up to three requests per call), so the turn's time budget and /stop
hold. When a model can't be reached (connection refused, timeout, HTTP 429 or 5xx) the next
fallback is tried; every fallback uses the same `api_base` and `api_key` as the primary. When
the primary answers "not allowed" or "no such model" (HTTP 401, 403, 404, or litellm's
AuthenticationError, PermissionDeniedError, NotFoundError) the first fallback that answers
stands in for it, and the completion says so (`Completion.stood_in`), so a model the key may not
use never fails a turn while a fallback works. Any other refusal (a bad request) is a
`ModelError` at once. Error messages never contain the API key.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import logging
import os
import re
from collections.abc import Awaitable, Iterator, Sequence
from typing import Any

from palui.domain import Completion, Message, StandIn, ToolSpec
from palui.errors import ModelError, ModelUnavailable
from palui.llm import warm
from palui.llm.wire import Stream, from_response, to_openai, tool_to_openai
from palui.ports import DeltaHandler

_REDACTED = "[redacted]"
_MAX_DETAIL = 300
_LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")


class _Unreachable(Exception):
    """This model could not be reached (the argument says why); the next may be tried."""


class _NotAllowed(ModelError):
    """The model answered that this key may not use it, or that it does not exist."""


# litellm's classes for those answers, by name (a refusal without an HTTP status still counts).
_NOT_ALLOWED = {"AuthenticationError", "PermissionDeniedError", "NotFoundError"}


class LiteLLMModel:
    """`ChatModel` over litellm, with fallbacks tried in order when a model can't be reached,
    or stand-ins when the primary is not allowed."""

    def __init__(
        self,
        model: str,
        *,
        fallbacks: Sequence[str] = (),
        api_base: str | None = None,
        api_key: str | None = None,
        request_timeout: float = 60,
    ) -> None:
        self.name = model
        self._fallbacks = tuple(fallbacks)
        self._models = tuple(dict.fromkeys((model, *fallbacks)))
        self._api_base = api_base
        self._api_key = api_key
        self._timeout = request_timeout
        self._layer = _Layer()  # shared with the copies `choosing` makes: loaded once

    def __repr__(self) -> str:  # the key stays out on purpose
        return f"LiteLLMModel({self.name!r}, fallbacks={list(self._models[1:])!r})"

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        on_delta: DeltaHandler | None = None,
    ) -> Completion:
        request: dict[str, Any] = {"messages": [to_openai(m) for m in messages]}
        if tools:
            request["tools"] = [tool_to_openai(t) for t in tools]
        return await self._first_reachable(request, on_delta)

    def choosing(self, model: str) -> LiteLLMModel:
        """The same model settings asking `model` first (a chat's /model choice): the fallbacks
        and stand-ins apply to it as to the default."""
        chosen = copy.copy(self)
        chosen.name = model
        chosen._models = tuple(dict.fromkeys((model, *self._fallbacks)))
        return chosen

    async def ping(self) -> str:
        return (await self.probe()).model

    async def probe(self) -> Completion:
        """A one-token request: which model answered, and whether it stood in (`palui doctor`)."""
        request = {"messages": [{"role": "user", "content": "ping"}], "max_tokens": 1}
        return await self._first_reachable(request, None)

    async def _first_reachable(
        self, request: dict[str, Any], on_delta: DeltaHandler | None
    ) -> Completion:
        unreachable: list[tuple[str, str]] = []
        refused: _NotAllowed | None = None  # the primary's "not allowed" or "no such model"
        for model in self._models:
            try:
                completion = await self._attempt(model, request, on_delta)
            except _Unreachable as failure:
                unreachable.append((model, str(failure)))
                continue
            except ModelError as error:
                if refused is None and not unreachable and isinstance(error, _NotAllowed):
                    refused = error  # the primary: the first fallback that answers stands in
                    continue
                if refused is not None:
                    unreachable.append((model, str(error).removeprefix(f"{model}: ")))
                    continue
                if unreachable:
                    tried = "; ".join(f"{m}: {r}" for m, r in unreachable)
                    raise ModelError(f"{error} (tried before it: {tried})") from None
                raise
            if refused is None:
                return completion
            reason = str(refused).removeprefix(f"{self.name}: ")
            return dataclasses.replace(completion, stood_in=StandIn(self.name, model, reason))
        if refused is not None:
            if not unreachable:
                raise refused
            tried = "; ".join(f"{m}: {r}" for m, r in unreachable)
            raise ModelError(f"{refused} (no fallback answered: {tried})")
        raise ModelUnavailable(unreachable)

    async def _attempt(
        self, model: str, request: dict[str, Any], on_delta: DeltaHandler | None
    ) -> Completion:
        """One request to one model; raises `_Unreachable` or `ModelError`, never litellm's."""
        litellm = await self._library()
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
        stream = Stream(model)
        # A hard bound on the whole call, streamed or not: litellm's own timeout only bounds
        # each socket read.
        deadline = asyncio.timeout(self._timeout)
        try:
            async with deadline:
                if on_delta is None:
                    response = await self._guard(model, litellm.acompletion(**kwargs), stream)
                    return from_response(model, response)
                chunks = await self._guard(
                    model,
                    litellm.acompletion(
                        **kwargs, stream=True, stream_options={"include_usage": True}
                    ),
                    stream,
                )
                iterator = chunks.__aiter__()
                try:
                    while (chunk := await self._guard(model, _next(iterator), stream)) is not None:
                        text = stream.add(chunk)
                        if text:
                            await on_delta(text)
                finally:
                    await _close(chunks)  # on cancellation too: this ends the HTTP request
                return stream.completion()
        except TimeoutError:
            if not deadline.expired():  # raised by on_delta, not by our deadline
                raise
            raise self._explain(model, TimeoutError(), stream) from None

    async def _guard(self, model: str, call: Awaitable[Any], stream: Stream) -> Any:
        """Await a litellm call, turning its errors (not on_delta's) into ours."""
        try:
            return await call
        except Exception as error:
            raise self._explain(model, error, stream) from None

    def _explain(self, model: str, error: BaseException, stream: Stream) -> Exception:
        """Turn a failed call into `_Unreachable` (try the next model) or `ModelError`."""
        reason = _unreachable_reason(error, self._timeout)
        if reason is not None:
            if stream.started:
                # Its text already went out through on_delta: a fallback would repeat it.
                return ModelError(f"{model} stopped answering part-way ({reason})")
            return _Unreachable(reason)
        if _not_allowed(error):
            return _NotAllowed(f"{model}: {self._refusal(error)}")
        return ModelError(f"{model}: {self._refusal(error)}")

    def _refusal(self, error: BaseException) -> str:
        status = _http_status(error)
        detail = self._redact(_server_message(error))
        if status == 401:
            return "the API key was refused (HTTP 401)"
        if status == 403:
            return f"the API key may not use this model (HTTP 403): {detail}"
        if status == 404:
            return f"the model was not found (HTTP 404): {detail}"
        if status is not None:
            return f"the request was refused (HTTP {status}): {detail}"
        return f"the call failed before reaching the model: {detail}"

    def _redact(self, text: str) -> str:
        if self._api_key:
            text = text.replace(self._api_key, _REDACTED)
        return text

    async def warm_up(self) -> None:
        """Import litellm and rehearse a streamed request that never leaves the process
        (`palui.llm.warm`), so the first answer costs what later ones do."""
        await self._library()

    async def _library(self) -> Any:
        """litellm, imported and rehearsed: every call waits for that (started by the first
        caller, the app's warm-up at start), so no call pays for a first use, and a message
        that came while Palui started is answered once the model layer is ready."""
        layer = self._layer
        if layer.litellm is None:
            if layer.loading is None or layer.loading.done():  # not started, or it failed
                layer.loading = asyncio.ensure_future(self._load(layer))
            # Shielded: a caller given up (a turn's /stop, the warm-up's time limit) leaves
            # the load going for the others.
            await asyncio.shield(layer.loading)
        return layer.litellm

    async def _load(self, layer: _Layer) -> None:
        # The import takes seconds: off the event loop, so chats keep being served meanwhile.
        litellm = await asyncio.to_thread(_import_litellm)
        await warm.rehearse(litellm, self.name)
        layer.litellm = litellm


@dataclasses.dataclass(slots=True)
class _Layer:
    """litellm once loaded, and the load while it runs."""

    litellm: Any = None
    loading: asyncio.Future[None] | None = None


def _import_litellm() -> Any:
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


# -- streams and failures ----------------------------------------------------------------------


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


def _causes(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _unreachable_reason(error: BaseException, timeout: float) -> str | None:
    """A short reason when the model could not be reached, else None (it refused the call)."""
    # Matched by class name: the classes live in openai, httpx and aiohttp, which are litellm's
    # to choose (a refused connection arrives as litellm's InternalServerError, status 500).
    names = {type(e).__name__ for e in _causes(error)}
    if any(isinstance(e, ConnectionRefusedError) for e in _causes(error)):
        return "connection refused"
    if isinstance(error, TimeoutError) or names & {"Timeout", "APITimeoutError"}:
        return f"timed out after {timeout:g} s"
    if names & {"ServerDisconnectedError", "RemoteProtocolError", "ReadError"}:
        return "the server closed the connection"
    if names & {"APIConnectionError", "ConnectError", "ClientConnectorError"}:
        return "could not connect"
    status = _http_status(error)
    if status == 429:
        return "HTTP 429 (rate limited)"
    if isinstance(status, int) and status >= 500:
        return f"HTTP {status}"
    return None


def _not_allowed(error: BaseException) -> bool:
    """The provider said this key may not use the model, or that there is no such model."""
    if _http_status(error) in (401, 403, 404):
        return True
    return any(k.__name__ in _NOT_ALLOWED for cause in _causes(error) for k in type(cause).__mro__)


def _http_status(error: BaseException) -> int | None:
    """The status of the HTTP answer behind an error; None if no answer came back.

    litellm's own `status_code` can't be trusted for this: it reports client-side failures
    (missing credentials, a refused connection) as 500.
    """
    for cause in _causes(error):
        if any(k.__name__ == "HTTPStatusError" for k in type(cause).__mro__):  # httpx's
            status = getattr(getattr(cause, "response", None), "status_code", None)
            if isinstance(status, int):
                return status
    return None


def _server_message(error: BaseException) -> str:
    """The provider's own words, when an error body carries them."""
    for cause in _causes(error):
        body = getattr(cause, "body", None)
        if isinstance(body, dict):
            inner = body.get("error", body)
            if isinstance(inner, dict) and isinstance(inner.get("message"), str):
                return _short(inner["message"])
    text = str(getattr(error, "message", None) or error)
    # litellm prefixes its class names: "litellm.BadRequestError: OpenAIException - <words>".
    text = text.rsplit("Exception - ", 1)[-1]
    return _short(re.sub(r"^(litellm\.)?\w+Error: ", "", text))


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_DETAIL else text[: _MAX_DETAIL - 1] + "…"


# -- conversion --------------------------------------------------------------------------------
