"""The `ChatModel` port (palui.ports) over two routes: models in OpenAI's wire format straight
over HTTP (`openai_http`), every other provider through litellm (`via_litellm`, the only module
importing litellm, loaded only when a model needs it; `PALUI_MODEL_VIA_LITELLM` sends all
through it).

`ModelClient` makes exactly one HTTP request per model attempt, so the turn's time budget and
/stop hold, and bounds each attempt as a whole. When a model can't be reached (connection
refused, timeout, HTTP 429 or 5xx) the next fallback is tried; every fallback uses the same
`api_base` and `api_key` as the primary. When the primary answers "not allowed" or "no such
model" (HTTP 401, 403, 404) the first fallback that answers stands in for it, and the completion
says so (`Completion.stood_in`), so a model the key may not use never fails a turn while a
fallback works. Any other refusal (a bad request) is a `ModelError` at once. Error messages
never contain the API key.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from collections.abc import Sequence
from typing import Any

from palui.domain import Completion, Message, StandIn, ToolSpec
from palui.errors import ModelError, ModelUnavailable
from palui.llm.failures import NotAllowed, Unreachable
from palui.llm.openai_http import OpenAIHttp, speaks_openai
from palui.llm.via_litellm import LiteLLMRoute
from palui.llm.wire import Stream, to_openai, tool_to_openai
from palui.ports import DeltaHandler


class ModelClient:
    """`ChatModel` with fallbacks tried in order when a model can't be reached, or stand-ins
    when the primary is not allowed; each attempt on its model's route."""

    def __init__(
        self,
        model: str,
        *,
        fallbacks: Sequence[str] = (),
        api_base: str | None = None,
        api_key: str | None = None,
        request_timeout: float = 60,
        via_litellm: bool = False,
    ) -> None:
        self.name = model
        self._fallbacks = tuple(fallbacks)
        self._models = tuple(dict.fromkeys((model, *fallbacks)))
        self._timeout = request_timeout
        self._via_litellm = via_litellm
        # Shared with the copies `choosing` makes: one HTTP session, litellm loaded once.
        self._direct = OpenAIHttp(api_base, api_key, request_timeout)
        self._litellm = LiteLLMRoute(api_base, api_key, request_timeout)

    def __repr__(self) -> str:  # the key stays out on purpose
        return f"ModelClient({self.name!r}, fallbacks={list(self._models[1:])!r})"

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

    def choosing(self, model: str) -> ModelClient:
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
        refused: NotAllowed | None = None  # the primary's "not allowed" or "no such model"
        for model in self._models:
            try:
                completion = await self._attempt(model, request, on_delta)
            except Unreachable as failure:
                unreachable.append((model, str(failure)))
                continue
            except ModelError as error:
                if refused is None and not unreachable and isinstance(error, NotAllowed):
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
        """One request to one model; raises `Unreachable` or `ModelError`."""
        stream = Stream(model)
        # A hard bound on the whole call, streamed or not: the routes bound each socket read.
        deadline = asyncio.timeout(self._timeout)
        try:
            async with deadline:
                return await self._route(model).attempt(model, request, on_delta, stream)
        except TimeoutError:
            if not deadline.expired():  # raised by on_delta, not by our deadline
                raise
            failure = Unreachable(f"timed out after {self._timeout:g} s")
        except Unreachable as unreachable:
            failure = unreachable
        if stream.started:
            # Its text already went out through on_delta: a fallback would repeat it.
            raise ModelError(f"{model} stopped answering part-way ({failure})")
        raise failure

    def way(self, model: str | None = None) -> str:
        """How `model` (default: the primary) is called: "HTTP" or "litellm" (doctor, logs)."""
        return "litellm" if self._route(model or self.name) is self._litellm else "HTTP"

    def _route(self, model: str) -> OpenAIHttp | LiteLLMRoute:
        if self._via_litellm or not speaks_openai(model):
            return self._litellm
        return self._direct

    async def warm_up(self) -> None:
        """Load and rehearse what the models' routes need (`palui.llm.warm` for litellm), so
        the first answer costs what later ones do."""
        for model in self._models:
            if self._route(model) is self._litellm:
                await self._litellm.ready(model)

    async def aclose(self) -> None:
        await self._direct.close()
        await self._litellm.close()
