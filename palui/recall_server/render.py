"""Memories as text a model (or a person) reads easily, and as plain data for structured content."""

from __future__ import annotations

from typing import TypedDict

from palui.recall_server.store import Memory

SNIPPET_CHARS = 80
# Provenance over MCP `_meta`, the keys Palui's connector uses too (palui.connectors.content):
# add_memory's listing says it keeps the origin a request's `_meta` carries; a result lists the
# untrusted origins of the memories it shows, so the host taints the turn that reads them.
KEEPS_ORIGIN_META = "palui/keeps-origin"
ORIGIN_META = "palui/origin"
ORIGINS_META = "palui/untrusted-origins"


class MemoryData(TypedDict):
    id: int
    content: str
    source_id: str | None
    tags: list[str]
    kind: str
    created_at: str
    origin: str | None


class Saved(TypedDict):
    memory: MemoryData
    created: bool


class Found(TypedDict):
    memories: list[MemoryData]


class Page(TypedDict):
    memories: list[MemoryData]
    total: int
    offset: int


class Forgotten(TypedDict):
    memory: MemoryData


def data(memory: Memory) -> MemoryData:
    return MemoryData(
        id=memory.id,
        content=memory.content,
        source_id=memory.source_id,
        tags=list(memory.tags),
        kind=str(memory.kind),
        created_at=memory.created_at,
        origin=memory.origin,
    )


def line(memory: Memory) -> str:
    """`#12 (2025-03-01; tags: profile, family) My sister Rina ...`, later lines indented."""
    about = memory.created_at[:10]
    if memory.tags:
        about += "; tags: " + ", ".join(memory.tags)
    if memory.origin:
        about += f"; saved from untrusted content: {memory.origin}"
    content = memory.content.replace("\n", "\n    ")
    return f"#{memory.id} ({about}) {content}"


def origins(memories: list[Memory]) -> list[str]:
    """The untrusted origins among these memories, each once, in order."""
    return list(dict.fromkeys(m.origin for m in memories if m.origin))


def listing(heading: str, memories: list[Memory]) -> str:
    return "\n".join([heading, *(line(memory) for memory in memories)])


def short(text: str) -> str:
    """The text on one line, cut to SNIPPET_CHARS."""
    text = " ".join(text.split())
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1] + "…"


def quoted(text: str) -> str:
    return '"' + short(text) + '"'


def count(memories: list[Memory]) -> str:
    return "1 memory" if len(memories) == 1 else f"{len(memories)} memories"
