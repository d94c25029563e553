"""The OpenAI wire format litellm speaks: messages and tools out, completions and streamed
chunks back (used by `LiteLLMModel` only)."""

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


def _usage(raw: Any) -> Usage:
    prompt = getattr(raw, "prompt_tokens", None) or 0
    return Usage(int(prompt), int(getattr(raw, "completion_tokens", None) or 0))


def from_response(model: str, response: Any) -> Completion:
    if not response.choices:
        raise ModelError(f"{model} returned no answer")
    choice = response.choices[0]
    message = choice.message
    calls = tuple(
        ToolCallRequest(
            id=call.id or f"call_{index}",
            name=call.function.name or "",
            arguments=call.function.arguments or "{}",
        )
        for index, call in enumerate(message.tool_calls or ())
    )
    return Completion(
        model=model,
        content=message.content or "",
        tool_calls=calls,
        usage=_usage(getattr(response, "usage", None)),
        finish_reason=choice.finish_reason,
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
        raw_usage = getattr(chunk, "usage", None)
        if raw_usage is not None and _usage(raw_usage).total_tokens:
            self.usage = _usage(raw_usage)
        if not chunk.choices:
            return ""
        choice = chunk.choices[0]
        self.finish_reason = choice.finish_reason or self.finish_reason
        delta = choice.delta
        for position, call in enumerate(getattr(delta, "tool_calls", None) or ()):
            index = call.index if call.index is not None else position
            partial = self.calls.setdefault(index, _PartialCall())
            partial.id = partial.id or call.id or ""
            partial.name = partial.name or (call.function.name or "")
            partial.arguments.append(call.function.arguments or "")
        text = getattr(delta, "content", None) or ""
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
