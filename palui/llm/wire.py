"""The OpenAI wire format: messages and tools out, completions and streamed chunks back. Both
routes speak it: `openai_http` with the JSON as parsed (dicts), `via_litellm` with litellm's
response objects (attributes); `_at` reads either."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from palui.domain import Completion, Message, Role, ToolCallRequest, ToolSpec, Usage
from palui.errors import ModelError


def to_openai(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role.value, "content": message.content}
    if message.images:  # OpenAI-style content parts: the text, then each image
        images = [{"type": "image_url", "image_url": {"url": url}} for url in message.images]
        out["content"] = [{"type": "text", "text": message.content}, *images]
    if message.role is Role.ASSISTANT and message.tool_calls:
        out["content"] = message.content or None
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.tool_calls
        ]
    if message.role is Role.TOOL:
        out["tool_call_id"] = message.tool_call_id
    elif message.name:
        out["name"] = message.name
    return out


def tool_to_openai(tool: ToolSpec) -> dict[str, Any]:
    parameters = tool.parameters or {"type": "object", "properties": {}}
    function = {"name": tool.name, "description": tool.description, "parameters": parameters}
    return {"type": "function", "function": function}


def _at(raw: Any, key: str) -> Any:
    """A field of a parsed JSON object or of litellm's object for it; None when absent."""
    return raw.get(key) if isinstance(raw, dict) else getattr(raw, key, None)


def _usage(raw: Any) -> Usage:
    prompt = _at(raw, "prompt_tokens") or 0
    return Usage(int(prompt), int(_at(raw, "completion_tokens") or 0))


def from_response(model: str, response: Any) -> Completion:
    choices = _at(response, "choices")
    if not choices:
        raise ModelError(f"{model} returned no answer")
    choice = choices[0]
    message = _at(choice, "message") or {}
    calls = tuple(
        ToolCallRequest(
            id=_at(call, "id") or f"call_{index}",
            name=_at(_at(call, "function"), "name") or "",
            arguments=_at(_at(call, "function"), "arguments") or "{}",
        )
        for index, call in enumerate(_at(message, "tool_calls") or ())
    )
    return Completion(
        model=model,
        content=_at(message, "content") or "",
        tool_calls=calls,
        usage=_usage(_at(response, "usage")),
        finish_reason=_at(choice, "finish_reason"),
    )


@dataclass(slots=True)
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Stream:
    """Gathers a streamed answer chunk by chunk."""

    model: str
    text: list[str] = field(default_factory=list)
    calls: dict[int, _PartialCall] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None

    @property
    def started(self) -> bool:
        return bool(self.text)

    def add(self, chunk: Any) -> str:
        """Take in one chunk; return its text delta ("" if none)."""
        raw_usage = _at(chunk, "usage")
        if raw_usage is not None and _usage(raw_usage).total_tokens:
            self.usage = _usage(raw_usage)
        choices = _at(chunk, "choices")
        if not choices:
            return ""
        choice = choices[0]
        self.finish_reason = _at(choice, "finish_reason") or self.finish_reason
        delta = _at(choice, "delta") or {}
        for position, call in enumerate(_at(delta, "tool_calls") or ()):
            index = _at(call, "index")
            partial = self.calls.setdefault(position if index is None else index, _PartialCall())
            partial.id = partial.id or _at(call, "id") or ""
            function = _at(call, "function") or {}
            partial.name = partial.name or (_at(function, "name") or "")
            partial.arguments.append(_at(function, "arguments") or "")
        text = _at(delta, "content") or ""
        if text:
            self.text.append(text)
        return text

    def completion(self) -> Completion:
        calls = tuple(
            ToolCallRequest(
                id=partial.id or f"call_{index}",
                name=partial.name,
                arguments="".join(partial.arguments) or "{}",
            )
            for index, partial in sorted(self.calls.items())
        )
        return Completion(
            model=self.model,
            content="".join(self.text),
            tool_calls=calls,
            usage=self.usage,
            finish_reason=self.finish_reason,
        )
