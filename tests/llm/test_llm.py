"""ModelClient against the fake OpenAI-compatible server, over loopback only: every behaviour on
both routes (straight over HTTP, and through litellm as for any other provider)."""

from __future__ import annotations

import asyncio
import json
import socket
import traceback
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from palui.domain import Message, Role, ToolCallRequest, ToolSpec, Usage
from palui.errors import ModelError, ModelUnavailable
from palui.llm import ModelClient as _ModelClient
from palui.ports import ChatModel
from tests.fakes.model_server import FakeModel, ModelRequest, Script

KEY = "sk-test-DoNotLeakThisKey0123456789"
PRIMARY = "openai/primary"
BACKUP = "openai/backup"
HELLO = [Message(Role.USER, "hello")]


@pytest.fixture(autouse=True, params=["direct", "litellm"])
async def route(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[str]:
    """Each test once per route: `ModelClient` here is the client on that route (closed after
    the test)."""
    made: list[_ModelClient] = []

    def client(*args: Any, **kwargs: Any) -> _ModelClient:
        made.append(_ModelClient(*args, via_litellm=request.param == "litellm", **kwargs))
        return made[-1]

    monkeypatch.setitem(globals(), "ModelClient", client)
    yield str(request.param)
    for model in made:
        await model.aclose()


ModelClient = _ModelClient


def model_for(
    fake: FakeModel, *, fallbacks: tuple[str, ...] = (), timeout: float = 10
) -> ModelClient:
    return ModelClient(
        PRIMARY, fallbacks=fallbacks, api_base=fake.api_base, api_key=KEY, request_timeout=timeout
    )


def closed_port_base() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def by_model(**scripts: Script) -> Callable[[ModelRequest], Script]:
    """A brain answering each model (by its name without the provider) with its own script."""

    def brain(request: ModelRequest) -> Script:
        return scripts[request.model]

    return brain


def requests_for(fake: FakeModel, name: str) -> list[ModelRequest]:
    return [r for r in fake.requests if r.model == name]


def full_text(error: BaseException) -> str:
    return "".join(traceback.format_exception(error)) + repr(error)


def test_the_model_client_is_a_chat_model() -> None:
    model: ChatModel = ModelClient(PRIMARY, api_key=KEY)
    assert model.name == PRIMARY
    assert KEY not in repr(model)


async def test_plain_reply_returns_text_and_usage(fake_model: FakeModel) -> None:
    fake_model.queue(Script(text="Hi there!", usage=(12, 3)))

    completion = await model_for(fake_model).complete(HELLO)

    assert completion.content == "Hi there!"
    assert completion.model == PRIMARY
    assert completion.usage == Usage(prompt_tokens=12, completion_tokens=3)
    assert completion.finish_reason == "stop"
    assert completion.tool_calls == ()
    sent = fake_model.requests[0]
    assert sent.model == "primary"
    assert sent.messages == [{"role": "user", "content": "hello"}]
    assert sent.headers["Authorization"] == f"Bearer {KEY}"


async def test_tool_call_is_parsed_into_a_tool_call_request(fake_model: FakeModel) -> None:
    fake_model.queue(Script(tool_calls=[("mcp-notes__search", '{"query": "milk"}')]))
    search = ToolSpec(
        "mcp-notes__search",
        "Search notes",
        {"type": "object", "properties": {"query": {"type": "string"}}},
    )

    completion = await model_for(fake_model).complete(HELLO, [search])

    assert completion.tool_calls == (
        ToolCallRequest(id="call_1_0", name="mcp-notes__search", arguments='{"query": "milk"}'),
    )
    assert completion.finish_reason == "tool_calls"
    assert fake_model.requests[0].tools == [
        {
            "type": "function",
            "function": {
                "name": "mcp-notes__search",
                "description": "Search notes",
                "parameters": search.parameters,
            },
        }
    ]


async def test_history_with_tool_calls_and_results_is_sent_in_openai_format(
    fake_model: FakeModel,
) -> None:
    call = ToolCallRequest(id="call_9", name="palui__list_jobs", arguments="{}")
    history = [
        Message(Role.SYSTEM, "You are Palui."),
        Message(Role.USER, "what jobs do I have?"),
        Message(Role.ASSISTANT, "", tool_calls=(call,)),
        Message(Role.TOOL, "[]", tool_call_id="call_9", name="palui__list_jobs"),
    ]

    await model_for(fake_model).complete(history)

    sent = fake_model.requests[0].messages
    assert sent[2].pop("content", None) is None  # litellm may drop a null content
    assert sent == [
        {"role": "system", "content": "You are Palui."},
        {"role": "user", "content": "what jobs do I have?"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "call_9",
                    "type": "function",
                    "function": {"name": "palui__list_jobs", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "content": "[]", "tool_call_id": "call_9"},
    ]


async def test_streaming_delivers_deltas_in_order_and_returns_full_text_and_usage(
    fake_model: FakeModel,
) -> None:
    fake_model.queue(Script(text="The quick brown fox", usage=(20, 5)))
    deltas: list[str] = []

    async def on_delta(text: str) -> None:
        deltas.append(text)

    completion = await model_for(fake_model).complete(HELLO, on_delta=on_delta)

    assert len(deltas) > 1
    assert "".join(deltas) == "The quick brown fox"
    assert completion.content == "The quick brown fox"
    assert completion.usage == Usage(prompt_tokens=20, completion_tokens=5)
    assert fake_model.requests[0].stream


async def test_streamed_tool_call_is_assembled_from_its_pieces(fake_model: FakeModel) -> None:
    arguments = json.dumps({"chat_id": 42, "text": "a fairly long message body"})
    fake_model.queue(Script(text="Sending.", tool_calls=[("palui__send_message", arguments)]))
    deltas: list[str] = []

    async def on_delta(text: str) -> None:
        deltas.append(text)

    completion = await model_for(fake_model).complete(HELLO, on_delta=on_delta)

    assert completion.tool_calls == (
        ToolCallRequest(id="call_1_0", name="palui__send_message", arguments=arguments),
    )
    assert completion.finish_reason == "tool_calls"
    assert "".join(deltas) == "Sending."


async def test_unreachable_primary_falls_back_and_completion_names_the_fallback(
    fake_model: FakeModel,
) -> None:
    fake_model.brain = by_model(primary=Script(drop=True), backup=Script(text="from backup"))

    completion = await model_for(fake_model, fallbacks=(BACKUP,)).complete(HELLO)

    assert completion.model == BACKUP
    assert completion.content == "from backup"
    assert [r.model for r in fake_model.requests] == ["primary", "backup"]


async def test_all_models_down_raises_model_unavailable_naming_each() -> None:
    model = ModelClient(PRIMARY, fallbacks=(BACKUP,), api_base=closed_port_base(), api_key=KEY)

    with pytest.raises(ModelUnavailable) as caught:
        await model.complete(HELLO)

    assert caught.value.attempts == [
        (PRIMARY, "connection refused"),
        (BACKUP, "connection refused"),
    ]
    assert f"{PRIMARY}: connection refused" in str(caught.value)
    assert KEY not in full_text(caught.value)


@pytest.mark.parametrize("status", [429, 500, 503])
async def test_server_error_sends_one_request_per_model_then_falls_back(
    fake_model: FakeModel, status: int
) -> None:
    fake_model.brain = by_model(
        primary=Script(status=status, error="overloaded"), backup=Script("ok")
    )

    completion = await model_for(fake_model, fallbacks=(BACKUP,)).complete(HELLO)

    assert completion.model == BACKUP
    assert len(requests_for(fake_model, "primary")) == 1  # litellm's own retries are off
    assert len(requests_for(fake_model, "backup")) == 1


async def test_server_errors_everywhere_name_each_status_after_one_request_each(
    fake_model: FakeModel,
) -> None:
    fake_model.brain = by_model(primary=Script(status=500), backup=Script(status=429))

    with pytest.raises(ModelUnavailable) as caught:
        await model_for(fake_model, fallbacks=(BACKUP,)).complete(HELLO)

    assert caught.value.attempts == [(PRIMARY, "HTTP 500"), (BACKUP, "HTTP 429 (rate limited)")]
    assert len(fake_model.requests) == 2


async def test_slow_primary_times_out_and_the_fallback_answers(fake_model: FakeModel) -> None:
    fake_model.brain = by_model(primary=Script(hang=True), backup=Script("late but here"))

    completion = await model_for(fake_model, fallbacks=(BACKUP,), timeout=0.5).complete(HELLO)

    assert completion.model == BACKUP
    await fake_model.wait_for_disconnects(1)  # the timed-out request was closed, not left open


async def test_timeouts_are_reported_with_their_limit(fake_model: FakeModel) -> None:
    fake_model.brain = lambda request: Script(hang=True)

    with pytest.raises(ModelUnavailable) as caught:
        await model_for(fake_model, fallbacks=(BACKUP,), timeout=0.3).complete(HELLO)

    assert caught.value.attempts == [
        (PRIMARY, "timed out after 0.3 s"),
        (BACKUP, "timed out after 0.3 s"),
    ]


async def test_bad_request_is_a_model_error_without_fallback(fake_model: FakeModel) -> None:
    fake_model.queue(Script(status=400, error="messages: too long for this model"))

    with pytest.raises(ModelError) as caught:
        await model_for(fake_model, fallbacks=(BACKUP,)).complete(HELLO)

    assert not isinstance(caught.value, ModelUnavailable)
    assert "HTTP 400" in str(caught.value)
    assert "too long for this model" in str(caught.value)
    assert len(fake_model.requests) == 1


async def test_refused_api_key_is_a_clear_model_error(fake_model: FakeModel) -> None:
    fake_model.queue(Script(status=401, error="Incorrect API key provided"))

    with pytest.raises(ModelError, match="the API key was refused") as caught:
        await model_for(fake_model).complete(HELLO)

    assert not isinstance(caught.value, ModelUnavailable)
    assert len(fake_model.requests) == 1


@pytest.mark.parametrize(
    ("status", "words"),
    [(401, "the API key was refused"), (403, "may not use this model"), (404, "not found")],
)
async def test_a_primary_that_is_not_allowed_is_replaced_by_the_first_fallback_that_answers(
    fake_model: FakeModel, status: int, words: str
) -> None:
    fake_model.brain = by_model(
        primary=Script(status=status, error="not for you"),
        down=Script(status=503),
        backup=Script("from backup"),
    )
    fallbacks = ("openai/down", BACKUP)

    completion = await model_for(fake_model, fallbacks=fallbacks).complete(HELLO, on_delta=None)

    assert completion.content == "from backup" and completion.model == BACKUP
    assert completion.stood_in is not None
    assert (completion.stood_in.primary, completion.stood_in.model) == (PRIMARY, BACKUP)
    assert words in completion.stood_in.reason and PRIMARY not in completion.stood_in.reason
    assert [r.model for r in fake_model.requests] == ["primary", "down", "backup"]


async def test_a_not_allowed_primary_with_no_fallback_answering_names_each(
    fake_model: FakeModel,
) -> None:
    fake_model.brain = by_model(primary=Script(status=403), backup=Script(status=404))

    with pytest.raises(ModelError) as caught:
        await model_for(fake_model, fallbacks=(BACKUP,)).complete(HELLO)

    assert f"{PRIMARY}: the API key may not use this model (HTTP 403)" in str(caught.value)
    assert f"no fallback answered: {BACKUP}: the model was not found" in str(caught.value)


async def test_a_transient_failure_is_no_stand_in(fake_model: FakeModel) -> None:
    fake_model.brain = by_model(primary=Script(status=500), backup=Script("ok"))

    completion = await model_for(fake_model, fallbacks=(BACKUP,)).complete(HELLO)

    assert completion.model == BACKUP and completion.stood_in is None


@pytest.mark.parametrize("status", [400, 401, 403, 404, 500, 503])
async def test_api_key_never_appears_in_errors_even_when_the_server_echoes_it(
    fake_model: FakeModel, status: int
) -> None:
    fake_model.brain = lambda request: Script(status=status, error=f"bad key {KEY} for this")

    with pytest.raises(ModelError) as caught:
        await model_for(fake_model, fallbacks=(BACKUP,)).complete(HELLO)

    assert KEY not in full_text(caught.value)


async def test_missing_api_key_is_a_model_error_not_an_outage(
    fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = ModelClient(PRIMARY, fallbacks=(BACKUP,), api_base=fake_model.api_base)

    with pytest.raises(ModelError, match="before reaching the model") as caught:
        await model.complete(HELLO)

    assert not isinstance(caught.value, ModelUnavailable)
    assert fake_model.requests == []


async def test_error_after_an_unreachable_primary_names_both(fake_model: FakeModel) -> None:
    fake_model.brain = by_model(primary=Script(status=503), backup=Script(status=401))

    with pytest.raises(ModelError) as caught:
        await model_for(fake_model, fallbacks=(BACKUP,)).complete(HELLO)

    assert f"{BACKUP}: the API key was refused" in str(caught.value)
    assert f"{PRIMARY}: HTTP 503" in str(caught.value)


@pytest.mark.parametrize("streamed", [False, True])
async def test_cancelling_a_hanging_call_ends_promptly_and_closes_the_request(
    fake_model: FakeModel, streamed: bool
) -> None:
    fake_model.brain = lambda request: Script(hang=True)

    async def ignore(_text: str) -> None:
        pass

    call = asyncio.create_task(
        model_for(fake_model, fallbacks=(BACKUP,)).complete(
            HELLO, on_delta=ignore if streamed else None
        )
    )
    await fake_model.wait_until_in_flight()
    call.cancel()

    async with asyncio.timeout(2):
        with pytest.raises(asyncio.CancelledError):
            await call
    await fake_model.wait_for_disconnects(1, timeout=2)
    assert len(fake_model.requests) == 1  # cancelling is not a reason to try the fallback


async def test_cancelling_mid_stream_closes_the_request(fake_model: FakeModel) -> None:
    fake_model.queue(Script(text="half an answer", hang=True))
    first_delta = asyncio.Event()

    async def on_delta(_text: str) -> None:
        first_delta.set()

    call = asyncio.create_task(model_for(fake_model).complete(HELLO, on_delta=on_delta))
    async with asyncio.timeout(5):
        await first_delta.wait()
    call.cancel()

    async with asyncio.timeout(2):
        with pytest.raises(asyncio.CancelledError):
            await call
    await fake_model.wait_for_disconnects(1, timeout=2)


async def test_stream_broken_after_text_went_out_is_not_repeated_by_a_fallback(
    fake_model: FakeModel,
) -> None:
    fake_model.brain = by_model(
        primary=Script(text="half an answer", hang=True), backup=Script("x")
    )

    async def ignore(_text: str) -> None:
        pass

    model = model_for(fake_model, fallbacks=(BACKUP,), timeout=0.5)
    with pytest.raises(ModelError, match="stopped answering part-way") as caught:
        await model.complete(HELLO, on_delta=ignore)

    assert not isinstance(caught.value, ModelUnavailable)
    assert requests_for(fake_model, "backup") == []


async def test_error_raised_by_on_delta_propagates_without_fallback(fake_model: FakeModel) -> None:
    fake_model.reply("some text")

    async def on_delta(_text: str) -> None:
        raise RuntimeError("the chat went away")

    with pytest.raises(RuntimeError, match="the chat went away"):
        await model_for(fake_model, fallbacks=(BACKUP,)).complete(HELLO, on_delta=on_delta)

    assert len(fake_model.requests) == 1


async def test_ping_asks_for_one_token_and_names_the_model_that_answered(
    fake_model: FakeModel,
) -> None:
    fake_model.brain = by_model(primary=Script(status=503), backup=Script("p"))

    answered = await model_for(fake_model, fallbacks=(BACKUP,)).ping()

    assert answered == BACKUP
    assert all(r.body["max_tokens"] == 1 for r in fake_model.requests)


async def test_ping_of_an_unreachable_model_says_why() -> None:
    model = ModelClient(PRIMARY, api_base=closed_port_base(), api_key=KEY)

    with pytest.raises(ModelUnavailable, match="connection refused"):
        await model.ping()
