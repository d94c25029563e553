"""Palui's traces: OpenTelemetry spans sent over OTLP/HTTP when `PALUI_OTEL_ENDPOINT` is set, and
nothing at all otherwise (DESIGN §1.13).

A span per turn (`turn`, opened by the chat's worker around the turn and its reply's delivery,
its trace id on every log line inside and on the turn's row, `trace_id`), with children for each
model call (`traced_model`), each tool call (the policy's decision and a card wait as events) and
each reply part sent. Names and classes only: never a call's arguments, a result, a message or a
secret.

The provider is this app's own, not OpenTelemetry's global one. Off, `span` hands back one
shared no-op context and nothing is built per call: the hot path pays a branch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry import trace

from palui.domain import Completion, Message, ToolSpec
from palui.logs import bound
from palui.ports import ChatModel, DeltaHandler

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

_OFF: contextlib.nullcontext[None] = contextlib.nullcontext()


class Tracing:
    def __init__(self, exporter: SpanExporter | None = None) -> None:
        self._provider: TracerProvider | None = None
        self._tracer: trace.Tracer | None = None
        if exporter is not None:
            # The SDK (the provider, its batching): imported only when spans go somewhere; off,
            # the API's current-span lookups (`event`, `traceparent`) are all that runs.
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor

            self._provider = TracerProvider(resource=Resource.create({"service.name": "palui"}))
            self._provider.add_span_processor(BatchSpanProcessor(exporter))
            self._tracer = self._provider.get_tracer("palui")

    @classmethod
    def to(cls, endpoint: str | None) -> Tracing:
        """Spans to an OTLP/HTTP collector at `endpoint` (e.g. http://host:4318/v1/traces);
        None: off."""
        if not endpoint:
            return cls()
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return cls(OTLPSpanExporter(endpoint=endpoint))

    @property
    def on(self) -> bool:
        return self._tracer is not None

    def span(self, name: str, **attributes: Any) -> contextlib.AbstractContextManager[Any]:
        """A child of the current span (a root if none), current inside."""
        if self._tracer is None:
            return _OFF
        return self._tracer.start_as_current_span(name, attributes=attributes)

    @contextlib.contextmanager
    def turn(self, kind: str, chat_id: int) -> Iterator[None]:
        """A turn's span; its log lines carry its trace id."""
        if self._tracer is None:
            yield
            return
        attributes: dict[str, str | int] = {"palui.turn.kind": kind, "palui.chat_id": chat_id}
        with (
            self._tracer.start_as_current_span("palui.turn", attributes=attributes),
            bound(trace_id=trace_id()),
        ):
            yield

    def shutdown(self) -> None:
        """Send what is buffered (blocks: call it off the event loop)."""
        if self._provider is not None:
            self._provider.shutdown()


def event(name: str, **attributes: Any) -> None:
    """An event on the current span, if one is being recorded (else nothing)."""
    span = trace.get_current_span()
    if span.is_recording():
        span.add_event(name, attributes)


def traced_model(model: ChatModel, tracing: Tracing) -> ChatModel:
    """`model` with a span per call (the model that answered and its tokens); as is when off."""
    return _TracedModel(model, tracing) if tracing.on else model


class _TracedModel:
    def __init__(self, model: ChatModel, tracing: Tracing) -> None:
        self._model = model
        self._tracing = tracing
        self.name = model.name

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        on_delta: DeltaHandler | None = None,
    ) -> Completion:
        with self._tracing.span("palui.model", **{"gen_ai.request.model": self.name}) as span:
            completion = await self._model.complete(messages, tools, on_delta=on_delta)
            span.set_attributes(
                {
                    "gen_ai.response.model": completion.model,
                    "gen_ai.usage.input_tokens": completion.usage.prompt_tokens,
                    "gen_ai.usage.output_tokens": completion.usage.completion_tokens,
                    "palui.tool_calls": len(completion.tool_calls),
                }
            )
            return completion

    async def ping(self) -> str:
        return await self._model.ping()


def trace_id() -> str | None:
    """The current span's trace id as its log lines and the turn's row carry it (32 hex
    digits); None when there is none (tracing off, or outside a turn)."""
    context = trace.get_current_span().get_span_context()
    return f"{context.trace_id:032x}" if context.is_valid else None


def traceparent() -> str | None:
    """The current span as W3C trace context (`traceparent`); None when there is none (tracing
    off, or outside a turn)."""
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"
