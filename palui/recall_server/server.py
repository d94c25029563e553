"""The recall MCP server: six memory tools over one MemoryStore.

Tool names, arguments and annotations are the recall contract Palui's memory connector relies on
(DESIGN §1.7): `forget_memory` is the one destructive tool; the four lookups are read-only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Annotated, Any, TypeVar

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from palui.recall_server import render
from palui.recall_server.render import Forgotten, Found, Page, Saved
from palui.recall_server.store import (
    MAX_CONTENT_CHARS,
    MAX_LIMIT,
    MAX_TAGS,
    PROFILE_TAG,
    InvalidInput,
    Memory,
    MemoryStore,
)

T = TypeVar("T")

READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
# Saving twice without a source_id stores two memories, so add_memory is not idempotent.
WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
DESTRUCTIVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)

INSTRUCTIONS = (
    "Long-term memory for one person. Save lasting facts with add_memory (tag facts about the "
    f"person themselves '{PROFILE_TAG}'); look them up with search_memories, ask_memory or "
    "get_profile."
)

Limit = Field(ge=1, le=MAX_LIMIT, description=f"How many memories to return (1-{MAX_LIMIT}).")


def build_server(store: MemoryStore) -> MCPServer:
    # The SDK logs every refused call at INFO, and a stdio server's stderr is the host's log.
    server = MCPServer("recall", instructions=INSTRUCTIONS, log_level="WARNING")

    # The host, not the model, says where a memory's content came from: in the request's
    # `_meta` (never an argument, which the model writes), and the listing says it is kept.
    @server.tool(
        annotations=WRITE.model_copy(update={"title": "Save a memory"}),
        meta={render.KEEPS_ORIGIN_META: True},
    )
    async def add_memory(
        content: Annotated[
            str, Field(min_length=1, max_length=MAX_CONTENT_CHARS, description="What to remember.")
        ],
        source_id: Annotated[
            str | None,
            Field(
                description="Where this memory comes from. A source_id that was saved before "
                "is not saved again: the call returns the memory already saved under it."
            ),
        ] = None,
        tags: Annotated[
            list[str],
            Field(
                max_length=MAX_TAGS,
                description=f"Labels for filtering; '{PROFILE_TAG}' marks a fact about the "
                "person (name, preferences, people around them).",
            ),
        ] = [],  # noqa: B006 - never mutated; pydantic copies it into each call's arguments
        ctx: Context | None = None,
    ) -> CallToolResult:
        """Remember something for later conversations."""
        memory, created = await _off_loop(store.add, content, source_id, tags, _origin(ctx))
        if created:
            text = f"Saved memory #{memory.id}."
        else:
            text = (
                f"Already saved as memory #{memory.id} (source_id {render.quoted(source_id or '')})"
                "; nothing changed."
            )
        return _result(text, Saved(memory=render.data(memory), created=created))

    @server.tool(annotations=READ.model_copy(update={"title": "Search memories"}))
    async def search_memories(
        query: Annotated[str, Field(description="Words to look for.")],
        limit: Annotated[int, Limit] = 10,
    ) -> CallToolResult:
        """Find memories by their words: those holding every word first, best match first."""
        memories = await _off_loop(store.search, query, limit)
        if not memories:
            return _result(f"No memory matches {render.quoted(query)}.", _found([]))
        heading = f"{render.count(memories)} for {render.quoted(query)}, best match first:"
        return _result(render.listing(heading, memories), _found(memories), memories)

    @server.tool(annotations=READ.model_copy(update={"title": "Ask memory"}))
    async def ask_memory(
        question: Annotated[str, Field(description="A question in plain words.")],
        limit: Annotated[int, Limit] = 5,
    ) -> CallToolResult:
        """The memories that best answer a question, best first."""
        memories = await _off_loop(store.ask, question, limit)
        if not memories:
            return _result("No memory matches that question.", _found([]))
        heading = f"Memories that may answer {render.quoted(question)}:"
        return _result(render.listing(heading, memories), _found(memories), memories)

    @server.tool(annotations=READ.model_copy(update={"title": "Get the person's profile"}))
    async def get_profile(
        query: Annotated[
            str | None,
            Field(description="Optional: a message or topic; memories about it come first."),
        ] = None,
        limit: Annotated[int, Limit] = 10,
    ) -> CallToolResult:
        """What is known about the person: their profile memories, and with a query, the
        memories that match it."""
        memories = await _off_loop(store.profile, query, limit)
        if not memories:
            return _result("Nothing is known about the person yet.", _found([]))
        text = render.listing("What is known about the person:", memories)
        return _result(text, _found(memories), memories)

    @server.tool(annotations=READ.model_copy(update={"title": "List memories"}))
    async def list_memories(
        limit: Annotated[int, Field(ge=1, le=MAX_LIMIT, description="Page size.")] = 20,
        offset: Annotated[int, Field(ge=0, description="How many to skip.")] = 0,
        tag: Annotated[str | None, Field(description="Only memories with this tag.")] = None,
    ) -> CallToolResult:
        """Memories, newest first, a page at a time."""
        memories, total = await _off_loop(store.page, limit, offset, tag)
        tagged = f" tagged {render.quoted(tag)}" if tag is not None else ""
        structured = Page(memories=[render.data(m) for m in memories], total=total, offset=offset)
        if not memories:
            text = f"No memories{tagged}." if total == 0 else f"No memories{tagged} past {offset}."
            return _result(text, structured)
        first, last = offset + 1, offset + len(memories)
        heading = f"Memories{tagged} {first}-{last} of {total}, newest first:"
        return _result(render.listing(heading, memories), structured, memories)

    @server.tool(annotations=DESTRUCTIVE.model_copy(update={"title": "Forget a memory"}))
    async def forget_memory(
        id: Annotated[int, Field(ge=1, description="The memory's number, as in #12.")],
    ) -> CallToolResult:
        """Delete a memory for good."""
        memory = await _off_loop(store.forget, id)
        if memory is None:
            raise ToolError(f"There is no memory #{id} (it may have been forgotten already).")
        text = f"Forgot memory #{memory.id}: {render.short(memory.content)}"
        return _result(text, Forgotten(memory=render.data(memory)), [memory])

    return server


async def _off_loop(function: Callable[..., T], *args: object) -> T:
    """Run a blocking store call in a worker thread; bad input becomes a tool error."""
    try:
        return await anyio.to_thread.run_sync(partial(function, *args))
    except InvalidInput as exc:
        raise ToolError(str(exc)) from None


def _origin(ctx: Context | None) -> str | None:
    """The untrusted origin the host sent with the call (None: the person's own words)."""
    meta = ctx.request_context.meta if ctx is not None else None
    origin = meta.get(render.ORIGIN_META) if isinstance(meta, dict) else None
    return origin if isinstance(origin, str) and origin.strip() else None


def _found(memories: list[Memory]) -> Found:
    return Found(memories=[render.data(memory) for memory in memories])


def _result(
    text: str, structured: Mapping[str, Any], shown: list[Memory] | None = None
) -> CallToolResult:
    """Readable text for the model, and the same answer as data for programs; the untrusted
    origins of the memories `shown` go in the result's `_meta` for the host.

    The tools publish no output schema on purpose: the SDK's client checks every result against
    one with jsonschema, which costs more than the search itself (~3 ms for 10 memories).
    """
    origins = render.origins(shown or [])
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=dict(structured),
        _meta={render.ORIGINS_META: origins} if origins else None,
    )
