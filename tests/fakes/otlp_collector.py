"""A fake OpenTelemetry collector on loopback: takes OTLP/HTTP trace exports (protobuf) as the
real exporter sends them and keeps each span as plain data for a test to read."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass
class Span:
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def _attributes(items: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in items}


class FakeCollector:
    def __init__(self) -> None:
        self.spans: list[Span] = []
        self._changed = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/traces", self._export)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}/v1/traces"

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def wait_for(self, done: Callable[[list[Span]], bool], timeout: float = 30) -> None:  # noqa: ASYNC109
        async with asyncio.timeout(timeout):
            while not done(self.spans):
                self._changed.clear()
                await self._changed.wait()

    async def _export(self, request: web.Request) -> web.Response:
        export = ExportTraceServiceRequest()
        export.ParseFromString(await request.read())
        for resource in export.resource_spans:
            for scope in resource.scope_spans:
                for s in scope.spans:
                    ids = s.trace_id.hex(), s.span_id.hex(), s.parent_span_id.hex()
                    events = [(e.name, _attributes(e.attributes)) for e in s.events]
                    self.spans.append(Span(s.name, *ids, _attributes(s.attributes), events))
        self._changed.set()
        body = ExportTraceServiceResponse().SerializeToString()
        return web.Response(body=body, content_type="application/x-protobuf")
