"""Pre-tool and post-tool hooks: the operator's own Python, run around every tool call.

Named by dotted path in palui.toml:

    [hooks]
    pre = ["mypkg.hooks:block_big_payments"]
    post = ["mypkg.hooks:redact_tokens"]
    timeout_s = 5

A pre hook is called as `hook(call: ToolCall)` and returns None (pass), `Block(reason)`,
`Rewrite(arguments)` or `Supply(result)`. A post hook is called as
`hook(call: ToolCall, result: ToolResult)` on success and on failure and returns None (keep) or
an adjusted `ToolResult`. Hooks may be plain functions or coroutines. Each is bounded by
`timeout_s`; a hook that raises, hangs or returns something else fails the call closed: the
call does not run (pre) or its result is withheld (post), and the reason is recorded and told
to the model. A hook never crashes the turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from palui.errors import ConfigError, HookFailed

DEFAULT_TIMEOUT_S = 5.0


@dataclass(frozen=True, slots=True)
class ToolCall:
    """What a hook sees of a call."""

    tool: str  # full name, e.g. "mcp-notes__add_note"
    connector: str  # e.g. "mcp-notes" or "palui"
    arguments: Mapping[str, Any]
    tool_class: str  # read | write | destructive
    sends_out: bool
    turn_kind: str  # chat | scheduled | webhook
    tainted: bool
    chat_id: int
    turn_id: str


@dataclass(frozen=True, slots=True)
class Block:
    """Don't run the call; the model is told `reason`."""

    reason: str


@dataclass(frozen=True, slots=True)
class Rewrite:
    """Run the call with these arguments instead (later hooks and the guards see them)."""

    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Supply:
    """Don't run the call; `result` is its result."""

    result: str
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A call's result as a post hook sees it (and may return it adjusted)."""

    text: str
    is_error: bool = False
    status: str = "ok"  # ok | error | timeout


PreResult = Block | Rewrite | Supply | None


@dataclass(frozen=True, slots=True)
class Hook:
    path: str  # "package.module:function"
    func: Callable[..., Any] = field(compare=False)


def load_hook(path: str) -> Hook:
    """Import one hook; ConfigError naming the path and the problem."""
    module_name, _, attribute = path.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise ConfigError(
            f"[hooks]: can't import {module_name!r} for hook {path!r} ({type(exc).__name__}: "
            f"{exc}). Check the module is installed or on PYTHONPATH."
        ) from None
    for part in attribute.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise ConfigError(f"[hooks]: {module_name!r} has no {attribute!r} (hook {path!r}).")
    if not callable(target):
        raise ConfigError(f"[hooks]: {path!r} is not callable.")
    return Hook(path, target)


def load_hooks(paths: Sequence[str]) -> tuple[Hook, ...]:
    return tuple(load_hook(path) for path in paths)


def _in_daemon_thread(func: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
    """Run `func` in its own daemon thread: one that never returns is abandoned at the time
    limit and can't hold up Palui's shutdown (the default executor would wait for it)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():
            return  # timed out already
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def work() -> None:
        try:
            result = func(*args)
            error = None
        except BaseException as exc:
            result, error = None, exc
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
            loop.call_soon_threadsafe(settle, result, error)

    name = getattr(func, "__name__", "hook")
    threading.Thread(target=work, name=f"hook-{name}", daemon=True).start()
    return future


async def _call(hook: Hook, timeout_s: float, *args: Any) -> Any:
    try:
        async with asyncio.timeout(timeout_s):
            if inspect.iscoroutinefunction(hook.func):
                return await hook.func(*args)
            # A plain function runs in a thread, so one that blocks can't stall the loop.
            result = await _in_daemon_thread(hook.func, *args)
            if inspect.isawaitable(result):
                result = await result
            return result
    except TimeoutError:
        raise HookFailed(hook.path, f"did not answer within {timeout_s:g} s") from None
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        raise HookFailed(hook.path, f"raised {type(exc).__name__}: {exc}") from None


async def run_pre(hook: Hook, call: ToolCall, timeout_s: float) -> PreResult:
    result = await _call(hook, timeout_s, call)
    if result is None or isinstance(result, Block | Supply):
        return result
    if isinstance(result, Rewrite):
        if not isinstance(result.arguments, Mapping):
            raise HookFailed(hook.path, "rewrote the arguments to something that is not a mapping")
        try:
            json.dumps(dict(result.arguments))
        except (TypeError, ValueError):
            raise HookFailed(
                hook.path, "rewrote the arguments to values that aren't JSON"
            ) from None
        return result
    raise HookFailed(hook.path, f"returned {type(result).__name__}, not Block, Rewrite or Supply")


async def run_post(hook: Hook, call: ToolCall, result: ToolResult, timeout_s: float) -> ToolResult:
    adjusted = await _call(hook, timeout_s, call, result)
    if adjusted is None:
        return result
    if not isinstance(adjusted, ToolResult):
        raise HookFailed(hook.path, f"returned {type(adjusted).__name__}, not a ToolResult")
    return adjusted
