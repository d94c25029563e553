"""The operator's rules around every tool call (DESIGN §1.6): the pre and post hooks, the
guards and the daily send cap, as palui.toml configures them. `palui.tools.runner.CallRunner`
runs the steps in order; each is written to the call's record (`palui.tools.record`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from palui.domain import CallStage, CallStatus, Taint, ToolCallRequest, ToolOutcome
from palui.errors import GuardRejected, HookFailed
from palui.policy.classes import Classification
from palui.policy.destinations import refused_destination
from palui.tools import provenance
from palui.tools.arguments import parse_arguments
from palui.tools.guards import Guards, missing_for_a_form
from palui.tools.hooks import (
    DEFAULT_TIMEOUT_S,
    Block,
    Hook,
    Rewrite,
    Supply,
    ToolCall,
    ToolResult,
    load_hooks,
    run_post,
    run_pre,
)
from palui.tools.record import CallRecord, CallStore
from palui.tools.registry import OfferedTool

Notify = Callable[[int, str], Awaitable[Any]]


class _Settings(Protocol):
    @property
    def daily_send_cap(self) -> int: ...

    @property
    def send_cap_exempt(self) -> frozenset[str]: ...

    @property
    def guards(self) -> Any: ...

    @property
    def hooks(self) -> Any: ...


@dataclass(frozen=True, slots=True)
class ToolRules:
    pre_hooks: tuple[Hook, ...] = ()
    post_hooks: tuple[Hook, ...] = ()
    hook_timeout_s: float = DEFAULT_TIMEOUT_S
    guards: Guards = field(default_factory=Guards)
    daily_send_cap: int = 0  # 0 = unlimited
    send_cap_exempt: frozenset[str] = frozenset()  # tools sending from the person's own mailbox

    @classmethod
    def from_settings(cls, settings: _Settings) -> ToolRules:
        """Import the hooks (ConfigError if one can't be imported) and read the guards."""
        return cls(
            load_hooks(settings.hooks.pre),
            load_hooks(settings.hooks.post),
            settings.hooks.timeout_s,
            Guards.from_settings(settings),
            settings.daily_send_cap,
            frozenset(settings.send_cap_exempt),
        )

    def counts_to_cap(self, tool: str, classification: Classification | None) -> bool:
        """Whether a call of this tool counts to the daily send cap: one that sends a message
        to someone (a write or destructive call that sends out), unless the operator named the
        tool as sending from the person's own mailbox. A read that reaches a URL does not."""
        if classification is None or not classification.sends_out:
            return False
        return classification.tool_class != "read" and tool not in self.send_cap_exempt


@dataclass(frozen=True, slots=True)
class Settled:
    """A call a pre hook settled without running it."""

    status: CallStatus  # blocked, supplied or hook_failed
    outcome: ToolOutcome


async def pre_hooks(
    rules: ToolRules, view: ToolCall, record: CallRecord, call: ToolCallRequest, step: int
) -> tuple[dict[str, Any], Settled | None]:
    """Run the pre hooks in order: the (maybe rewritten) arguments, or how the call was settled
    when a hook blocked it, supplied its result, or failed (closed)."""
    arguments = dict(view.arguments)
    for hook in rules.pre_hooks:
        try:
            result = await run_pre(hook, view, rules.hook_timeout_s)
        except HookFailed as exc:
            await record.stage(
                call, step, CallStage.HOOK, "failed", exc.reason, {"hook": hook.path}
            )
            return arguments, Settled(
                CallStatus.HOOK_FAILED,
                ToolOutcome(
                    f"Error: {call.name} was not run because a safety check failed "
                    f"({exc.reason}). Tell the user; don't retry it.",
                    is_error=True,
                ),
            )
        if isinstance(result, Block):
            await record.stage(
                call, step, CallStage.HOOK, "blocked", result.reason, {"hook": hook.path}
            )
            return arguments, Settled(
                CallStatus.BLOCKED,
                ToolOutcome(
                    f"Error: {call.name} was blocked by the operator's rules: {result.reason}",
                    is_error=True,
                ),
            )
        if isinstance(result, Supply):
            await record.stage(
                call,
                step,
                CallStage.HOOK,
                "supplied",
                "the hook supplied the result",
                {"hook": hook.path, "result": result.result[:2000]},
            )
            return arguments, Settled(
                CallStatus.SUPPLIED, ToolOutcome(result.result, result.is_error)
            )
        if isinstance(result, Rewrite):
            new = dict(result.arguments)
            await record.stage(
                call,
                step,
                CallStage.HOOK,
                "rewritten",
                "the hook rewrote the arguments",
                {"hook": hook.path, "before": arguments, "after": new},
            )
            arguments = new
            view = ToolCall(**{**_fields(view), "arguments": new})
    return arguments, None


def _fields(view: ToolCall) -> dict[str, Any]:
    return {name: getattr(view, name) for name in ToolCall.__dataclass_fields__}


async def post_hooks(
    rules: ToolRules,
    view: ToolCall,
    result: ToolResult,
    record: CallRecord,
    call: ToolCallRequest,
    step: int,
) -> ToolOutcome:
    """Run the post hooks in order; a failing one withholds the result (fail closed)."""
    for hook in rules.post_hooks:
        try:
            adjusted = await run_post(hook, view, result, rules.hook_timeout_s)
        except HookFailed as exc:
            await record.stage(
                call, step, CallStage.POST_HOOK, "failed", exc.reason, {"hook": hook.path}
            )
            return ToolOutcome(
                f"Error: {call.name} ran, but its result was withheld because a safety check "
                f"failed ({exc.reason}). The action may have happened: don't repeat it without "
                "checking, and tell the user.",
                is_error=True,
            )
        if adjusted != result:
            await record.stage(
                call,
                step,
                CallStage.POST_HOOK,
                "adjusted",
                "the hook adjusted the result",
                {"hook": hook.path, "before": result.text[:2000], "after": adjusted.text[:2000]},
            )
            result = adjusted
    return ToolOutcome(result.text, result.is_error)


async def guard_arguments(
    rules: ToolRules,
    record: CallRecord,
    call: ToolCallRequest,
    step: int,
    tool: OfferedTool,
    arguments: dict[str, Any],
    taint: Taint | None,
    *,
    forms: bool,
) -> dict[str, Any] | list[str] | ToolOutcome:
    """The guards (DESIGN §1.6 step 2): the final arguments; or, where a person is there to
    fill them in (`forms`), the required arguments the call lacks (it opens a form); or the
    outcome of a call they refuse."""
    guards = rules.guards
    schema = tool.remote.input_schema or {}
    missing = missing_for_a_form({**arguments, **guards.pinned(call.name)}, schema)
    if missing and forms:
        reason = f"missing {', '.join(missing)}: asked in a form"
        await record.stage(call, step, CallStage.GUARD, "form", reason)
        return missing
    try:
        final = guards.apply(call.name, arguments, schema)
        final = provenance.stamped(tool, final, taint)  # a memory write's origin
    except GuardRejected as exc:
        await record.stage(
            call, step, CallStage.GUARD, "rejected", exc.message, {"arguments": arguments}
        )
        await record.settled(call, step, CallStatus.REJECTED, f"guard: {exc.message}")
        return ToolOutcome(f"Error: {call.name} was not run. {exc.message}", is_error=True)
    if guards.configured(call.name) or final != arguments:
        pinned = guards.pinned(call.name)
        reason = f"pinned {', '.join(sorted(pinned))}" if pinned else "the arguments passed"
        await record.stage(
            call,
            step,
            CallStage.GUARD,
            "pinned" if pinned else "passed",
            reason,
            {"before": arguments, "after": final},
        )
    return final


def day_of(now: datetime) -> tuple[datetime, str]:
    start = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return start, start.date().isoformat()


async def send_cap_refusal(
    rules: ToolRules,
    store: CallStore | None,
    notify: Notify | None,
    chat_id: int,
    now: datetime,
) -> str | None:
    """Why a sending call can't go out today, or None. The chat is told once a day."""
    cap = rules.daily_send_cap
    if not cap:
        return None
    if store is None:
        return "the daily send cap can't be counted here"  # fail closed
    start, day = day_of(now)
    sent = await store.sends_since(start, rules.send_cap_exempt)
    if sent < cap:
        return None
    reset = start + timedelta(days=1)
    minutes = max(int((reset - now).total_seconds() // 60), 1)
    if notify is not None and await store.first_cap_notice(chat_id, day):
        await notify(
            chat_id,
            f"Today's send cap is used up: {cap} calls that send something out have gone out. "
            f"Tools that send out are refused until 00:00 UTC (in {minutes // 60} h "
            f"{minutes % 60} min). The limit is limits.daily_send_cap in palui.toml.",
        )
    return (
        f"today's limit of {cap} outgoing sends is used up (it resets at 00:00 UTC). Nothing "
        "was sent. Don't retry today; tell the user"
    )


@dataclass(frozen=True, slots=True)
class Refused:
    """Why a call can't go out: the stage that refused it, in the words of its record."""

    stage: CallStage
    label: str
    verb: str
    reason: str


async def outgoing_refusal(
    rules: ToolRules,
    store: CallStore | None,
    notify: Notify | None,
    chat_id: int,
    now: datetime,
    tool: str,
    classification: Classification | None,
    input_schema: dict[str, Any],
    arguments: dict[str, Any],
) -> Refused | None:
    """The destination guard (a tool that does not send out is handed no address) and the
    daily send cap (for a call that sends a message to someone): why the call can't go out,
    or None."""
    if classification is None:
        return None
    if not classification.sends_out:
        refusal = refused_destination(input_schema, arguments)
        if refusal is None:
            return None
        return Refused(CallStage.DESTINATION, "destination guard", "was refused", refusal)
    if not rules.counts_to_cap(tool, classification):
        return None
    refusal = await send_cap_refusal(rules, store, notify, chat_id, now)
    if refusal is None:
        return None
    return Refused(CallStage.SEND_CAP, "send cap", "was not run", refusal)


async def refuse_outgoing(
    rules: ToolRules,
    record: CallRecord,
    notify: Notify | None,
    chat_id: int,
    now: datetime,
    call: ToolCallRequest,
    step: int,
    classification: Classification | None,
    input_schema: dict[str, Any],
    arguments: dict[str, Any],
) -> ToolOutcome | None:
    """The destination guard and the daily send cap (DESIGN §1.6), recorded: the outcome of a
    call that can't go out, or None."""
    refused = await outgoing_refusal(
        rules,
        record.store,
        notify,
        chat_id,
        now,
        call.name,
        classification,
        input_schema,
        arguments,
    )
    if refused is None:
        return None
    await record.stage(call, step, refused.stage, "refused", refused.reason)
    await record.settled(call, step, CallStatus.REJECTED, f"{refused.label}: {refused.reason}")
    return ToolOutcome(f"Error: {call.name} {refused.verb}: {refused.reason}.", is_error=True)


async def guards_again(
    rules: ToolRules, record: CallRecord, call: ToolCallRequest, step: int, tool: OfferedTool
) -> ToolOutcome | None:
    """An approved call's guards, checked once more (cheap): if they would now change or refuse
    it, it no longer matches what was approved, and it doesn't run (its outcome; else None)."""
    try:
        arguments = parse_arguments(call.arguments)
        final = rules.guards.apply(call.name, arguments, tool.remote.input_schema or {})
    except (ValueError, GuardRejected) as exc:
        reason = exc.message if isinstance(exc, GuardRejected) else str(exc)
        await record.stage(call, step, CallStage.GUARD, "rejected", reason)
        await record.settled(call, step, CallStatus.REJECTED, f"guard: {reason}")
        return ToolOutcome(f"Error: {call.name} was not run. {reason}", is_error=True)
    if final != arguments:
        reason = "the operator's pinned values changed after the card was approved"
        await record.stage(call, step, CallStage.GUARD, "rejected", reason)
        await record.settled(call, step, CallStatus.REJECTED, f"guard: {reason}")
        return ToolOutcome(f"Error: {call.name} was not run: {reason}.", is_error=True)
    return None
