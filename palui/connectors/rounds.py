"""A tool call driven round by round (the 2026 protocol's input-required results), so a server's
question is asked with what continues the call after a restart: the round's opaque
`request_state` and the tool's arguments go with the question's row.

A server of the older revision may instead refuse a call until the person has opened a page
(error -32042, "URL elicitation required"): the pages are asked like URL-mode questions, and
once each is done (the person's "✅ Done" or the server's completion notice) the call is sent
again, as the protocol suggests; a page declined or cancelled ends the call with that.

The SDK would drive the rounds itself, but through a callback that never sees the state; here
each round's questions are asked one after another (a person answers one card at a time), a
request for the workspace's roots gets none, and a request to sample a model is refused (Palui
lends no model to a server). A server that speaks only the older revision never returns such a
result: its questions arrive on the session (`Questions.asker`) and the call is one round.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from dataclasses import dataclass
from typing import Any

import mcp.types as mcp_types
from mcp import Client
from mcp.client.session import ProgressFnT
from mcp.shared.exceptions import MCPError, UrlElicitationRequiredError
from pydantic import ValidationError

from palui.connectors.asked import Asked, Round
from palui.connectors.content import outcome_text
from palui.connectors.elicitation import ASKING, CALL_CLOCK, Asking, CallClock, Questions, asked_of
from palui.domain import ToolOutcome
from palui.domain.questions import StoredQuestion
from palui.domain.waits import counted
from palui.logs import get_logger

log = get_logger("palui.connectors.connector")

MAX_ROUNDS = 8
STATE_ONLY_WAIT_S = 0.25  # a round with only a state: the server is still working


@dataclass(frozen=True, slots=True)
class Seed:
    """Where a call continues: the answers to its last round and the server's state."""

    responses: dict[str, mcp_types.InputResponse]
    request_state: str | None


async def call_in_rounds(
    client: Client,
    connector_id: str,
    questions: Questions | None,
    tool: str,
    arguments: dict[str, Any],
    *,
    limit: float,
    meta: mcp_types.RequestParamsMeta | None,
    seed: Seed | None = None,
    progress: ProgressFnT | None = None,
) -> mcp_types.CallToolResult:
    responses = seed.responses if seed is not None else None
    state = seed.request_state if seed is not None else None
    for _ in range(MAX_ROUNDS):
        try:
            result = await client.session.call_tool(
                tool,
                arguments,
                read_timeout_seconds=limit,
                progress_callback=progress,
                input_responses=responses,
                request_state=state,
                meta=meta,
                allow_input_required=True,
            )
        except MCPError as exc:
            if exc.code != mcp_types.URL_ELICITATION_REQUIRED or questions is None:
                raise
            refused = await _open_pages(connector_id, questions, exc)
            if refused is not None:
                return refused
            continue  # every page is done: the same request again
        if not isinstance(result, mcp_types.InputRequiredResult):
            return result
        state, responses = result.request_state, {}
        if not result.input_requests:
            await asyncio.sleep(STATE_ONLY_WAIT_S)
        for key, request in (result.input_requests or {}).items():
            if isinstance(request, mcp_types.ListRootsRequest):
                responses[key] = mcp_types.ListRootsResult(roots=[])
            elif isinstance(request, mcp_types.ElicitRequest) and questions is not None:
                answered = {
                    k: v.model_dump(mode="json", by_alias=True, exclude_none=True)
                    for k, v in responses.items()
                    if isinstance(v, mcp_types.ElicitResult)
                }
                round_ = Round(tool, arguments, key, state, answered)
                responses[key] = await questions.ask(connector_id, request.params, round_)
            else:
                raise MCPError(mcp_types.INVALID_REQUEST, f"{connector_id} asked for a model")
    raise MCPError(mcp_types.INTERNAL_ERROR, f"still asking after {MAX_ROUNDS} rounds")


async def _open_pages(
    connector_id: str, questions: Questions, exc: MCPError
) -> mcp_types.CallToolResult | None:
    """The pages a -32042 refusal names, asked one after another; the call's result when one
    is not opened (None: all of them are done)."""
    try:
        pages = UrlElicitationRequiredError.from_error(exc.error).elicitations
    except (ValueError, ValidationError):
        raise exc from None  # a malformed refusal is reported as the refusal it is
    for params in pages:
        answer = await questions.ask(connector_id, params)
        if answer.action != "accept":
            said = "declined" if answer.action == "decline" else "cancelled"
            text = f"The person {said} opening the page {connector_id} asked for first."
            return mcp_types.CallToolResult(
                content=[mcp_types.TextContent(type="text", text=text)], is_error=True
            )
    return None


async def continued_seed(
    connector_id: str, questions: Questions, stored: StoredQuestion
) -> tuple[Round, Seed] | None:
    """An answer given after a restart: the rest of the form asked (in this task), and what
    continues the call from the round the question came from."""
    asked = asked_of(stored)
    if asked is None or asked.round_ is None or stored.answer is None:
        return None
    answer = json.loads(stored.answer)
    reset = ASKING.set(Asking(stored.chat_id, stored.user_id, stored.turn_id))
    try:
        if answer["action"] == "accept" and isinstance(asked, Asked):
            content = {**asked.content, asked.field.name: answer["value"]}
            result = await questions.ask(connector_id, asked.params, asked.round_, content)
        else:  # a page opened (URL mode carries no content), or the form not answered
            result = mcp_types.ElicitResult(action=answer["action"])
    finally:
        ASKING.reset(reset)
    round_ = asked.round_
    responses: dict[str, mcp_types.InputResponse] = {
        k: mcp_types.ElicitResult.model_validate(v) for k, v in round_.answered.items()
    }
    responses[round_.key] = result
    return round_, Seed(responses, round_.request_state)


async def run_call(
    client: Client,
    connector_id: str,
    questions: Questions | None,
    tool: str,
    arguments: dict[str, Any],
    *,
    limit: float,
    meta: mcp_types.RequestParamsMeta | None,
    seed: Seed | None = None,
    progress: ProgressFnT | None = None,
) -> ToolOutcome:
    """One tool call within `limit` seconds (paused while a person answers the server).
    Server-side failures come back as error outcomes; a timeout raises TimeoutError (the action
    may have happened); cancellation propagates."""
    late = f"{connector_id}__{tool} gave no answer within {limit:g} s"
    try:
        async with asyncio.timeout(limit) as timeout:
            reset = CALL_CLOCK.set(clock := CallClock())
            try:
                with counted(timeout):
                    result = await call_in_rounds(
                        client,
                        connector_id,
                        questions,
                        tool,
                        arguments,
                        limit=limit,
                        meta=meta,
                        seed=seed,
                        progress=progress,
                    )
            finally:
                CALL_CLOCK.reset(reset)
    except TimeoutError as exc:
        raise TimeoutError(late) from exc
    except MCPError as exc:
        if exc.code == mcp_types.REQUEST_TIMEOUT:
            raise TimeoutError(late) from exc
        if exc.code == mcp_types.CONNECTION_CLOSED:
            text = f"{connector_id} lost its connection during the call; it may or may not have run"
            return ToolOutcome(text, True)
        return ToolOutcome(f"{connector_id} refused the call: {exc.message}", True)
    except ValidationError:
        return ToolOutcome(f"{connector_id} answered with a malformed result", True)
    except Exception as exc:  # the server's answer broke the SDK's rules; report, don't crash
        log.warning("connector_call_failed", connector=connector_id, tool=tool, error=repr(exc))
        return ToolOutcome(f"{connector_id}__{tool} failed: {type(exc).__name__}: {exc}", True)
    outcome = outcome_text(result)
    if clock.asked.is_set():
        return dataclasses.replace(outcome, untrusted=True)  # it carries the server's words
    return outcome
