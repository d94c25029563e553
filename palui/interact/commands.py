"""The chat commands: ONE table from which dispatch, `/help` (and `/start`) and the Telegram
menu are all generated. Commands are answered at once, never sent to the model."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from palui.approvals.decisions import Approvals
from palui.approvals.edits import EditFlow
from palui.chat.groups import palui_command, threaded_to
from palui.db import Store
from palui.domain import Inbound
from palui.interact.connect import RemoteSignIns
from palui.interact.connector_sheet import ConnectorSheet
from palui.interact.job_sheet import JobSheet
from palui.interact.model_sheet import ModelSheet
from palui.interact.skill_sheet import SkillSheet
from palui.interact.status import Status
from palui.interact.voice_switch import voice_switch
from palui.interact.web_link import WebLinks
from palui.logs import get_logger
from palui.memory import Memory
from palui.memory.keeper import SaveResult
from palui.turns.runner import TurnRunner
from palui.turns.stop import stopped_text

log = get_logger("palui.interact.commands")

INTRO = "I'm Palui, your assistant. Send me a message and I'll answer."
NO_CONNECTORS = "No connectors are configured. Add an [mcp.<name>] section to palui.toml."
NO_JOBS = (
    "No scheduled jobs in this chat. Ask me to schedule one, e.g. "
    "“every morning at 8, summarise my notes”."
)

Reply = Callable[[Inbound], Awaitable[str | None]]


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    menu: str  # the Telegram menu's description
    help: str | None  # its line in /help; None: not listed there
    reply: Reply  # the text to send (None: it answered otherwise, e.g. with cards)
    # It only shows something: a group may send it bare (palui.chat.groups); one that changes
    # or interrupts something must name Palui there, or reply to it.
    shows_only: bool = False


def new_session_text(saved: SaveResult | None) -> str:
    fresh = "Started a fresh conversation. Earlier messages won't be used from now on."
    if saved is None:
        return fresh
    if saved.ok:
        return f"{fresh} What we talked about is saved in memory." if saved.saved else fresh
    return (
        f"{fresh}\nI couldn't save the last one to memory ({saved.reason}); "
        "I'll save it once recall answers again."
    )


def not_for_me_text(bot: str) -> str:
    return f"That command is for @{bot}, not for me, so I didn't run it. Send /help for mine."


class Commands:
    """The handler of every `/command` (implements `palui.interact.router.Handler`)."""

    def __init__(
        self,
        store: Store,
        turns: TurnRunner,
        approvals: Approvals,
        edits: EditFlow,
        memory: Memory,
        connectors: ConnectorSheet,
        jobs: JobSheet,
        status: Status,
        *,
        holder: str,
        web: WebLinks | None = None,
        skills: SkillSheet | None = None,
        remote: RemoteSignIns | None = None,
        models: ModelSheet | None = None,
        speaks: bool = False,
    ) -> None:
        self._store = store
        self._turns = turns
        self._approvals = approvals
        self._edits = edits
        self._memory = memory
        self._connectors = connectors
        self._jobs = jobs
        self._status = status
        self._holder = holder  # this process, as /stop names it to the one running the turn
        self._web = web
        self._skills = skills
        self._remote = remote
        self._models = models  # /model
        self._speaks = speaks  # a speech model is set (PALUI_TTS_MODEL): /voice has an effect
        self.table = (
            Command("start", "What Palui is", None, self._start, shows_only=True),
            Command("new", "Start a fresh conversation", "start a fresh conversation", self._new),
            Command("stop", "Stop what I'm doing now", "stop what I'm doing now", self._stop),
            Command(
                "status",
                "Model, usage and limits",
                "model, usage and limits",
                self._show,
                shows_only=True,
            ),
            Command(
                "approvals",
                "Approvals waiting for you",
                "approvals waiting for you",
                self._pending,
                shows_only=True,
            ),
            Command(
                "connectors",
                "Connectors, their tools and switches",
                "connectors, their tools and switches",
                self._sheet,
                shows_only=True,
            ),
            Command(
                "connect",
                "Sign in to a remote connector",
                "sign in to a remote connector (/disconnect <name> signs out)",
                self._connect,
            ),
            Command("disconnect", "Sign out of a remote connector", None, self._disconnect),
            Command(
                "jobs",
                "Scheduled jobs: pause or delete them",
                'scheduled jobs (ask me to schedule one, e.g. "every morning at 8, …")',
                self._job_cards,
                shows_only=True,
            ),
            Command(
                "skills",
                "Skills: what they do, trust new ones",
                "the skills installed for me (trust new ones in a private chat)",
                self._skill_cards,
                shows_only=True,
            ),
            Command(
                "model",
                "Choose this chat's model",
                "choose this chat's model",
                self._model,
                shows_only=True,
            ),
            Command(
                "voice",
                "Voice replies to voice notes on or off",
                "/voice on|off: answer voice notes with a voice message too",
                self._voice,
            ),
            Command(
                "web",
                "A sign-in link to the web console",
                "a sign-in link to the web console (/web revoke signs out everywhere)",
                self._web_link,
            ),
            Command(
                "help",
                "What Palui can do and the commands",
                "this message",
                self._help,
                shows_only=True,
            ),
        )
        self._by_name = {command.name: command for command in self.table}
        # What a group may send bare (palui.chat.groups): the inbox takes no other bare one.
        self.shown_bare = frozenset(c.name for c in self.table if c.shows_only)

    def menu(self) -> list[tuple[str, str]]:
        """(name, description) for the channel's command menu."""
        return [(command.name, command.menu) for command in self.table]

    def help_text(self) -> str:
        lines = [f"/{c.name} — {c.help}" for c in self.table if c.help is not None]
        return "\n".join([INTRO, "", "Commands:", *lines])

    async def owns(self, inbound: Inbound, *, asked: bool | None = None) -> bool:
        """Commands, the address of a sign-in a person pastes (`/connect`'s last step) and a
        typed answer to a server's question."""
        if self._commandish(inbound):
            return True
        return self._remote is not None and await self._remote.owns(inbound, asked=asked)

    @staticmethod
    def _commandish(inbound: Inbound) -> bool:
        return not inbound.callback_query_id and (
            inbound.command is not None or inbound.addressed_elsewhere is not None
        )

    async def handle(self, inbound: Inbound) -> bool:
        if not self._commandish(inbound) and self._remote is not None:
            return await self._remote.handle(inbound)  # owned, and not a command: an answer
        elsewhere = inbound.addressed_elsewhere
        if elsewhere is not None:
            log.info("command_for_another_bot", bot=elsewhere)
            await self._store.inbox.mark_done([inbound.update_id])
            # In a private chat (its id is the person's) say why nothing ran; in a group the
            # other bot answers, and Palui stays quiet.
            if inbound.chat_id == inbound.user.id:
                await self._store.outbox.add(inbound.chat_id, not_for_me_text(elsewhere))
            return False
        if not palui_command(inbound, self.shown_bare):
            # A bare /new or /stop in a group may be another bot's (stored before this rule,
            # or re-dispatched at start): it runs nothing, and Palui stays quiet.
            log.info("bare_group_command_left", command=inbound.command)
            await self._store.inbox.mark_done([inbound.update_id])
            return False
        command = inbound.command or ""
        log.info("command", command=command)
        await self._memory.command_seen(inbound.chat_id)
        known = self._by_name.get(command)
        if known is None:
            text: str | None = (
                f"I don't know the command /{command}. Send /help to see what I can do."
            )
        else:
            text = await known.reply(inbound)
        text = await self._edits.after_command(inbound, text)  # /stop, /cancel: a card edit
        await self._store.inbox.mark_done([inbound.update_id])
        if text:  # in a group, threaded to the command it answers
            await self._store.outbox.add(inbound.chat_id, text, reply_to=threaded_to(inbound))
        return False

    async def _start(self, inbound: Inbound) -> str:
        return "Hi! " + self.help_text()

    async def _help(self, inbound: Inbound) -> str:
        return self.help_text()

    async def _show(self, inbound: Inbound) -> str:
        return await self._status.text(inbound.chat_id)

    async def _model(self, inbound: Inbound) -> str | None:
        if self._models is None:
            return "The model can't be chosen here."
        return await self._models.post(inbound)

    async def _voice(self, inbound: Inbound) -> str:
        return await voice_switch(self._store, inbound, speaks=self._speaks)

    async def _new(self, inbound: Inbound) -> str:
        saved = await self._memory.save_for_new(inbound.chat_id)
        await self._store.chats.new_session(inbound.chat_id)
        return new_session_text(saved)

    async def _stop(self, inbound: Inbound) -> str | None:
        interrupted = self._turns.stop(inbound.chat_id)
        if interrupted is not None:
            return stopped_text(interrupted)
        if await self._turns.stops.request(inbound.chat_id, self._holder):
            return None  # "Stopping…" is stored with the request; "Stopped." comes from the
            # process running the turn, once it has
        return "Nothing is running."

    async def _pending(self, inbound: Inbound) -> str:
        return await self._approvals.pending_text(inbound.chat_id)

    async def _sheet(self, inbound: Inbound) -> str | None:
        posted = await self._connectors.post(inbound.chat_id, threaded_to(inbound))
        return None if posted else NO_CONNECTORS

    async def _job_cards(self, inbound: Inbound) -> str | None:
        return None if await self._jobs.post(inbound.chat_id, threaded_to(inbound)) else NO_JOBS

    async def _skill_cards(self, inbound: Inbound) -> str | None:
        if self._skills is None:
            return "Skills are not served here."
        return await self._skills.post(inbound)

    async def _connect(self, inbound: Inbound) -> str:
        if self._remote is None:
            return "Remote connectors sign in with `palui run`."
        return await self._remote.connect(inbound)

    async def _disconnect(self, inbound: Inbound) -> str:
        if self._remote is None:
            return "Remote connectors sign in with `palui run`."
        return await self._remote.disconnect(inbound)

    async def _web_link(self, inbound: Inbound) -> str:
        if self._web is None:
            return "The web console is not served here; it runs with `palui run`."
        return await self._web.reply(inbound)
