"""The model's warm-up at start: what a first real call would load, loaded before anyone asks.

Neither rehearsal leaves the process. An OpenAI-style model gets a streamed and a whole request
through litellm's OpenAI provider to an HTTP transport that answers in memory (its request path,
streaming wrapper, the provider code, the OpenAI SDK's chunk types, litellm's service logger:
~2x a later call's work otherwise, paid by the first answer). Other providers may not take the
given client, and a rehearsal must never reach a real endpoint: they get a `mock_response`
request (litellm's own short cut) instead. The mock is not used for OpenAI-style models: its
answer carries no usage, so litellm counts its tokens with tiktoken, whose tables (~48 MB of
RSS) a real call never loads while the provider reports usage.
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

_WHOLE = {
    "id": "warm-up",
    "object": "chat.completion",
    "created": 0,
    "model": "warm-up",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "ok"},
            "finish_reason": "stop",
        }
    ],
    "usage": _CHUNKS[1]["usage"],
}


async def rehearse(litellm: Any, model: str) -> None:
    """The rehearsals for this model's provider; a failure only leaves the first real call
    slower."""
    settings = {"num_retries": 0, "max_retries": 0}
    with contextlib.suppress(Exception):
        if litellm.get_llm_provider(model)[1] == "openai":
            await _in_memory(litellm, model, settings)
            return
    with contextlib.suppress(Exception):
        chunks = await litellm.acompletion(
            model=model, messages=ASK, stream=True, mock_response="ok", **settings
        )
        [_ async for _ in chunks]


async def _in_memory(litellm: Any, model: str, settings: dict[str, Any]) -> None:
    client = _in_memory_client()
    try:
        call = {"client": client, "api_base": NOWHERE, "api_key": "warm-up", "drop_params": True}
        chunks = await litellm.acompletion(
            model=model,
            messages=ASK,
            stream=True,
            stream_options={"include_usage": True},
            **call,
            **settings,
        )
        [_ async for _ in chunks]
        await litellm.acompletion(model=model, messages=ASK, **call, **settings)
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
    """A chat completion, streamed if asked, as an OpenAI-compatible server sends one."""
    if not json.loads(request.content).get("stream"):
        return httpx.Response(200, json=_WHOLE)
    head = {"id": "warm-up", "object": "chat.completion.chunk", "created": 0, "model": "warm-up"}
    body = "".join(f"data: {json.dumps({**head, **chunk})}\n\n" for chunk in _CHUNKS)
    return httpx.Response(
        200, headers={"content-type": "text/event-stream"}, content=f"{body}data: [DONE]\n\n"
    )
