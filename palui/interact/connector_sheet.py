"""The connector sheet (`/connectors`): one card per connector with its tools' classes and
switches, edited in place as the person taps.

Buttons carry `cx:<op>:<hash>` (palui.callbacks) where the hash names a connector or a tool (10
hex digits of its name's SHA-256), so the data stays short and a tap acts on the tool it was
drawn for even if the list has changed since. Every change is saved before the card is redrawn;
the switches are synced with the database first (`Switchboard`), so a card drawn or tapped here
shows, and toggles from, what a tap in another process set. A connector that needs sign-in has
🔑 Connect: `/connect <name>` from a tap (the link only in a private chat).
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable

from palui import callbacks
from palui.callbacks import ConnectorButton
from palui.db import Store
from palui.domain import RECALL_ID, Button, Card, ConnectorState, Inbound
from palui.interact.connector_switches import WIDTH_WORDS, ConnectorSwitches
from palui.interact.paused import PausedConnectors
from palui.interact.taps import SheetTap
from palui.logs import get_logger
from palui.memory import Memory
from palui.memory.switches import Switch
from palui.policy.classes import ToolClass
from palui.policy.matrix import Width
from palui.ports import Notifying, Toolset
from palui.tools.catalog import CatalogEntry
from palui.tools.switchboard import Switchboard
from palui.turns.offer import Offers

log = get_logger("palui.interact.connector_sheet")

MAX_ROWS = 30  # tools shown per card; `palui kinds list` shows all
CLASS_CODES = {"r": ToolClass.READ, "w": ToolClass.WRITE, "d": ToolClass.DESTRUCTIVE}
MEMORY_SWITCHES = {"ar": Switch.AUTO_RECALL, "as": Switch.AUTO_SAVE, "mt": Switch.MEMORY_TOOLS}
WIDTH_CODES = {"r": Width.READS, "w": Width.WRITES, "a": Width.ALL}
# 🔑 Connect: starts `/connect <name>` for (connector id, chat, person); the tap's toast.
Connect = Callable[[str, int, int], Awaitable[str]]


def _word(on: bool) -> str:
    return "on" if on else "off"


def short(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:10]


class ConnectorSheet:
    def __init__(
        self,
        store: Store,
        channel: Notifying,
        offers: Offers,
        *,
        paused: PausedConnectors,
        memory: Memory | None = None,
        board: Switchboard | None = None,
        connect: Connect | None = None,
    ) -> None:
        self._offers = offers
        self._connect = connect  # past max_tools, the sheet says how many a turn is offered
        self._channel = channel
        self._registry = registry = offers.registry
        self._memory = memory
        self._paused = paused
        # What the taps change, shared with the web console's Connectors page.
        self.switches = ConnectorSwitches(
            store, registry, offers.catalog, paused=paused, memory=memory, board=board
        )

    # -- drawing ---------------------------------------------------------------------------------

    def _entries(self, toolset: Toolset) -> list[CatalogEntry]:
        return self.switches.entries(toolset)

    def card(self, toolset: Toolset) -> Card:
        status = toolset.status()
        if self._paused.is_paused(toolset.id):
            state = "⏸ paused"
        elif status.state == ConnectorState.CONNECTED:
            state = "✅ on"
        elif status.state == ConnectorState.NEEDS_SIGN_IN:
            state = f"🔑 needs sign-in (/connect {toolset.id.removeprefix('mcp-')})"
        else:
            state = f"⚠️ {status.error or status.state}"
        lines = [f"{toolset.id.removeprefix('mcp-')}  ·  {state}  ·  {toolset.trust}"]
        width, width_source = self.switches.width(toolset)
        lines.append(
            f" Without a card in your own turns: {WIDTH_WORDS[width]} "
            f"(allow = {width}, from: {width_source})"
        )
        entries = self._entries(toolset)
        rows: list[tuple[Button, ...]] = []
        for entry in entries[:MAX_ROWS]:
            c = entry.classification
            source = f"(class from: {c.source}{' — unsure' if c.unsure else ''})"
            switch = "on" if entry.enabled else "off"
            off_site = " · off-site" if entry.off_site else ""  # a badge: it asks nothing
            lines.append(f" {c.tool_class:<11} {entry.remote.name}  [{switch}]  {source}{off_site}")
            mark = "✅" if entry.enabled else "⬜"
            toggle = Button(
                f"{mark} {entry.remote.name}", callbacks.connector("t", short(entry.name))
            )
            rows.append((toggle,))
        if len(entries) > MAX_ROWS:
            lines.append(f" … and {len(entries) - MAX_ROWS} more (`palui kinds list` shows all)")
        if not entries:
            lines.append(" (no tools right now)")
        key = short(toolset.id)
        if toolset.id == RECALL_ID and self._memory is not None:
            memory_lines, memory_row = self._memory_part(key)
            lines += memory_lines
            rows.append(memory_row)
        pause = "▶️ Resume" if self._paused.is_paused(toolset.id) else "⏸ Pause"
        rows.append(
            (
                Button("Enable all read tools", callbacks.connector("r", key)),
                Button(pause, callbacks.connector("p", key)),
                Button("Change a class…", callbacks.connector("k", key)),
            )
        )
        rows.append((Button(f"Width: {width}…", callbacks.connector("wd", key)),))
        if status.state == ConnectorState.NEEDS_SIGN_IN and self._connect is not None:
            rows.insert(0, (Button("🔑 Connect", callbacks.connector("sg", key)),))
        return Card("\n".join(lines), rows=tuple(rows))

    def _width_choices(self, toolset: Toolset) -> Card:
        key = short(toolset.id)
        current, _ = self.switches.width(toolset)
        choices = tuple(
            (
                Button(
                    f"{'✅ ' if width is current else ''}{width}: {WIDTH_WORDS[width]}",
                    callbacks.connector("ws", key + code),
                ),
            )
            for code, width in WIDTH_CODES.items()
        )
        back = (Button("← Back", callbacks.connector("b", key)),)
        text = (
            f"{toolset.id}: what runs without a card in your own chat turns? A turn that read "
            "untrusted content, a scheduled job or a webhook summary asks as before whatever "
            "you pick (recorded as set by you):"
        )
        return Card(text, rows=(*choices, back))

    def _memory_part(self, key: str) -> tuple[list[str], tuple[Button, ...]]:
        """The recall card's switches (DESIGN §1.5) and auto-recall's skip rate."""
        assert self._memory is not None
        switches = self._memory.switches
        lines = [
            f" Auto-recall: {_word(switches.auto_recall)} ({self._memory.skip_rate()})",
            f" Auto-save: {_word(switches.auto_save)}",
            f" Memory tools: {_word(switches.memory_tools)}",
        ]
        row = tuple(
            Button(
                f"{'✅' if switches.get(switch) else '⬜'} {switch.label}",
                callbacks.connector(op, key),
            )
            for op, switch in MEMORY_SWITCHES.items()
        )
        return lines, row

    def _class_picker(self, toolset: Toolset) -> Card:
        rows = [
            (Button(entry.remote.name, callbacks.connector("c", short(entry.name))),)
            for entry in self._entries(toolset)[:MAX_ROWS]
        ]
        rows.append((Button("← Back", callbacks.connector("b", short(toolset.id))),))
        return Card(f"{toolset.id}: which tool's class?", rows=tuple(rows))

    def _class_choices(self, entry: CatalogEntry) -> Card:
        key = short(entry.name)
        choices = tuple(
            Button(tool_class.value, callbacks.connector("s", key + code))
            for code, tool_class in CLASS_CODES.items()
        )
        back = (Button("← Back", callbacks.connector("b", short(entry.connector_id))),)
        text = (
            f"{entry.name} is {entry.classification.explain()}.\n"
            "Pick its class (recorded as set by you):"
        )
        return Card(text, rows=(choices, back))

    async def post(self, chat_id: int, reply_to: int | None = None) -> int:
        """`reply_to`: the command's message, in a group (the cards are threaded to it)."""
        await self.switches.fresh()
        toolsets = self._registry.toolsets
        for toolset in toolsets:
            await self._channel.send_card(chat_id, self.card(toolset), reply_to=reply_to)
        if toolsets:
            size = await self._offers.size()
            if size.past_budget:
                await self._channel.send_notice(chat_id, size.line())
        return len(toolsets)

    # -- taps --------------------------------------------------------------------------------------

    def _find_tool(self, key: str) -> tuple[Toolset, CatalogEntry] | None:
        for toolset in self._registry.toolsets:
            for entry in self._entries(toolset):
                if short(entry.name) == key:
                    return toolset, entry
        return None

    def _find_connector(self, key: str) -> Toolset | None:
        return next((t for t in self._registry.toolsets if short(t.id) == key), None)

    async def tap(self, inbound: Inbound, button: ConnectorButton) -> SheetTap:
        chat, message = inbound.chat_id, inbound.message_id
        op, key = button.op, button.key
        await self.switches.fresh()
        if op in ("t", "c"):
            found = self._find_tool(key)
            if found is None:
                return SheetTap("That tool is gone; send /connectors again.", chat, message)
            toolset, entry = found
            if op == "c":
                return SheetTap("Pick a class.", chat, message, self._class_choices(entry))
            await self.switches.set_tool(entry, not entry.enabled)
            state = "on" if not entry.enabled else "off"
            return SheetTap(f"{entry.remote.name} is {state}.", chat, message, self.card(toolset))
        if op == "s" and len(key) == 11 and key[-1] in CLASS_CODES:
            found = self._find_tool(key[:-1])
            if found is None:
                return SheetTap("That tool is gone; send /connectors again.", chat, message)
            toolset, entry = found
            tool_class = CLASS_CODES[key[-1]]
            await self.switches.set_class(entry, tool_class)
            notice = f"{entry.remote.name} is now {tool_class}."
            return SheetTap(notice, chat, message, self.card(toolset))
        if op == "ws" and len(key) == 11 and key[-1] in WIDTH_CODES:
            connector = self._find_connector(key[:-1])
            if connector is None:
                return SheetTap("That connector is gone; send /connectors again.", chat, message)
            width = WIDTH_CODES[key[-1]]
            await self.switches.set_width(connector, width)
            notice = f"{connector.id}: {WIDTH_WORDS[width]} without a card."
            return SheetTap(notice, chat, message, self.card(connector))
        connector = self._find_connector(key)
        if connector is None:
            return SheetTap("That connector is gone; send /connectors again.", chat, message)
        if op == "sg" and self._connect is not None:
            notice = await self._connect(connector.id, chat, inbound.user.id)
            return SheetTap(notice, chat, message)
        return await self._connector_tap(op, connector, chat, message)

    async def _connector_tap(
        self, op: str, toolset: Toolset, chat: int, message: int | None
    ) -> SheetTap:
        if op == "r":
            count = await self.switches.enable_read(toolset)
            return SheetTap(f"Switched on {count} read tools.", chat, message, self.card(toolset))
        if op == "p":
            paused = not self._paused.is_paused(toolset.id)
            await self.switches.set_paused(toolset, paused)
            word = "paused" if paused else "resumed"
            return SheetTap(f"{toolset.id} {word}.", chat, message, self.card(toolset))
        if op in MEMORY_SWITCHES and toolset.id == RECALL_ID and self._memory is not None:
            switch = MEMORY_SWITCHES[op]
            value = await self.switches.set_memory(switch, not self._memory.switches.get(switch))
            notice = f"{switch.label} is {_word(value)}."
            return SheetTap(notice, chat, message, self.card(toolset))
        if op == "k":
            return SheetTap("Pick a tool.", chat, message, self._class_picker(toolset))
        if op == "wd":
            return SheetTap("Pick a width.", chat, message, self._width_choices(toolset))
        if op == "b":
            return SheetTap("Back.", chat, message, self.card(toolset))
        return SheetTap("This button is not valid.", chat, message)
