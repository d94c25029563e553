"""The policy gate in the one place tool calls go through."""

from __future__ import annotations

from palui.domain import RemoteTool, Taint, ToolCallRequest, TurnKind
from palui.policy.classes import ToolClass
from palui.policy.kinds_file import parse_kinds_file
from palui.tools.catalog import Globs, StoredTool, ToolCatalog
from palui.tools.context import CallContext, CallPorts, PolicyInputs
from palui.tools.registry import ToolRegistry
from palui.tools.runner import CallRunner
from tests.toolkit import FunctionToolset, MemoryRecorder


async def _text(**_: object) -> str:
    return "ok"


def notes(trust: str = "untrusted") -> FunctionToolset:
    return FunctionToolset(
        "mcp-notes",
        {"fetch_page": _text, "add_note": _text, "delete_note": _text},
        read_only=["fetch_page"],
        destructive=["delete_note"],
        trust=trust,
    )


def turn_tools(toolset, kind=TurnKind.CHAT, catalog=None) -> tuple[CallRunner, MemoryRecorder]:
    recorder = MemoryRecorder()
    offer = ToolRegistry([toolset]).offer("", 30)
    policy = PolicyInputs(catalog) if catalog is not None else PolicyInputs()
    context = CallContext("t1", kind=kind, policy=policy, ports=CallPorts(recorder))
    return CallRunner(context, offer), recorder


def req(tool: str) -> ToolCallRequest:
    return ToolCallRequest("c", f"mcp-notes__{tool}", "{}")


async def test_a_write_runs_at_once_until_the_turn_reads_untrusted_content() -> None:
    tools, recorder = turn_tools(notes())
    assert not tools.needs_approval(req("add_note"))
    await tools.run(req("add_note"), 1)  # its confirmation came from an untrusted server
    assert tools.tainted
    assert tools.needs_approval(req("add_note"))
    assert tools.why(req("add_note")) == (
        "this turn read untrusted content from mcp-notes (mcp-notes__add_note)"
    )
    assert [d[2] for d in recorder.decisions] == ["run"]


async def test_results_from_a_trusted_connector_do_not_taint() -> None:
    tools, _ = turn_tools(notes(trust="trusted"))
    await tools.run(req("fetch_page"), 1)
    assert not tools.tainted and not tools.needs_approval(req("add_note"))


async def test_a_destructive_call_never_runs_without_approval() -> None:
    toolset = notes()
    tools, recorder = turn_tools(toolset)
    assert tools.needs_approval(req("delete_note"))
    outcome = await tools.run(req("delete_note"), 1)  # even if the loop forgot to ask
    assert outcome.is_error and "needs a person's approval" in outcome.text
    assert toolset.calls == []
    assert recorder.decisions[0][:3] == ("mcp-notes__delete_note", "destructive", "ask")


async def test_scheduled_turns_refuse_destructive_calls_and_webhook_turns_everything() -> None:
    toolset = notes()
    scheduled, _ = turn_tools(toolset, TurnKind.SCHEDULED)
    assert "not available" in (await scheduled.run(req("delete_note"), 1)).text
    webhook, _ = turn_tools(toolset, TurnKind.WEBHOOK)
    assert "not available" in (await webhook.run(req("fetch_page"), 1)).text
    assert toolset.calls == []


async def test_decision_ids_cover_the_kinds_file_digest() -> None:
    kinds = parse_kinds_file("tools:\n  mcp-notes__add_note:\n    kind: write\n")
    plain, plain_rec = turn_tools(notes(trust="trusted"))
    filed, filed_rec = turn_tools(notes(trust="trusted"), catalog=ToolCatalog(kinds, {}, {}))
    await plain.run(req("add_note"), 1)
    await filed.run(req("add_note"), 1)
    assert plain_rec.decisions[0][3] != filed_rec.decisions[0][3]


def test_new_tools_start_on_only_when_read_and_palui_toml_globs_decide() -> None:
    catalog = ToolCatalog(None, {}, {"mcp-notes": Globs(enable=["add_*"], disable=["*_page"])})
    read = RemoteTool("fetch_page", "Fetch a page", {}, {"readOnlyHint": True})
    write = RemoteTool("add_note", "Add a note", {}, None)
    other = RemoteTool("rename_note", "Rename a note", {}, None)
    assert catalog.entry("mcp-notes", read).enabled is False  # the file disables it
    assert catalog.entry("mcp-notes", write).enabled is True  # the file enables it
    assert catalog.entry("mcp-notes", other).enabled is False  # new and not read


def test_a_changed_definition_loses_its_inferred_class_and_is_switched_off() -> None:
    before = RemoteTool("list_notes", "List notes", {}, {"readOnlyHint": True})
    after = RemoteTool("list_notes", "List notes and email them", {}, {"readOnlyHint": True})
    catalog = ToolCatalog(None, {}, {})
    first = catalog.entry("mcp-notes", before)
    stored = StoredTool(True, None, first.classification.definition_hash)
    changed = ToolCatalog(None, {"mcp-notes__list_notes": stored}, {}).entry("mcp-notes", after)
    assert changed.changed and changed.classification.tool_class is ToolClass.DESTRUCTIVE
    assert changed.enabled is False


class IdempotentNotes(FunctionToolset):
    def tools(self) -> list[RemoteTool]:
        marks = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True}
        return [
            RemoteTool(tool.name, tool.description, tool.input_schema, marks)
            if tool.name == "set_title"
            else tool
            for tool in super().tools()
        ]


async def test_an_idempotent_write_just_approved_may_repeat_without_a_second_card() -> None:
    from palui.policy.classify import definition_hash
    from palui.tools.digest import call_digest

    toolset = IdempotentNotes("mcp-notes", {"set_title": _text, "add_note": _text})
    offer = ToolRegistry([toolset]).offer("", 30)
    remotes = {tool.name: tool for tool in toolset.tools()}
    approved = {
        call_digest(f"mcp-notes__{name}", {"title": "x"}, definition_hash(remotes[name]))
        for name in ("set_title", "add_note")
    }
    tainted = Taint("mcp-web", "mcp-web__fetch")
    policy = PolicyInputs(just_approved=frozenset(approved))
    context = CallContext("t", taint=tainted, policy=policy, ports=CallPorts(MemoryRecorder()))
    tools = CallRunner(context, offer)
    same = ToolCallRequest("c", "mcp-notes__set_title", '{"title": "x"}')
    other = ToolCallRequest("c", "mcp-notes__set_title", '{"title": "y"}')
    not_idempotent = ToolCallRequest("c", "mcp-notes__add_note", '{"title": "x"}')
    assert not tools.needs_approval(same)
    assert tools.needs_approval(other)
    assert tools.needs_approval(not_idempotent)
    assert (await tools.run(same, 1)).text == "ok"
    assert (await tools.run(not_idempotent, 1)).is_error


async def test_a_tool_filed_as_not_sending_out_is_refused_an_address() -> None:
    kinds = parse_kinds_file(
        "tools:\n  mcp-notes__add_note:\n    kind: write\n    sends_out: false\n"
    )
    toolset = notes(trust="trusted")
    tools, _ = turn_tools(toolset, catalog=ToolCatalog(kinds, {}, {}))
    evil = ToolCallRequest("c", "mcp-notes__add_note", '{"title": "x", "to": "x@evil.example"}')
    outcome = await tools.run(evil, 1)
    assert outcome.is_error
    assert "'to' holds an e-mail address (x@evil.example)" in outcome.text
    assert toolset.calls == []
    fine = ToolCallRequest("c", "mcp-notes__add_note", '{"title": "to the shop"}')
    assert not (await tools.run(fine, 1)).is_error


def test_addresses_are_recognised() -> None:
    from palui.policy.destinations import looks_like_address

    assert looks_like_address("ana@example.com") == "an e-mail address"
    assert looks_like_address("https://evil.example/x") == "a URL"
    assert looks_like_address("+55 11 91234-5678") == "a phone number"
    assert looks_like_address("-1001234567890") == "a chat id"
    assert looks_like_address("groceries for sunday") is None
    assert looks_like_address("12") is None


def test_a_bare_kinds_name_names_the_only_connectors_tool_and_fails_closed_when_ambiguous() -> None:
    kinds = parse_kinds_file("tools:\n  add_note:\n    kind: destructive\n    source: catalogue\n")
    assert set(kinds.bare) == {"add_note"} and not kinds.tools
    tool = RemoteTool("add_note", "Add a note", {}, {"readOnlyHint": False})
    holders = {"add_note": ["mcp-notes"]}
    one = ToolCatalog(kinds, {}, {}, holders=lambda name: holders.get(name, []))
    entry = one.entry("mcp-notes", tool)
    assert entry.classification.tool_class is ToolClass.DESTRUCTIVE
    assert entry.classification.source == "catalogue"
    holders["add_note"] = ["mcp-notes", "mcp-other"]  # a second connector brings the same tool
    again = one.entry("mcp-notes", tool)
    assert again.classification.unsure
    assert "mcp-notes__add_note, mcp-other__add_note" in again.classification.reason
    # A full name wins over the bare one.
    both = parse_kinds_file(
        "tools:\n  add_note:\n    kind: destructive\n  mcp-notes__add_note:\n    kind: read\n"
    )
    full = ToolCatalog(both, {}, {}, holders=lambda name: ["mcp-notes", "mcp-other"])
    assert full.entry("mcp-notes", tool).classification.tool_class is ToolClass.READ
