"""Which route a model takes, and what each keeps: models in OpenAI's format go straight over
HTTP without loading litellm; every other provider goes through litellm, set up as Palui wants
it (no pricing, one request per attempt)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import textwrap
from asyncio.subprocess import PIPE
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web

from palui.domain import Completion, Message, Role, Usage
from palui.errors import ModelError, ModelUnavailable
from palui.llm import ModelClient
from palui.llm.openai_http import proxy_for, speaks_openai
from palui.llm.speech import ModelSpeaker
from palui.llm.transcription import ModelTranscriber, model_sees_images
from tests.fakes.model_server import FakeModel, Script

KEY = "sk-test-DoNotLeakThisKey0123456789"
HELLO = [Message(Role.USER, "hello")]


async def ignore(_text: str) -> None:
    pass


@pytest.mark.parametrize(
    ("model", "direct"),
    [
        ("openai/gpt-4.1-mini", True),
        ("openai/anything-an-endpoint-serves", True),
        ("gpt-4o", True),
        ("o3-mini", True),
        ("chatgpt-4o-latest", True),
        ("anthropic/claude-sonnet-4", False),
        ("hosted_vllm/llama", False),
        ("openrouter/openai/gpt-4o", False),
        ("claude-3-5-sonnet", False),
        ("ollama/llama3", False),
    ],
)
def test_only_models_litellm_would_send_to_openai_take_the_direct_route(
    model: str, direct: bool
) -> None:
    assert speaks_openai(model) is direct


def test_the_client_says_how_each_model_is_called() -> None:
    model = ModelClient("openai/gpt-4.1-mini", fallbacks=("anthropic/claude-sonnet-4",))
    everything_via_litellm = ModelClient("openai/gpt-4.1-mini", via_litellm=True)

    assert model.way() == "HTTP" and model.way("anthropic/claude-sonnet-4") == "litellm"
    assert everything_via_litellm.way() == "litellm"


async def test_an_openai_style_deployment_never_imports_litellm(fake_model: FakeModel) -> None:
    """A streamed answer, a whole one, a fallback and the vision lookup: litellm (and the
    OpenAI SDK under it) stay out of the process."""
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        from palui.domain import Message, Role
        from palui.llm import ModelClient
        from palui.llm.transcription import model_sees_images

        async def main():
            model = ModelClient("openai/fake-model", fallbacks=("gpt-4o",),
                                api_base={fake_model.api_base!r}, api_key="sk-test")
            await model.warm_up()
            hello = [Message(Role.USER, "hello")]
            pieces = []
            async def on_delta(text):
                pieces.append(text)
            streamed = await model.complete(hello, on_delta=on_delta)
            whole = await model.complete(hello)
            sees = await model_sees_images("openai/gpt-4o")
            await model.aclose()
            print(streamed.content == whole.content == "".join(pieces) != "", sees)
            print(sorted(m for m in ("litellm", "openai") if m in sys.modules))

        asyncio.run(main())
        """
    )
    fake_model.reply("an answer in pieces")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, stdout=PIPE, stderr=PIPE
    )
    async with asyncio.timeout(60):
        out, err = await process.communicate()

    assert process.returncode == 0, err.decode()
    assert out.decode().split("\n")[:2] == ["True True", "[]"]


async def test_the_direct_route_finds_the_key_and_address_where_litellm_would(
    fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_model.api_base + "/")
    monkeypatch.setenv("OPENAI_ORGANIZATION", "org-palui")
    fake_model.reply("found")
    model = ModelClient("openai/gpt-4.1-mini")

    completion = await model.complete(HELLO)
    await model.aclose()

    request = fake_model.requests[0]
    assert completion.content == "found" and completion.model == "openai/gpt-4.1-mini"
    assert request.model == "gpt-4.1-mini"  # the provider prefix is litellm's, not the wire's
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    assert request.headers["OpenAI-Organization"] == "org-palui"


@contextlib.asynccontextmanager
async def chat_server(
    chat: Callable[[web.Request], Awaitable[web.StreamResponse]],
) -> AsyncIterator[str]:
    """A loopback server answering `/v1/chat/completions` with `chat`; yields its api base."""
    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    finally:
        await runner.cleanup()


@pytest.fixture
async def sse_server() -> AsyncIterator[tuple[str, list[bytes]]]:
    """A server streaming whatever raw event lines a test puts in the list."""
    lines: list[bytes] = []

    async def chat(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for line in lines:
            await response.write(line)
        return response

    async with chat_server(chat) as base:
        yield base, lines


async def streamed_from(base: str) -> tuple[list[str], Completion]:
    """A streamed call to the server at `base`: the pieces shown as they came, and the answer."""
    model = ModelClient("openai/m", api_base=base, api_key=KEY)
    pieces: list[str] = []

    async def on_delta(text: str) -> None:
        pieces.append(text)

    try:
        return pieces, await model.complete(HELLO, on_delta=on_delta)
    finally:
        await model.aclose()


def _event(chunk: dict[str, object]) -> bytes:
    return f"data: {json.dumps(chunk)}\n\n".encode()


async def test_a_stream_with_keep_alive_comments_and_no_done_line_is_read_whole(
    sse_server: tuple[str, list[bytes]],
) -> None:
    base, lines = sse_server
    lines += [
        b": OPENROUTER PROCESSING\n\n",
        _event({"choices": [{"index": 0, "delta": {"content": "one "}}]}),
        b"event: ping\n\n",
        _event({"choices": [{"index": 0, "delta": {"content": "two"}, "finish_reason": "stop"}]}),
        _event({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}),
    ]
    pieces, completion = await streamed_from(base)

    assert pieces == ["one ", "two"] and completion.content == "one two"
    assert completion.usage == Usage(5, 2) and completion.finish_reason == "stop"


async def test_an_error_event_before_any_text_lets_the_fallback_answer_and_after_text_does_not(
    sse_server: tuple[str, list[bytes]],
) -> None:
    base, lines = sse_server
    lines += [_event({"error": {"message": "overloaded"}})]
    model = ModelClient("openai/m", api_base=base, api_key=KEY)

    with pytest.raises(ModelUnavailable, match="the model reported overloaded"):
        await model.complete(HELLO, on_delta=ignore)

    lines[:] = [
        _event({"choices": [{"index": 0, "delta": {"content": "half"}}]}),
        _event({"error": {"message": "overloaded"}}),
    ]
    with pytest.raises(ModelError, match="stopped answering part-way"):
        await model.complete(HELLO, on_delta=ignore)
    await model.aclose()


async def test_a_provider_outside_openais_format_goes_through_litellm(
    fake_model: FakeModel,
) -> None:
    # litellm's hosted_vllm provider speaks OpenAI's format to api_base: the fake can answer.
    model = ModelClient("hosted_vllm/fake-model", api_base=fake_model.api_base, api_key=KEY)
    fake_model.reply("through litellm")

    completion = await model.complete(HELLO, on_delta=ignore)
    await model.aclose()

    assert completion.content == "through litellm"
    assert model._litellm._litellm is sys.modules["litellm"]  # loaded by the call itself


async def test_the_vision_lookup_agrees_with_litellm() -> None:
    import litellm

    for name in ("openai/gpt-4o", "gpt-4o-mini", "openai/fake-model", "gpt-3.5-turbo"):
        assert await model_sees_images(name) is bool(litellm.supports_vision(name)), name
    assert await model_sees_images("openai/fake-model", override=True) is True


async def test_a_streamed_call_through_litellm_records_its_tokens_without_pricing_it(
    fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ModelClient(
        "openai/gpt-4o-mini", api_base=fake_model.api_base, api_key=KEY, via_litellm=True
    )
    litellm = await model._litellm.ready(model.name)
    priced: list[object] = []

    def completion_cost(**call: object) -> float:
        priced.append(call.get("model"))
        return 0.0

    # Where litellm's own pricing ends up, whichever of its paths asks for a price.
    monkeypatch.setattr(litellm.cost_calculator, "completion_cost", completion_cost)
    fake_model.queue(Script(text="priced nowhere", usage=(30, 7)))

    completion = await model.complete(HELLO, on_delta=ignore)

    assert completion.usage == Usage(prompt_tokens=30, completion_tokens=7)
    assert priced == []


@pytest.mark.parametrize("via_litellm", [False, True])
async def test_voice_is_transcribed_and_spoken_alike_on_both_routes(
    fake_model: FakeModel, via_litellm: bool
) -> None:
    base = fake_model.api_base
    transcriber = ModelTranscriber(
        "openai/whisper-1", api_base=base, api_key=KEY, via_litellm=via_litellm
    )
    speaker = ModelSpeaker(
        "openai/tts-1", voice="nova", api_base=base, api_key=KEY, via_litellm=via_litellm
    )
    fake_model.transcriptions.text = " buy milk "

    heard = await transcriber.transcribe(b"OggS voice", "voice.ogg", "audio/ogg")
    spoken = await speaker.speak("Milk is on the list.")

    (upload,) = fake_model.transcriptions.received
    assert heard == "buy milk"
    assert (upload.model, upload.audio, upload.file_name) == (
        "whisper-1",
        b"OggS voice",
        "voice.ogg",
    )
    assert upload.authorization == f"Bearer {KEY}"
    (asked,) = fake_model.speech.received
    assert (asked.model, asked.input, asked.voice, asked.response_format) == (
        "tts-1",
        "Milk is on the list.",
        "nova",
        "opus",
    )
    assert spoken == fake_model.speech.audio("Milk is on the list.")


@pytest.mark.parametrize("via_litellm", [False, True])
async def test_a_refused_transcription_says_why_without_the_key(
    fake_model: FakeModel, via_litellm: bool
) -> None:
    fake_model.transcriptions.status = 401
    fake_model.transcriptions.error = f"bad key {KEY}"
    transcriber = ModelTranscriber(
        "openai/whisper-1", api_base=fake_model.api_base, api_key=KEY, via_litellm=via_litellm
    )

    with pytest.raises(ModelError, match="openai/whisper-1") as caught:
        await transcriber.transcribe(b"OggS voice", "voice.ogg", "audio/ogg")

    assert KEY not in str(caught.value)


@pytest.mark.parametrize(
    ("model", "limit"),
    [("openai/o3-mini", "max_completion_tokens"), ("openai/gpt-4.1", "max_tokens")],
)
async def test_a_reasoning_model_is_pinged_with_the_limit_it_accepts(
    fake_model: FakeModel, model: str, limit: str
) -> None:
    client = ModelClient(model, api_base=fake_model.api_base, api_key=KEY)

    await client.ping()
    await client.aclose()

    assert fake_model.requests[0].body[limit] == 1


@pytest.mark.parametrize(
    ("env", "url", "proxy"),
    [
        ({"HTTPS_PROXY": "http://proxy:3128"}, "https://api.openai.com/v1", "http://proxy:3128"),
        ({"HTTPS_PROXY": "http://proxy:3128"}, "http://127.0.0.1:8000/v1", None),
        ({"ALL_PROXY": "http://proxy:3128"}, "http://models.lan/v1", "http://proxy:3128"),
        (
            {"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "openai.com"},
            "https://api.openai.com/v1",
            None,
        ),
    ],
)
def test_the_direct_route_takes_the_proxy_the_environment_names(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], url: str, proxy: str | None
) -> None:
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY"):
        for variant in (name, name.lower()):
            monkeypatch.delenv(variant, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    assert proxy_for(url) == proxy


@pytest.fixture
async def odd_server() -> AsyncIterator[tuple[str, list[web.Response]]]:
    """A server answering each chat request with the next prepared response."""
    answers: list[web.Response] = []

    async def chat(_request: web.Request) -> web.Response:
        return answers.pop(0)

    async with chat_server(chat) as base:
        yield base, answers


WHOLE = {
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "all at once"}}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 3},
}


async def test_a_server_that_does_not_stream_still_answers_a_streamed_call(
    odd_server: tuple[str, list[web.Response]],
) -> None:
    base, answers = odd_server
    answers.append(web.json_response(WHOLE))
    pieces, completion = await streamed_from(base)

    assert pieces == ["all at once"] and completion.content == "all at once"
    assert completion.usage == Usage(3, 3)


async def test_an_error_answered_with_http_200_lets_the_fallback_answer(
    odd_server: tuple[str, list[web.Response]],
) -> None:
    base, answers = odd_server
    answers += [
        web.json_response({"error": {"message": "upstream overloaded"}}),
        web.json_response(WHOLE),
    ]
    model = ModelClient("openai/m", fallbacks=("openai/n",), api_base=base, api_key=KEY)

    completion = await model.complete(HELLO)
    await model.aclose()

    assert (completion.model, completion.content) == ("openai/n", "all at once")


async def test_a_redirect_is_not_followed_with_the_key(
    odd_server: tuple[str, list[web.Response]],
) -> None:
    base, answers = odd_server
    answers.append(web.Response(status=307, headers={"Location": "http://elsewhere.invalid/v1"}))
    model = ModelClient("openai/m", api_base=base, api_key=KEY)

    with pytest.raises(ModelError, match=r"HTTP 307.*redirected to http://elsewhere.invalid/v1"):
        await model.complete(HELLO)
    await model.aclose()


async def test_a_long_answer_sent_as_one_event_is_read_whole(
    sse_server: tuple[str, list[bytes]],
) -> None:
    base, lines = sse_server
    long_text = "word " * 600_000  # ~3 MB in one event: past aiohttp's default line bound
    lines += [
        _event(
            {"choices": [{"index": 0, "delta": {"content": long_text}, "finish_reason": "stop"}]}
        )
    ]
    model = ModelClient("openai/m", api_base=base, api_key=KEY)

    completion = await model.complete(HELLO, on_delta=ignore)
    await model.aclose()

    assert completion.content == long_text


async def test_a_server_that_never_stops_sending_fails_the_call_not_the_daemons_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from palui.llm import openai_http

    monkeypatch.setattr(openai_http, "_MAX_ANSWER", 1 << 20)  # a smaller bound, same rule
    piece = _event({"choices": [{"index": 0, "delta": {"content": "x" * 1000}}]})

    async def endless(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        while True:
            await response.write(piece)

    async with chat_server(endless) as base, asyncio.timeout(30):  # without a bound: a hang
        model = ModelClient("openai/m", api_base=base, api_key=KEY)
        with pytest.raises(ModelError, match="the answer was over 1 MiB"):
            await model.complete(HELLO)  # whole: a body without end
        with pytest.raises(ModelError, match="the answer was over 1 MiB"):
            await model.complete(HELLO, on_delta=ignore)  # streamed
        await model.aclose()
