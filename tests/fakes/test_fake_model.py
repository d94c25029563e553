"""The fake model server's own contract, checked with a plain HTTP client."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest

from tests.fakes.model_server import FakeModel, ModelRequest, Script

HELLO = {"model": "fake-model", "messages": [{"role": "user", "content": "hello"}]}


async def post(fake: FakeModel, body: dict[str, Any], *, base: str | None = None) -> Any:
    url = (base or fake.api_base) + "/chat/completions"
    async with aiohttp.ClientSession() as session, session.post(url, json=body) as response:
        return response.status, await response.json()


async def stream_events(fake: FakeModel, body: dict[str, Any]) -> list[str]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(fake.api_base + "/chat/completions", json=body) as response,
    ):
        assert response.headers["Content-Type"].startswith("text/event-stream")
        text = await response.text()
    return [line.removeprefix("data: ") for line in text.split("\n\n") if line]


async def test_default_brain_echoes_the_last_user_message(fake_model: FakeModel) -> None:
    status, body = await post(fake_model, HELLO)

    assert status == 200
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "echo: hello"}
    assert body["usage"]["total_tokens"] == (
        body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"]
    )


async def test_queue_answers_in_order_then_fails_loudly(fake_model: FakeModel) -> None:
    fake_model.queue("first", Script(text="second"))

    answers = [await post(fake_model, HELLO) for _ in range(3)]

    assert [a[1]["choices"][0]["message"]["content"] for a in answers[:2]] == ["first", "second"]
    assert answers[2][0] == 500
    assert "no scripted answer left" in answers[2][1]["error"]["message"]


async def test_async_brain_sees_the_parsed_request(fake_model: FakeModel) -> None:
    async def brain(request: ModelRequest) -> Script:
        return Script(text=f"{request.model} {request.stream} {request.last_user_text}")

    fake_model.brain = brain
    body = {**HELLO, "tools": [{"type": "function", "function": {"name": "t__x"}}]}

    # Some clients leave out the /v1 prefix: the fake serves both.
    _, answer = await post(fake_model, body, base=fake_model.api_base.removesuffix("/v1"))

    assert answer["choices"][0]["message"]["content"] == "fake-model False hello"
    assert fake_model.requests[0].tool_names == ["t__x"]


async def test_error_answers_have_openai_error_shape(fake_model: FakeModel) -> None:
    fake_model.queue(Script(status=429, error="slow down"))

    status, body = await post(fake_model, HELLO)

    assert status == 429
    assert body == {
        "error": {
            "message": "slow down",
            "type": "requests",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }


async def test_stream_is_sse_chunks_with_usage_then_done(fake_model: FakeModel) -> None:
    fake_model.queue(Script(text="one two three", tool_calls=[("t__x", '{"a": 1}')], usage=(7, 3)))
    body = {**HELLO, "stream": True, "stream_options": {"include_usage": True}}

    events = await stream_events(fake_model, body)

    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert "".join(d.get("content") or "" for d in deltas) == "one two three"
    assert sum(1 for d in deltas if d.get("content")) == 3
    calls = [call for d in deltas for call in d.get("tool_calls", [])]
    assert calls[0]["function"]["name"] == "t__x"
    assert "".join(c["function"]["arguments"] for c in calls) == '{"a": 1}'
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}


async def test_stream_without_include_usage_sends_no_usage_chunk(fake_model: FakeModel) -> None:
    events = await stream_events(fake_model, {**HELLO, "stream": True})

    assert all("usage" not in json.loads(e) for e in events[:-1])


async def test_client_going_away_from_a_hanging_call_counts_as_a_disconnect(
    fake_model: FakeModel,
) -> None:
    fake_model.queue(Script(hang=True))

    call = asyncio.create_task(post(fake_model, HELLO))
    await fake_model.wait_until_in_flight()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call

    await fake_model.wait_for_disconnects(1)
    assert fake_model.in_flight == 0


async def test_stopping_the_server_ends_a_hanging_call_without_a_disconnect() -> None:
    fake = FakeModel()
    await fake.start()
    fake.queue(Script(hang=True))
    call = asyncio.create_task(post(fake, HELLO))
    await fake.wait_until_in_flight()

    await fake.stop()

    status, _ = await call
    assert status == 503
    assert fake.disconnects == 0


async def test_waiting_for_a_request_that_never_comes_fails_with_the_fakes_state(
    fake_model: FakeModel,
) -> None:
    with pytest.raises(AssertionError, match="requests=0 in_flight=0"):
        await fake_model.wait_for_request(timeout=0.05)


async def test_models_endpoint_lists_the_models() -> None:
    async with (
        FakeModel(models=("a", "b")) as fake,
        aiohttp.ClientSession() as session,
        session.get(fake.api_base + "/models") as response,
    ):
        body = await response.json()

    assert [m["id"] for m in body["data"]] == ["a", "b"]
