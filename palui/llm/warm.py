"""The model's warm-up at start: what a first real call would load, loaded before anyone asks.

Two rehearsals, neither leaving the process: a `mock_response` request (litellm's own short
cut: its request path and streaming wrapper), then, for OpenAI-style models, a request through
litellm's OpenAI provider to an HTTP transport that answers in memory (the provider code, the
OpenAI SDK's streamed chunk types, litellm's service logger: ~2x a later call's work otherwise,
paid by the first answer). Only an OpenAI-style model gets the second: other providers may not
take the given client, and a rehearsal must never reach a real endpoint.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import httpx

ASK = [{"role": "user", "content": "warm-up"}]
# Where the rehearsal's client says it goes; its transport answers before any connection.
NOWHERE = "http://warm-up.invalid/v1"
_CHUNKS = (
    {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"}}]},
    {
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    },
)


async def rehearse(litellm: Any, model: str) -> None:
    """Both rehearsals; a failure only leaves the first real call slower."""
    settings = {"num_retries": 0, "max_retries": 0}
    with contextlib.suppress(Exception):
        chunks = await litellm.acompletion(
            model=model, messages=ASK, stream=True, mock_response="ok", **settings
        )
        [_ async for _ in chunks]
    with contextlib.suppress(Exception):
        if litellm.get_llm_provider(model)[1] != "openai":
            return
        client = _in_memory_client()
        try:
            chunks = await litellm.acompletion(
                model=model,
                messages=ASK,
                stream=True,
                stream_options={"include_usage": True},
                client=client,
                api_base=NOWHERE,
                api_key="warm-up",
                drop_params=True,
                **settings,
            )
            [_ async for _ in chunks]
        finally:
            await client.close()


def _in_memory_client() -> Any:
    import openai  # litellm's dependency; imported here, after litellm, off the event loop's start

    transport = httpx.MockTransport(_answer)
    return openai.AsyncOpenAI(
        api_key="warm-up",
        base_url=NOWHERE,
        max_retries=0,
        # litellm hands the OpenAI SDK a client of `httpx` (not the SDK's own `httpx2`): the
        # rehearsal goes the way a real call goes.
        http_client=httpx.AsyncClient(transport=transport),  # type: ignore[arg-type]
    )


def _answer(request: httpx.Request) -> httpx.Response:
    """A streamed chat completion, as an OpenAI-compatible server sends one."""
    head = {"id": "warm-up", "object": "chat.completion.chunk", "created": 0, "model": "warm-up"}
    body = "".join(f"data: {json.dumps({**head, **chunk})}\n\n" for chunk in _CHUNKS)
    return httpx.Response(
        200, headers={"content-type": "text/event-stream"}, content=f"{body}data: [DONE]\n\n"
    )
