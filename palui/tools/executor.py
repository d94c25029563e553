"""The one place a tool call goes through: resolve, record, run within a time limit, record.

Every call is recorded *before* it goes out, so a crash or a /stop mid-call leaves a record whose
outcome is unknown rather than no record at all. The policy issue gates calls here, too.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from enum import StrEnum
from typing import Any

from palui.domain import ToolCallRequest, ToolOutcome
from palui.logs import get_logger
from palui.ports import CallRecorder
from palui.tools.registry import ToolOffer

log = get_logger("palui.tools")

UNKNOWN_OUTCOME = (
    "Unknown outcome: the call did not finish in time, so the action may or may not have "
    "happened. Check before retrying, or tell the user."
)


class CallStatus(StrEnum):
    RUNNING = "running"
    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    UNKNOWN = "unknown"  # interrupted mid-flight (/stop, crash): may or may not have happened
    REJECTED = "rejected"  # never sent: not offered, bad arguments


def truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    return f"{text[:limit]}\n[… truncated: {cut:,} more characters]"


def parse_arguments(raw: str) -> dict[str, Any]:
    """The model's JSON arguments; ValueError with a reason the model can act on."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the arguments are not valid JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise ValueError("the arguments must be a JSON object")
    return value


class TurnTools:
    """The tool calls of one turn (implements `palui.ports.ToolRunner`)."""

    def __init__(
        self,
        offer: ToolOffer,
        recorder: CallRecorder,
        turn_id: str,
        *,
        result_limit: int = 16_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.offer = offer
        self._recorder = recorder
        self._turn_id = turn_id
        self._result_limit = result_limit
        self._clock = clock
        self.in_flight: dict[int, str] = {}  # record id -> tool name

    def concurrent_safe(self, name: str) -> bool:
        tool = self.offer.tools.get(name)
        return tool is not None and tool.read_only

    def needs_approval(self, call: ToolCallRequest) -> bool:
        return False

    async def run(self, call: ToolCallRequest, step: int) -> ToolOutcome:
        tool = self.offer.tools.get(call.name)
        if tool is None:
            await self._record_rejected(call, step, "not offered")
            return ToolOutcome(
                f"Error: there is no tool named {call.name!r} in this turn. "
                "Use one of the tools you were given, or answer without a tool.",
                is_error=True,
            )
        try:
            arguments = parse_arguments(call.arguments)
        except ValueError as exc:
            await self._record_rejected(call, step, str(exc))
            return ToolOutcome(f"Error: {exc}. Call {call.name} again with a JSON object.", True)
        record = await self._recorder.call_started(self._turn_id, step, call.name, call.arguments)
        self.in_flight[record] = call.name
        started = self._clock()
        status, outcome = CallStatus.UNKNOWN, ToolOutcome(UNKNOWN_OUTCOME, is_error=True)
        try:
            outcome = await tool.toolset.call(tool.remote.name, arguments)
            status = CallStatus.ERROR if outcome.is_error else CallStatus.OK
        except TimeoutError:
            status = CallStatus.TIMEOUT
            log.warning("tool_timeout", tool=call.name)
        except Exception as exc:
            # A connector should never raise; if one does, the turn goes on without it.
            log.exception("tool_crashed", tool=call.name)
            status = CallStatus.ERROR
            outcome = ToolOutcome(f"Error: the tool failed ({type(exc).__name__}).", True)
        finally:
            # Also on cancellation (/stop): the record must say the outcome is unknown.
            del self.in_flight[record]
            text = truncate(outcome.text, self._result_limit)
            await asyncio.shield(
                self._recorder.call_ended(record, status, text, self._clock() - started)
            )
        log.info("tool_called", tool=call.name, status=status, step=step)
        return ToolOutcome(truncate(outcome.text, self._result_limit), outcome.is_error)

    async def _record_rejected(self, call: ToolCallRequest, step: int, reason: str) -> None:
        name = call.name[:128]  # a name the model invented can be anything
        record = await self._recorder.call_started(self._turn_id, step, name, call.arguments)
        await self._recorder.call_ended(record, CallStatus.REJECTED, reason, 0.0)
