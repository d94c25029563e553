"""Connectors: each connector's state and trust, its tools with class, where the class came from,
switch, "sends out" and "off-site", and its width; the same switches as `/connectors`. Below them
the skills and their state, as `/skills` shows them (trusted in the chat or with
`palui skills trust`).

Every change goes through `ConnectorSwitches`, the code the chat's cards use: the same stored
settings, and the settings version bumped, so every process reloads before its next turn. The
switches are read fresh from the database before the page is drawn and before a change. A form
names the state it wants (on or off, paused or not), so a form sent twice changes nothing more.
Connectors are not a chat's: any signed-in person sets them, as any allowed user can in a chat.
A connector that needs sign-in (remote MCP OAuth) has a Connect button: the same sign-in as
`/connect <name>` (palui/interact/connect.py), the browser sent straight on to the authorization
address, and its end told in the person's private chat.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from palui.domain import ConnectorState
from palui.interact.connector_switches import WIDTH_WORDS, ConnectorSwitches
from palui.logs import get_logger
from palui.memory.switches import Switch
from palui.policy.classes import ToolClass
from palui.policy.matrix import Width
from palui.tools.catalog import CatalogEntry
from palui.web.deps import WebDeps
from palui.web.render import render, see_other
from palui.web.viewer import viewer_of

log = get_logger("palui.web")

PAGE = "/ui/connectors"
# What a change says on the page it returns to: a fixed code in the address, never free text.
NOTICES = {
    "on": "Switched on.",
    "off": "Switched off.",
    "class": "Class set (recorded as set by you).",
    "paused": "Connector paused: its tools are offered to no turn.",
    "resumed": "Connector resumed.",
    "read": "Its read tools are switched on.",
    "memory": "Memory switch set.",
    "width": "Width set (recorded as set by you); tainted turns, jobs and webhooks ask as before.",
    "connect-refused": "The sign-in did not start: /connect <name> in your private chat says why.",
}


@dataclass(frozen=True, slots=True)
class MemoryRow:
    switch: str
    label: str
    on: bool


@dataclass(frozen=True, slots=True)
class ConnectorView:
    id: str
    name: str
    state: str  # "connected", "paused" or what is wrong
    signs_in: bool  # it needs a person to sign in (OAuth): the page offers Connect
    trust: str
    paused: bool
    width: str
    width_source: str
    tools: list[CatalogEntry]
    memory: list[MemoryRow]
    skip_rate: str


def _views(switches: ConnectorSwitches) -> list[ConnectorView]:
    views = []
    for toolset in switches.toolsets:
        memory: list[MemoryRow] = []
        skip = ""
        if switches.has_memory_switches(toolset) and switches.memory is not None:
            state = switches.memory.switches
            memory = [MemoryRow(s.value, s.label, state.get(s)) for s in Switch]
            skip = switches.memory.skip_rate()
        width, width_source = switches.width(toolset)
        views.append(
            ConnectorView(
                toolset.id,
                toolset.id.removeprefix("mcp-"),
                switches.state(toolset),
                toolset.status().state == ConnectorState.NEEDS_SIGN_IN,
                toolset.trust,
                switches.paused.is_paused(toolset.id),
                str(width),
                str(width_source),
                switches.entries(toolset),
                memory,
                skip,
            )
        )
    return views


def _on(form: object) -> bool:
    return str(form) == "1"


def routes(deps: WebDeps) -> list[web.RouteDef]:
    def switches() -> ConnectorSwitches:
        if deps.connector_sheet is None:
            raise web.HTTPServiceUnavailable(text="The connectors are not served here.")
        return deps.connector_sheet.switches

    async def listing(request: web.Request) -> web.Response:
        board = switches()
        await board.fresh()
        skills = await deps.skills.look() if deps.skills is not None else ()
        return render(
            request,
            "connectors.html",
            nav="connectors",
            connectors=_views(board),
            skills=skills,
            classes=[c.value for c in ToolClass],
            widths={str(width): words for width, words in WIDTH_WORDS.items()},
            notice=NOTICES.get(request.query.get("done", "")),
            can_connect=deps.sign_ins is not None,
        )

    async def tool(request: web.Request) -> web.Response:
        viewer, form, board = viewer_of(request), await request.post(), switches()
        await board.fresh()
        found = board.tool(str(form.get("tool", "")))
        if found is None:
            return render(request, "not_found.html", status=404)
        toolset, entry = found
        if "class" in form:
            try:
                tool_class = ToolClass(str(form["class"]))
            except ValueError:
                raise web.HTTPBadRequest(text="Unknown class.") from None
            await board.set_class(entry, tool_class)
            done = "class"
        else:
            on = _on(form.get("on"))
            await board.set_tool(entry, on)
            done = "on" if on else "off"
        log.info("web_tool_changed", tool=entry.name, user_id=viewer.user_id)
        return see_other(f"{PAGE}?done={done}#{toolset.id}")

    async def connector(request: web.Request) -> web.Response:
        viewer, form, board = viewer_of(request), await request.post(), switches()
        await board.fresh()
        toolset = board.connector(request.match_info["connector"])
        if toolset is None:
            return render(request, "not_found.html", status=404)
        action = request.match_info["action"]
        if action == "pause":
            paused = _on(form.get("paused"))
            await board.set_paused(toolset, paused)
            done = "paused" if paused else "resumed"
        elif action == "width":
            try:
                width = Width(str(form.get("allow", "")))
            except ValueError:
                raise web.HTTPBadRequest(text="Unknown width.") from None
            await board.set_width(toolset, width)
            done = "width"
        elif action == "enable-read":
            await board.enable_read(toolset)
            done = "read"
        elif action == "connect" and deps.sign_ins is not None:
            # The same sign-in as /connect: its end is told in the person's private chat.
            started = await deps.sign_ins.start(toolset.id, viewer.user_id)
            log.info("web_connect", connector=toolset.id, started=not isinstance(started, str))
            if isinstance(started, str):
                return see_other(f"{PAGE}?done=connect-refused#{toolset.id}")
            return see_other(started.link)  # on to the authorization server
        elif action == "memory" and board.has_memory_switches(toolset):
            try:
                switch = Switch(str(form.get("switch", "")))
            except ValueError:
                raise web.HTTPBadRequest(text="Unknown switch.") from None
            await board.set_memory(switch, _on(form.get("on")))
            done = "memory"
        else:
            return render(request, "not_found.html", status=404)
        log.info(
            "web_connector_changed", connector=toolset.id, action=action, user_id=viewer.user_id
        )
        return see_other(f"{PAGE}?done={done}#{toolset.id}")

    return [
        web.get("/connectors", listing, name="connectors"),
        web.post("/connectors/tool", tool, name="connector_tool"),
        web.post("/connectors/{connector}/{action}", connector, name="connector_action"),
    ]
