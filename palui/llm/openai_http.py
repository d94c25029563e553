"""The direct route: an OpenAI-compatible endpoint over aiohttp (`/chat/completions`, and
`/audio/…` for transcription and speech), for the models litellm itself would send to its
OpenAI provider (`openai/…`, and OpenAI's own bare names such as `gpt-4.1-mini`).

Why not through litellm: importing litellm loads every provider it knows (~140 MB of RSS,
3 s), and its per-call work was over half the daemon's CPU under load; for this one wire format
Palui needs none of it. What litellm did here is kept: the same address and key resolution
(`api_base`, else OPENAI_BASE_URL / OPENAI_API_BASE, else OpenAI's; `api_key`, else
OPENAI_API_KEY; OPENAI_ORGANIZATION), the provider prefix stripped, usage asked of streams
(`stream_options.include_usage`), one request per attempt (litellm's retries were off too), and
the same failure classes (`palui.llm.failures`). Fallbacks, stand-ins and the time bound stay
in `ModelClient`, above both routes.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import AsyncGenerator
from typing import Any
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

import aiohttp
from aiohttp.http_exceptions import LineTooLong

from palui.domain import Completion
from palui.errors import ModelError
from palui.llm.failures import (
    NotAllowed,
    Unreachable,
    body_message,
    redact,
    refusal,
    short,
    status_unreachable,
    unreachable_reason,
)
from palui.llm.wire import Stream, from_response
from palui.ports import DeltaHandler

OPENAI_BASE = "https://api.openai.com/v1"
_PREFIX = "openai/"
# Bare names litellm routes to OpenAI (gpt-4.1, o3-mini, chatgpt-4o-latest, whisper-1, tts-1).
_OPENAI_NAMES = re.compile(r"(gpt-|chatgpt-|o\d|whisper-|tts-)")
_REASONING = re.compile(r"(o\d|gpt-5)")
_JSON = "application/json"
_MAX_EVENT = 16 << 20
_MAX_ANSWER = 64 << 20  # no model answers this much: past it, a server that never stops
_CONNECTIONS = 1000  # as the OpenAI SDK under litellm: chats never queue for a socket


def speaks_openai(model: str) -> bool:
    """Whether litellm would send `model` to its OpenAI provider: this route's models."""
    return model.startswith(_PREFIX) or ("/" not in model and bool(_OPENAI_NAMES.match(model)))


def proxy_for(url: str) -> str | None:
    """The proxy for `url` from HTTPS_PROXY / HTTP_PROXY / ALL_PROXY unless NO_PROXY exempts
    its host: the variables httpx (under litellm) honoured."""
    parts = urlsplit(url)
    if parts.hostname and proxy_bypass(parts.hostname):
        return None
    proxies = getproxies()
    return proxies.get(parts.scheme) or proxies.get("all")


def wire_name(model: str) -> str:
    """The model's name on the wire: litellm's provider prefix is litellm's, not the API's."""
    return model.removeprefix(_PREFIX)


class OpenAIHttp:
    """One attempt at a chat completion on an OpenAI-compatible endpoint. Raises `Unreachable`
    (try the next model), `NotAllowed` or `ModelError`; errors of `on_delta` pass through."""

    def __init__(self, api_base: str | None, api_key: str | None, timeout: float) -> None:
        self._api_base = api_base
        self._api_key = api_key
        self._timeout = timeout
        self._session: aiohttp.ClientSession | None = None
        self._proxies: dict[str, str | None] = {}  # by base address

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def attempt(
        self,
        model: str,
        request: dict[str, Any],
        on_delta: DeltaHandler | None,
        stream: Stream,
    ) -> Completion:
        body = {**request, "model": wire_name(model)}
        if "max_tokens" in body and _REASONING.match(body["model"]):
            # OpenAI's reasoning models refuse max_tokens (litellm renames it the same way).
            body["max_completion_tokens"] = body.pop("max_tokens")
        if on_delta is None:
            raw = await self.post(model, "/chat/completions", json_body=body)
            return _completion(model, raw)
        body |= {"stream": True, "stream_options": {"include_usage": True}}
        response = await self._send(model, "/chat/completions", json.dumps(body), _JSON)
        if response.content_type == _JSON:  # a server that does not stream answers whole
            completion = _completion(model, await self._read_whole(model, response))
            if completion.content:
                await on_delta(completion.content)
            return completion
        try:
            async with contextlib.aclosing(self._events(model, response)) as events:
                async for chunk in events:
                    text = stream.add(chunk)
                    if text:
                        await on_delta(text)
            return stream.completion()
        finally:
            _end(response)

    async def post(
        self,
        model: str,
        path: str,
        *,
        json_body: dict[str, Any] | None = None,
        form: aiohttp.FormData | None = None,
    ) -> bytes:
        """One request answered whole (a completion, a transcript, speech): the answer's bytes.
        Raises `Unreachable`, `NotAllowed` or `ModelError`."""
        if json_body is not None:
            response = await self._send(model, path, json.dumps(json_body), _JSON)
        else:
            response = await self._send(model, path, form, None)
        return await self._read_whole(model, response)

    async def _read_whole(self, model: str, response: aiohttp.ClientResponse) -> bytes:
        """The answer's body, at most `_MAX_ANSWER` bytes (a server sending without end fails
        the call instead of filling the daemon's memory); the response is ended after it."""
        parts: list[bytes] = []
        size = 0
        try:
            async for part in response.content.iter_any():
                size += len(part)
                if size > _MAX_ANSWER:
                    raise ModelError(f"{model}: the answer was over {_MAX_ANSWER >> 20} MiB")
                parts.append(part)
        except (aiohttp.ClientError, OSError) as error:
            raise self._failed(error) from None
        finally:
            _end(response)
        return b"".join(parts)

    async def _send(
        self, model: str, path: str, data: Any, content_type: str | None
    ) -> aiohttp.ClientResponse:
        """The answer to one POST whose status says it was taken (the caller ends it)."""
        key = self._api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            detail = "no API key (set PALUI_MODEL_API_KEY or OPENAI_API_KEY)"
            raise ModelError(f"{model}: {refusal(None, detail)}")
        headers = {"Authorization": f"Bearer {key}"}
        if content_type is not None:
            headers["Content-Type"] = content_type
        if organization := os.environ.get("OPENAI_ORGANIZATION"):
            headers["OpenAI-Organization"] = organization
        base = self._base()
        if base not in self._proxies:
            self._proxies[base] = proxy_for(base)
        try:
            response = await self._open().post(
                f"{base}{path}",
                data=data,
                headers=headers,
                proxy=self._proxies[base],
                # A redirect is the operator's address to fix, not one to follow with the key.
                allow_redirects=False,
            )
        except (aiohttp.ClientError, OSError) as error:
            raise self._failed(error) from None
        if response.status >= 300:
            try:
                raise await self._refused(model, response, key)
            finally:
                _end(response)
        return response

    def _base(self) -> str:
        base = (
            self._api_base
            or os.environ.get("OPENAI_BASE_URL")
            or os.environ.get("OPENAI_API_BASE")
            or OPENAI_BASE
        )
        return base.rstrip("/")

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                # Each read and the connect bounded; the whole call is `ModelClient`'s.
                timeout=aiohttp.ClientTimeout(
                    total=None, sock_connect=self._timeout, sock_read=self._timeout
                ),
                connector=aiohttp.TCPConnector(limit=_CONNECTIONS),
                # Not aiohttp's trust_env: it reads ~/.netrc and the proxy variables again for
                # every request, in a thread (~4 % of the daemon's CPU under load). The proxy
                # is read once per address instead (`proxy_for`).
                trust_env=False,
            )
        return self._session

    async def _events(
        self, model: str, response: aiohttp.ClientResponse
    ) -> AsyncGenerator[dict[str, Any], None]:
        """The server-sent chunks until `[DONE]` or the end; at most `_MAX_ANSWER` bytes in all."""
        size = 0
        while True:
            try:
                # aiohttp's default bound on a line is less than one event of a server that
                # sends a long answer in one piece.
                line = await response.content.readline(max_line_length=_MAX_EVENT)
            except (aiohttp.ClientError, OSError) as error:
                raise self._failed(error) from None
            except LineTooLong:
                raise ModelError(
                    f"{model}: an event of the answer was over {_MAX_EVENT >> 20} MiB"
                ) from None
            size += len(line)
            if size > _MAX_ANSWER:
                raise ModelError(f"{model}: the answer was over {_MAX_ANSWER >> 20} MiB")
            if not line:
                return
            text = line.decode(errors="replace").strip()
            if not text.startswith("data:"):
                continue  # blank lines, `event:` lines, comments (": keep-alive")
            data = text[5:].strip()
            if data == "[DONE]":
                return
            try:
                chunk = json.loads(data)
            except ValueError:
                continue  # a provider's non-JSON notice; the chunks around it still count
            if isinstance(chunk, dict) and "error" in chunk:
                words = body_message(chunk) or "an error"
                raise Unreachable(f"the model reported {words}")
            if isinstance(chunk, dict):
                yield chunk

    async def _refused(self, model: str, response: aiohttp.ClientResponse, key: str) -> Exception:
        status = response.status
        reason = status_unreachable(status)
        if reason is not None:
            return Unreachable(reason)
        try:
            raw = await self._read_whole(model, response)
        except (Unreachable, ModelError):
            raw = b""  # the status alone says enough
        try:
            detail = body_message(json.loads(raw))
        except ValueError:
            detail = None
        words = redact(detail or short(raw.decode(errors="replace")) or response.reason or "", key)
        if 300 <= status < 400:
            words = f"redirected to {response.headers.get('Location', 'another address')}"
        error = NotAllowed if status in (401, 403, 404) else ModelError
        return error(f"{model}: {refusal(status, words)}")

    def _failed(self, error: BaseException) -> Unreachable:
        return Unreachable(unreachable_reason(error, self._timeout) or "could not connect")


def _completion(model: str, raw: bytes) -> Completion:
    try:
        payload = json.loads(raw)
    except ValueError:
        words = short(raw.decode(errors="replace"))
        raise ModelError(f"{model}: the answer was not JSON: {words}") from None
    if isinstance(payload, dict) and "error" in payload and not payload.get("choices"):
        # Some gateways answer an upstream failure with HTTP 200 and an error body.
        raise Unreachable(f"the model reported {body_message(payload) or 'an error'}")
    return from_response(model, payload)


def _end(response: aiohttp.ClientResponse) -> None:
    """Closed, not pooled, unless read to its end: a cancelled or broken answer ends its HTTP
    request, so the server stops generating."""
    if response.content.at_eof():
        response.release()
    else:
        response.close()
