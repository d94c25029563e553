"""Palui's built-in tools, connector `palui` (DESIGN §1.10), through the same pipeline as MCP
tools: classified by their marks like any tool, so the policy matrix applies unchanged.

- `palui__send_message(chat_id, text)`: write, sends out. Only to chats Palui knows (an allowed
  user's private chat, a chat an allowed user has talked in, a webhook's chat); the text goes
  into the outbox, so it is delivered even across a restart.
- `palui__schedule_job(prompt, schedule, timezone?, daily_token_cap?)`: write.
- `palui__list_jobs()`: read. `palui__delete_job(job_id)`: destructive.
- `palui__delegate(task)`: read; a sub-turn run by the agent loop (palui.agent.subturn).
- `palui__use_skill(name)`, `palui__read_skill_file(name, path)`: read, while a skill is
  trusted (palui.skills).
- `palui__run_code(language, code)`: destructive; only when switched on in palui.toml and the
  sandbox works here (palui.sandbox). From inside, the code may call the read tools above.

Jobs belong to the chat of the turn that made them; a turn sees and deletes only its chat's jobs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from palui.db import Store
from palui.domain import (
    ConnectorState,
    ConnectorStatus,
    RemoteTool,
    ToolOutcome,
    TurnScope,
)
from palui.errors import ScheduleError
from palui.jobs.schedule import check_timezone, parse_schedule
from palui.jobs.view import job_line, next_run, schedule_words, when
from palui.logs import get_logger
from palui.sandbox import RunCode
from palui.skills import SkillTools
from palui.skills.tools import NAMES as SKILL_TOOLS
from palui.tools.delegation import DELEGATE

log = get_logger("palui.builtins")

CONNECTOR_ID = "palui"
MAX_PROMPT = 4_000
MAX_TEXT = 16_000

WRITE = {"readOnlyHint": False, "destructiveHint": False}
SEND = {"readOnlyHint": False, "destructiveHint": False, "openWorldHint": True}
READ = {"readOnlyHint": True}
DESTRUCTIVE = {"readOnlyHint": False, "destructiveHint": True}

TOOLS = (
    RemoteTool(
        "send_message",
        "Send a text message to another chat of the user's (for jobs that report elsewhere). "
        "Only chats Palui already knows can receive it.",
        {
            "type": "object",
            "properties": {
                "chat_id": {"type": "integer", "description": "The Telegram chat to send to."},
                "text": {"type": "string", "description": "The message text."},
            },
            "required": ["chat_id", "text"],
        },
        SEND,
    ),
    RemoteTool(
        "schedule_job",
        "Create a scheduled job: at each due time, the prompt runs as a new turn in this chat "
        "(reads run, writes ask for approval, destructive tools are not available to it).",
        {
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "description": "What to do at each run."},
                "schedule": {
                    "type": "string",
                    "description": "A 5-field cron expression ('0 8 * * *' = every day at "
                    "08:00), an interval ('every 10m', 'every 2h'), or an ISO date-time for a "
                    "single run ('2026-12-01T09:00').",
                },
                "timezone": {
                    "type": "string",
                    "description": "IANA time zone of the schedule; the user's by default.",
                },
                "daily_token_cap": {
                    "type": "integer",
                    "description": "Most tokens the job may use per day (optional).",
                },
            },
            "required": ["prompt", "schedule"],
        },
        WRITE,
    ),
    RemoteTool(
        "list_jobs",
        "List the scheduled jobs of this chat with their schedules and next runs.",
        {"type": "object", "properties": {}},
        READ,
    ),
    RemoteTool(
        "delete_job",
        "Delete a scheduled job of this chat for good.",
        {
            "type": "object",
            "properties": {"job_id": {"type": "integer", "description": "The job's number."}},
            "required": ["job_id"],
        },
        DESTRUCTIVE,
    ),
)


def _error(text: str) -> ToolOutcome:
    return ToolOutcome(f"Error: {text}", is_error=True)


def _now() -> datetime:
    return datetime.now(UTC)


class BuiltinTools:
    """The `palui` connector (implements `palui.ports.Toolset` and `ScopedToolset`)."""

    def __init__(
        self,
        store: Store,
        *,
        allowed_users: frozenset[int],
        other_chats: Sequence[int] = (),
        timezone: str = "UTC",
        min_interval_s: int = 60,
        job_token_cap: int = 100_000,
        now: Callable[[], datetime] = _now,
        run_code: RunCode | None = None,
        skills: SkillTools | None = None,
    ) -> None:
        self._store = store
        self._allowed_users = allowed_users
        self._other_chats = frozenset(other_chats)
        self._timezone = timezone
        self._min_interval_s = min_interval_s
        self._job_token_cap = job_token_cap
        self._now = now
        self._run_code = run_code
        self._skills = skills  # palui__use_skill, palui__read_skill_file (palui.skills)
        self._deliver: Callable[[int], None] = lambda chat_id: None
        self._jobs_changed: Callable[[], Awaitable[None]] | None = None

    def bind(
        self, *, deliver: Callable[[int], None], jobs_changed: Callable[[], Awaitable[None]]
    ) -> None:
        """Wire the outbox delivery and the scheduler (built after the registry)."""
        self._deliver = deliver
        self._jobs_changed = jobs_changed

    @property
    def id(self) -> str:
        return CONNECTOR_ID

    @property
    def trust(self) -> str:
        return "trusted"  # its results are Palui's own records

    def tools(self) -> Sequence[RemoteTool]:
        tools: tuple[RemoteTool, ...] = (*TOOLS, DELEGATE)
        if self._skills is not None:
            tools = (*tools, *self._skills.tools())
        if self._run_code is not None and self._run_code.ready:
            return (*tools, self._run_code.tool)
        return tools

    def status(self) -> ConnectorStatus:
        count = len(self.tools())
        return ConnectorStatus(CONNECTOR_ID, ConnectorState.CONNECTED, count, trust="trusted")

    async def probe(self) -> None:
        """At start: can palui__run_code's sandbox be set up here? (Not offered if not.)"""
        if self._run_code is not None:
            await self._run_code.probe()

    async def call(
        self, tool: str, arguments: dict[str, Any], *, timeout_s: float | None = None
    ) -> ToolOutcome:
        return _error("Palui's built-in tools can only be used inside a turn.")

    async def call_scoped(
        self, scope: TurnScope, tool: str, arguments: dict[str, Any]
    ) -> ToolOutcome:
        handler = {
            "send_message": self._send_message,
            "schedule_job": self._schedule_job,
            "list_jobs": self._list_jobs,
            "delete_job": self._delete_job,
            "run_code": self._run_code_call,
        }.get(tool)
        if tool == DELEGATE.name:  # run by the agent loop itself, never as a plain call
            return _error("delegation runs only as the turn's own call, never from a sub-task.")
        if handler is None and self._skills is not None and tool in SKILL_TOOLS:
            return await self._skills.call(tool, arguments)
        if handler is None:
            return _error(f"there is no built-in tool {tool!r}.")
        try:
            return await handler(scope, arguments)
        except _BadArgument as exc:
            return _error(str(exc))

    # -- the tools -------------------------------------------------------------------------------

    async def _send_message(self, scope: TurnScope, arguments: dict[str, Any]) -> ToolOutcome:
        chat_id = _integer(arguments, "chat_id")
        text = _text(arguments, "text", MAX_TEXT)
        if not await self._known_chat(chat_id):
            return _error(
                f"chat {chat_id} is not one of the user's chats that Palui knows, so nothing "
                "was sent. Send only to chats where the user has talked to Palui."
            )
        await self._store.outbox.add(chat_id, text)
        self._deliver(chat_id)
        log.info("builtin_message_queued", to_chat=chat_id, from_chat=scope.chat_id)
        return ToolOutcome(f"Sent to chat {chat_id}.")

    async def _known_chat(self, chat_id: int) -> bool:
        if chat_id in self._allowed_users or chat_id in self._other_chats:
            return True
        return await self._store.jobs.chat_known(chat_id)

    async def _schedule_job(self, scope: TurnScope, arguments: dict[str, Any]) -> ToolOutcome:
        prompt = _text(arguments, "prompt", MAX_PROMPT)
        schedule_text = arguments.get("schedule")
        if not isinstance(schedule_text, str):
            raise _BadArgument("'schedule' must be a string such as 'every 2h' or '0 8 * * *'.")
        timezone = arguments.get("timezone") or self._timezone
        cap = arguments.get("daily_token_cap") or self._job_token_cap
        if not isinstance(timezone, str):
            raise _BadArgument("'timezone' must be an IANA name such as Europe/Lisbon.")
        if not isinstance(cap, int) or isinstance(cap, bool) or cap < 1:
            raise _BadArgument("'daily_token_cap' must be a positive whole number.")
        if cap > self._job_token_cap:
            raise _BadArgument(
                f"'daily_token_cap' can be at most {self._job_token_cap:,} (the operator's limit)."
            )
        now = self._now()
        try:
            check_timezone(timezone)
            schedule = parse_schedule(
                schedule_text, timezone, now=now, min_interval_s=self._min_interval_s
            )
        except ScheduleError as exc:
            return _error(f"{exc}. Nothing was scheduled.")
        job = await self._store.jobs.create(
            scope.chat_id,
            prompt,
            schedule.text,
            timezone,
            cap,
            created_by=f"{scope.kind} turn {scope.turn_id}",
            anchor_at=now.replace(microsecond=0),
            taint_source=_taint_source(scope),
            owner_id=await self._store.turns.requester(scope.turn_id),
        )
        log.info("job_created", job_id=job.id, schedule=schedule.text, by_turn=scope.turn_id)
        if self._jobs_changed is not None:
            await self._jobs_changed()
        upcoming = next_run(job, now)
        first = f" Its first run is {when(upcoming, timezone, now)}." if upcoming else ""
        return ToolOutcome(
            f"Scheduled job #{job.id}: {schedule_words(job)}.{first} It runs in this chat; its "
            "writes will ask for approval and it gets no destructive tools. The user can pause "
            "or delete it with /jobs."
        )

    async def _list_jobs(self, scope: TurnScope, arguments: dict[str, Any]) -> ToolOutcome:
        jobs = await self._store.jobs.all(scope.chat_id)
        if not jobs:
            return ToolOutcome("There are no scheduled jobs in this chat.")
        now = self._now()
        return ToolOutcome("\n".join(job_line(job, now) for job in jobs))

    async def _delete_job(self, scope: TurnScope, arguments: dict[str, Any]) -> ToolOutcome:
        job_id = _integer(arguments, "job_id")
        job = await self._store.jobs.get(job_id)
        if job is None or job.chat_id != scope.chat_id:
            return _error(f"there is no job #{job_id} in this chat (palui__list_jobs lists them).")
        await self._store.jobs.delete(job_id)
        log.info("job_deleted", job_id=job_id, by_turn=scope.turn_id)
        if self._jobs_changed is not None:
            await self._jobs_changed()
        return ToolOutcome(f"Deleted job #{job_id} ({schedule_words(job)}).")

    async def _run_code_call(self, scope: TurnScope, arguments: dict[str, Any]) -> ToolOutcome:
        if self._run_code is None or not self._run_code.ready:
            return _error("there is no built-in tool 'run_code' here.")

        nested = scope.nested

        async def bridge(name: str, bridge_arguments: dict[str, Any]) -> ToolOutcome:
            # The code may read through Palui, never change anything: read built-ins only, each
            # through the turn's pipeline (hooks, guards, policy, record) like the model's calls.
            tool = name.removeprefix(f"{CONNECTOR_ID}__")
            if tool not in READ_TOOLS or name == tool:
                return _error(f"{name!r} is not one of Palui's built-in read tools.")
            if nested is None:
                return _error("this turn can't run tools for the code.")
            return await nested(name, bridge_arguments)

        return await self._run_code.run(arguments, bridge)


READ_TOOLS = frozenset(tool.name for tool in TOOLS if tool.annotations == READ)


class _BadArgument(ValueError):
    pass


def _integer(arguments: dict[str, Any], name: str) -> int:
    value = arguments.get(name)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise _BadArgument(f"'{name}' must be a whole number.")
    return value


def _text(arguments: dict[str, Any], name: str, limit: int) -> str:
    value = arguments.get(name)
    if not isinstance(value, str) or not value.strip():
        raise _BadArgument(f"'{name}' must be a non-empty string.")
    if len(value) > limit:
        raise _BadArgument(f"'{name}' is too long ({len(value):,} characters; at most {limit:,}).")
    return value.strip()


def _taint_source(scope: TurnScope) -> str | None:
    """What a job made in this turn records, so its runs start tainted (DESIGN §1.1)."""
    if scope.taint is not None:
        return scope.taint.origin
    return "untrusted content" if scope.tainted else None
