"""A fake OpenAI-compatible chat-completions server on loopback, scripted by a "brain".

Real clients (litellm, the openai SDK) talk to it over HTTP, so tests exercise the same
request/response/streaming code paths as production without reaching the network:

    async with FakeModel() as fake:
        fake.queue(Script(tool_calls=[("mcp-notes__search", '{"q": "x"}')]), "done")
        model = ModelClient("openai/fake", api_base=fake.api_base, api_key="sk-test")
        ...
        await fake.wait_for_request(count=2)

A brain is `callable(ModelRequest) -> Script | Awaitable[Script]`; `reply()` and `queue()` set
common ones. Every request is recorded in `requests`; `in_flight` and `disconnects` let a test
see a slow call start and a cancelled client go away, waiting on events rather than sleeping.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from aiohttp import web

from tests.fakes.speech import FakeSpeech
from tests.fakes.transcriptions import FakeTranscriptions

__all__ = ["Brain", "FakeModel", "ModelRequest", "Script"]


@dataclass(frozen=True, slots=True)
class Script:
    """How the fake answers one request."""

    text: str = ""
    tool_calls: Sequence[tuple[str, str]] = ()  # (name, arguments as JSON text)
    delay: float = 0  # seconds before answering; a client that goes away ends the wait
    status: int = 200
    error: str = ""  # the error message when status is not 200
    usage: tuple[int, int] | None = None  # (prompt, completion); None = estimate from lengths
    # Never finish (until the client goes away or the server stops). A streamed answer sends
    # its text first, then hangs before the final chunk.
    hang: bool = False
    drop: bool = False  # close the connection without answering, like a server that crashed
    # A streamed answer sends its text, then waits for this event before the final chunk: a
    # slow answer whose end the test decides (an event, not a sleep).
    gate: asyncio.Event | None = None
    finish_reason: str | None = None  # None = "tool_calls" when there are tool calls, else "stop"
    piece_delay: float = 0  # seconds between a streamed answer's pieces (a slow stream)


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One request as the fake received it."""

    path: str
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self.body.get("tools") or [])

    @property
    def tool_names(self) -> list[str]:
        return [tool["function"]["name"] for tool in self.tools]

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def last_user_text(self) -> str:
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return _text_of(message.get("content"))
        return ""


Brain = Callable[[ModelRequest], Script | Awaitable[Script]]

_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_denied", None),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


class FakeModel:
    """The fake server. Start it with `async with FakeModel() as fake` or `start()`/`stop()`."""

    def __init__(self, *, models: Sequence[str] = ("fake-model",)) -> None:
        self.models = tuple(models)
        self.brain: Brain = _echo
        self.requests: list[ModelRequest] = []
        self.in_flight = 0
        self.disconnects = 0
        self.transcriptions = FakeTranscriptions()  # POST /v1/audio/transcriptions
        self.speech = FakeSpeech()  # POST /v1/audio/speech
        self._changed = asyncio.Event()
        self._stopping = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/models", self._models)
        self.transcriptions.add_routes(app)
        self.speech.add_routes(app)
        # handler_cancellation: a client that goes away cancels its handler, which is how
        # `disconnects` learns of a cancelled call.
        self._runner = web.AppRunner(
            app, handler_cancellation=True, access_log=None, shutdown_timeout=0.5
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._port = self._runner.addresses[0][1]

    async def stop(self) -> None:
        self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeModel:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    @property
    def api_base(self) -> str:
        if self._port is None:
            raise RuntimeError("FakeModel is not started")
        return f"http://127.0.0.1:{self._port}/v1"

    # -- scripting -----------------------------------------------------------------------------

    def reply(self, text: str) -> None:
        """Answer every request with `text`."""
        script = Script(text=text)
        self.brain = lambda _request: script

    def queue(self, *scripts: Script | str) -> None:
        """Answer requests with these scripts in order; past the end, answer HTTP 500."""
        pending = deque(Script(text=s) if isinstance(s, str) else s for s in scripts)

        def brain(_request: ModelRequest) -> Script:
            if not pending:
                return Script(status=500, error="fake model: no scripted answer left")
            return pending.popleft()

        self.brain = brain

    # -- waiting (event-based, never polling) --------------------------------------------------
    # A `timeout` argument (ASYNC109) keeps test lines short and makes a hung wait fail with
    # the fake's state in the message instead of a bare TimeoutError.

    async def wait_for_request(self, count: int = 1, timeout: float = 30) -> ModelRequest:  # noqa: ASYNC109
        """Wait until `count` requests arrived in all; return the `count`-th."""
        await self._wait(lambda: len(self.requests) >= count, timeout, f"{count} request(s)")
        return self.requests[count - 1]

    async def wait_for(
        self,
        done: Callable[[], bool],
        what: str = "a condition",
        timeout: float = 30,  # noqa: ASYNC109
    ) -> None:
        """Wait until `done()` holds; it is checked again on every request and answer."""
        await self._wait(done, timeout, what)

    async def wait_until_in_flight(self, timeout: float = 30, count: int = 1) -> None:  # noqa: ASYNC109
        """Wait until `count` requests are being answered at once (e.g. a slow call started)."""
        await self._wait(lambda: self.in_flight >= count, timeout, f"{count} in flight")

    async def wait_for_disconnects(self, count: int = 1, timeout: float = 30) -> None:  # noqa: ASYNC109
        """Wait until `count` clients went away before getting their answer."""
        await self._wait(lambda: self.disconnects >= count, timeout, f"{count} disconnect(s)")

    async def _wait(self, done: Callable[[], bool], within: float, what: str) -> None:
        try:
            async with asyncio.timeout(within):
                while not done():
                    await self._changed.wait()
        except TimeoutError:
            raise AssertionError(
                f"FakeModel: waited {within:g} s for {what}; requests={len(self.requests)} "
                f"in_flight={self.in_flight} disconnects={self.disconnects}"
            ) from None

    def _notify(self) -> None:
        # Wake every waiter, then hand later waiters a fresh event: no lock needed.
        self._changed.set()
        self._changed = asyncio.Event()

    # -- handlers ------------------------------------------------------------------------------

    async def _models(self, _request: web.Request) -> web.Response:
        data = [{"id": name, "object": "model", "owned_by": "fake"} for name in self.models]
        return web.json_response({"object": "list", "data": data})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except ValueError:
            return _error_response(400, "request body is not JSON")
        if not isinstance(body, dict):
            return _error_response(400, "request body must be a JSON object")
        recorded = ModelRequest(path=request.path, body=body, headers=dict(request.headers))
        self.requests.append(recorded)
        self.in_flight += 1
        self._notify()
        try:
            return await self._answer(request, recorded, len(self.requests))
        except (asyncio.CancelledError, ConnectionResetError):
            if not self._stopping.is_set():
                self.disconnects += 1
            raise
        finally:
            self.in_flight -= 1
            self._notify()

    async def _answer(
        self, request: web.Request, recorded: ModelRequest, number: int
    ) -> web.StreamResponse:
        try:
            script = self.brain(recorded)
            if inspect.isawaitable(script):
                script = await script
        except Exception as exc:  # a broken brain is a test bug: say so loudly in the answer
            return _error_response(500, f"fake model brain failed: {exc!r}")
        if script.delay:
            await asyncio.sleep(script.delay)
        if script.drop:
            assert request.transport is not None
            request.transport.close()
            return web.Response(status=500)  # never reaches the client
        if script.hang and not (recorded.stream and script.text):
            await self._stopping.wait()
            return _error_response(503, "fake model stopped")
        if script.status != 200:
            return _error_response(script.status, script.error)
        if recorded.stream:
            return await self._stream(request, recorded, script, number)
        return web.json_response(_completion(recorded, script, number))

    async def _stream(
        self, request: web.Request, recorded: ModelRequest, script: Script, number: int
    ) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        for chunk in _chunks(recorded, script, number):
            final = bool(chunk["choices"] and chunk["choices"][0]["finish_reason"])
            if script.hang and final:
                await self._stopping.wait()
                return response
            if script.gate is not None and final:
                await _first(script.gate.wait(), self._stopping.wait())
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
            if script.piece_delay and chunk["choices"] and chunk["choices"][0]["delta"]:
                await asyncio.sleep(script.piece_delay)
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


async def _first(*waits: Any) -> None:
    """Wait until the first of `waits` is done; cancel the others."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()


# -- response bodies ---------------------------------------------------------------------------


def _echo(request: ModelRequest) -> Script:
    return Script(text=f"echo: {request.last_user_text}")


def _text_of(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def _usage(recorded: ModelRequest, script: Script) -> dict[str, int]:
    if script.usage is not None:
        prompt, completion = script.usage
    else:  # roughly four characters a token, like the real thing
        prompt_chars = sum(len(_text_of(m.get("content"))) for m in recorded.messages)
        answer_chars = len(script.text) + sum(len(n) + len(a) for n, a in script.tool_calls)
        prompt = max(1, prompt_chars // 4)
        completion = (answer_chars + 3) // 4
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _finish_reason(script: Script) -> str:
    if script.finish_reason is not None:
        return script.finish_reason
    return "tool_calls" if script.tool_calls else "stop"


def _call_id(number: int, index: int) -> str:
    return f"call_{number}_{index}"


def _completion(recorded: ModelRequest, script: Script, number: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": script.text or None}
    if script.tool_calls:
        message["tool_calls"] = [
            {
                "id": _call_id(number, i),
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
            for i, (name, arguments) in enumerate(script.tool_calls)
        ]
    return {
        "id": f"chatcmpl-fake-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": recorded.model,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish_reason(script)}],
        "usage": _usage(recorded, script),
    }


def _pieces(text: str) -> list[str]:
    """Split text into several deltas (word by word) the way a real stream arrives."""
    return re.findall(r"\s*\S+\s*", text) or ([text] if text else [])


def _chunks(recorded: ModelRequest, script: Script, number: int) -> Iterator[dict[str, Any]]:
    base = {
        "id": f"chatcmpl-fake-{number}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": recorded.model,
    }

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

    yield chunk({"role": "assistant", "content": ""})
    for piece in _pieces(script.text):
        yield chunk({"content": piece})
    for index, (name, arguments) in enumerate(script.tool_calls):
        head = {
            "index": index,
            "id": _call_id(number, index),
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        yield chunk({"tool_calls": [head]})
        half = len(arguments) // 2
        for part in (arguments[:half], arguments[half:]):
            if part:
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
    yield chunk({}, _finish_reason(script))
    options = recorded.body.get("stream_options") or {}
    if options.get("include_usage"):
        yield {**base, "choices": [], "usage": _usage(recorded, script)}


def _error_response(status: int, message: str) -> web.Response:
    kind, code = _ERROR_TYPES.get(status, ("server_error" if status >= 500 else "error", None))
    body = {
        "error": {
            "message": message or f"fake model error {status}",
            "type": kind,
            "param": None,
            "code": code,
        }
    }
    return web.json_response(body, status=status)
