"""How a model call failed, in Palui's words: unreachable (the next fallback may be tried), not
allowed (a fallback may stand in), or refused (a `ModelError` at once), with the provider's own
words shortened and never the API key. Shared by both routes (`openai_http`, `via_litellm`) and
by speech and transcription."""

from __future__ import annotations

import re
from collections.abc import Iterator

from palui.errors import ModelError

REDACTED = "[redacted]"
_MAX_DETAIL = 300
# litellm's classes for "not allowed" answers, by name (a refusal without an HTTP status counts).
_NOT_ALLOWED = {"AuthenticationError", "PermissionDeniedError", "NotFoundError"}


class Unreachable(Exception):
    """This model could not be reached (the argument says why); the next may be tried."""


class NotAllowed(ModelError):
    """The model answered that this key may not use it, or that it does not exist."""


def refusal(status: int | None, detail: str) -> str:
    """What a refusal means to the operator, by its HTTP status (None: no answer came)."""
    if status == 401:
        return "the API key was refused (HTTP 401)"
    if status == 403:
        return f"the API key may not use this model (HTTP 403): {detail}"
    if status == 404:
        return f"the model was not found (HTTP 404): {detail}"
    if status is not None:
        return f"the request was refused (HTTP {status}): {detail}"
    return f"the call failed before reaching the model: {detail}"


def status_unreachable(status: int) -> str | None:
    """The reason to try the next model for an HTTP status, or None when the model refused."""
    if status == 429:
        return "HTTP 429 (rate limited)"
    if status >= 500:
        return f"HTTP {status}"
    return None


def redact(text: str, key: str | None) -> str:
    return text.replace(key, REDACTED) if key else text


def short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_DETAIL else text[: _MAX_DETAIL - 1] + "…"


def causes(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def unreachable_reason(error: BaseException, timeout: float) -> str | None:
    """A short reason when the model could not be reached, else None (it refused the call)."""
    # Matched by class name: the classes live in openai, httpx and aiohttp, which are the
    # libraries' to choose (litellm reports a refused connection as InternalServerError, 500).
    names = {type(e).__name__ for e in causes(error)}
    if any(isinstance(e, ConnectionRefusedError) for e in causes(error)):
        return "connection refused"
    if isinstance(error, TimeoutError) or names & {"Timeout", "APITimeoutError"}:
        return f"timed out after {timeout:g} s"
    if names & {
        "ServerDisconnectedError",
        "RemoteProtocolError",
        "ReadError",
        "ClientPayloadError",
        "ClientOSError",
    }:
        return "the server closed the connection"
    if names & {"APIConnectionError", "ConnectError", "ClientConnectorError"}:
        return "could not connect"
    status = http_status(error)
    return status_unreachable(status) if status is not None else None


def not_allowed(error: BaseException) -> bool:
    """The provider said this key may not use the model, or that there is no such model."""
    if http_status(error) in (401, 403, 404):
        return True
    return any(k.__name__ in _NOT_ALLOWED for cause in causes(error) for k in type(cause).__mro__)


def http_status(error: BaseException) -> int | None:
    """The status of the HTTP answer behind a library's error; None if no answer came back.

    litellm's own `status_code` can't be trusted for this: it reports client-side failures
    (missing credentials, a refused connection) as 500.
    """
    for cause in causes(error):
        if any(k.__name__ == "HTTPStatusError" for k in type(cause).__mro__):  # httpx's
            status = getattr(getattr(cause, "response", None), "status_code", None)
            if isinstance(status, int):
                return status
    return None


def body_message(body: object) -> str | None:
    """The provider's own words in an OpenAI-style error body ({"error": {"message": …}})."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return short(inner["message"])
        if isinstance(inner, str):
            return short(inner)
    return None


def server_message(error: BaseException) -> str:
    """The provider's own words behind a library's error, when its body carries them."""
    for cause in causes(error):
        found = body_message(getattr(cause, "body", None))
        if found is not None:
            return found
    text = str(getattr(error, "message", None) or error)
    # litellm prefixes its class names: "litellm.BadRequestError: OpenAIException - <words>".
    text = text.rsplit("Exception - ", 1)[-1]
    return short(re.sub(r"^(litellm\.)?\w+Error: ", "", text))
