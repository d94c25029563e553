"""Operator hooks for the pipeline tests, named by dotted path in palui.toml
(e.g. `tests.hooks_fixture:block_deletes`). `SEEN` keeps every call a hook was shown."""

from __future__ import annotations

import asyncio
import threading

from palui.tools.hooks import Block, Rewrite, Supply, ToolCall, ToolResult

SEEN: list[ToolCall] = []


def block_deletes(call: ToolCall) -> Block | None:
    SEEN.append(call)
    if call.tool.endswith("__delete_note"):
        return Block("deleting notes is switched off by the operator")
    return None


async def tag_titles(call: ToolCall) -> Rewrite | None:
    SEEN.append(call)
    if call.tool.endswith("__add_note"):
        return Rewrite({**call.arguments, "title": f"[bot] {call.arguments.get('title', '')}"})
    return None


def cached_list(call: ToolCall) -> Supply | None:
    if call.tool.endswith("__list_notes"):
        return Supply("1: Groceries (from the operator's cache)")
    return None


def redact_groceries(call: ToolCall, result: ToolResult) -> ToolResult:
    return ToolResult(
        result.text.replace("Groceries", "[redacted]"), result.is_error, result.status
    )


async def explode_after(call: ToolCall, result: ToolResult) -> ToolResult:
    raise ValueError(f"can't parse {result.status} result")


def explode(call: ToolCall) -> None:
    if call.tool.endswith("__add_note"):
        raise RuntimeError("the payments API key is missing")


async def hang(call: ToolCall) -> None:
    if call.tool.endswith("__delete_note"):
        await asyncio.Event().wait()


def hang_blocking(call: ToolCall) -> None:
    if call.tool.endswith("__search_notes"):
        threading.Event().wait()  # a plain function that never returns


not_callable = 42


def block_secret_listing(call: ToolCall) -> Block | None:
    """For palui__run_code's bridge: its calls meet the operator's hooks too."""
    SEEN.append(call)
    if call.tool == "palui__list_jobs" and call.arguments.get("why") == "secret":
        return Block("the operator keeps secret listings to themselves")
    return None


def label_status(call: ToolCall, result: ToolResult) -> ToolResult:
    """Shows what a post hook is given of a call that failed or timed out."""
    return ToolResult(f"[{result.status}] {result.text}", result.is_error, result.status)
