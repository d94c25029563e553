"""Which tools a turn is offered: all when they fit; past `max_tools`, the most relevant tools
one by one (never a whole connector dropped), and `palui__find_tools` for the rest."""

from __future__ import annotations

from palui.agent.turn import TurnDeps, run_turn
from palui.domain import ConnectorState, Message, OfferEvent, OfferReason, Role
from palui.tools.context import CallContext, CallPorts
from palui.tools.names import split_name
from palui.tools.ranking import Query, ToolIndex, connector_words
from palui.tools.registry import ToolRegistry
from palui.tools.runner import CallRunner
from tests.catalog import CatalogToolset, catalog_toolsets
from tests.toolkit import FunctionToolset, MemoryRecorder, ScriptedModel, answer, call, no_usage

FIND = "palui__find_tools"


async def _noop() -> str:
    return ""


def toolset(connector_id: str, words: list[str], **kw) -> FunctionToolset:
    names = [f"{verb}_{noun}" for verb in ("get", "list") for noun in words][:10]
    while len(names) < 10:
        names.append(f"misc_{connector_id.replace('-', '_')}_{len(names)}")
    return FunctionToolset(connector_id, dict.fromkeys(names, _noop), **kw)


def connectors_of(names) -> set[str]:
    return {split_name(name)[0] for name in names}  # type: ignore[index]


def test_five_connectors_of_ten_tools_offer_at_most_30_the_relevant_ones_first() -> None:
    connectors = [
        toolset("mcp-calendar", ["event", "meeting", "agenda", "invite", "slot"]),
        toolset("mcp-github", ["issue", "pull", "repo", "commit", "branch"]),
        toolset("mcp-weather", ["forecast", "temperature", "rain", "wind", "alert"]),
        toolset("mcp-notes", ["note", "notebook", "tag", "page", "draft"]),
        toolset("mcp-music", ["song", "playlist", "album", "artist", "track"]),
    ]
    offer = ToolRegistry(connectors).offer("will it rain tomorrow? what's the forecast", 30)
    assert len(offer.tools) == 30
    assert {"mcp-weather__get_rain", "mcp-weather__get_forecast"} <= set(offer.tools)
    assert FIND in offer.tools  # 50 enabled, 29 offered besides the search
    assert offer.enabled == 50 and offer.left_out == 21
    assert connectors_of(offer.tools) >= {"mcp-calendar", "mcp-github", "mcp-music"}


def test_all_tools_are_offered_when_they_fit_and_find_tools_is_not() -> None:
    connectors = [toolset("mcp-a", ["x"]), toolset("mcp-b", ["y"])]
    offer = ToolRegistry(connectors).offer("anything", 30)
    assert len(offer.tools) == 20 and FIND not in offer.tools
    assert offer.left_out == 0 and not offer.searchable
    assert {offer.why(name) for name in offer.tools} == {OfferReason.ALL_FIT}
    assert offer.drain() == [OfferEvent("*", OfferReason.ALL_FIT, "", 20)]  # one row, not 20


def test_builtin_tools_always_fit() -> None:
    builtin = FunctionToolset("palui", {"list_jobs": _noop, "send_message": _noop})
    connectors = [toolset(f"mcp-c{i}", ["thing"]) for i in range(5)]
    offer = ToolRegistry([*connectors, builtin]).offer("thing", 30)
    assert {"palui__list_jobs", "palui__send_message"} <= set(offer.tools)
    assert len(offer.tools) == 30


def test_disconnected_connectors_and_disabled_tools_are_not_offered() -> None:
    down = toolset("mcp-down", ["x"], state=ConnectorState.ERRORED)
    notes = FunctionToolset("mcp-notes", {"add_note": _noop, "delete_note": _noop})
    allow = lambda connector_id, tool: not tool.name.startswith("delete_")  # noqa: E731
    offer = ToolRegistry([down, notes]).offer("", 30, allow)
    assert list(offer.tools) == ["mcp-notes__add_note"]


def test_ranking_matches_word_forms_names_and_file_extensions() -> None:
    (word,) = catalog_toolsets(("word",))
    index = ToolIndex([(f"word__{t.name}", "word", t) for t in word.tools()])
    scores = index.scores(Query.of("please add footnotes to the essay"))
    assert "footnote" in max(scores, key=scores.__getitem__)
    assert Query.of("summarise report.docx").names(connector_words("word"))  # .docx: Word


def test_a_54_tool_connector_is_offered_by_its_relevant_tools_for_a_message_about_it() -> None:
    (word,) = catalog_toolsets(("word",))
    assert len(word.tools()) == 54
    for toolsets in ([word], catalog_toolsets()):
        offer = ToolRegistry(toolsets).offer("add an endnote to paragraph 4 of my thesis", 30)
        assert len(offer.tools) == 30
        assert "word__add_endnote_to_document" in offer.tools  # 47th of its 54
        assert sum(name.startswith("word__") for name in offer.tools) >= 5


def test_a_connector_the_person_names_is_represented() -> None:
    registry = ToolRegistry(catalog_toolsets())
    for said, connector in (("in github, anything new for me?", "github"),
                            ("what's in my excel sheet?", "excel")):  # fmt: skip
        offer = registry.offer(said, 30)
        mine = [name for name in offer.tools if name.startswith(f"{connector}__")]
        named = [name for name in mine if offer.why(name) is OfferReason.NAMED]
        assert len(named) >= 5, said


def test_tools_are_listed_by_connector_then_name_and_chosen_the_same_way_each_time() -> None:
    registry = ToolRegistry(catalog_toolsets())
    first = [spec.name for spec in registry.offer("show my github issue 12", 30).specs]
    again = [spec.name for spec in registry.offer("show my github issue 12", 30).specs]
    assert first == again
    assert first == sorted(first, key=lambda name: tuple(name.split("__", 1)))
    assert "github__get_issue" in first


def test_the_tools_the_conversation_used_stay_offered() -> None:
    from palui.tools.registry import Wanted

    registry = ToolRegistry(catalog_toolsets())
    wanted = Wanted(Query.of("and the next one?"), frozenset({"postgres__explain_query"}))
    offer = registry.offer(wanted, 30)
    assert offer.why("postgres__explain_query") is OfferReason.USED


def deps_for(model: ScriptedModel, *toolsets) -> tuple[TurnDeps, CallRunner]:
    offer = ToolRegistry(list(toolsets)).offer("hello", 30)
    tools = CallRunner(CallContext("turn-1", ports=CallPorts(MemoryRecorder())), offer)
    deps = TurnDeps(model, no_usage, tools=offer.specs, offered=lambda: offer.specs, runner=tools)
    return deps, tools


def offered_at(model: ScriptedModel, step: int) -> set[str]:
    return {spec.name for spec in model.calls[step][1]}


async def test_find_tools_makes_a_left_out_tool_callable_at_the_next_step() -> None:
    (word,) = catalog_toolsets(("word",))
    model = ScriptedModel([
        call(FIND, {"query": "password protect a document"}),
        call("word__protect_document", {"filename": "a.docx"}, call_id="c2"),
        answer("protected"),
    ])  # fmt: skip
    deps, tools = deps_for(model, word)
    reply = await run_turn(deps, [Message(Role.USER, "hello")])
    assert reply.text == "protected"
    assert "word__protect_document" not in offered_at(model, 0)
    assert FIND in offered_at(model, 0)
    found = model.calls[1][0][-1].content
    assert "word__protect_document" in found
    assert "word__protect_document" in offered_at(model, 1)
    assert len(offered_at(model, 1)) == 30  # the least relevant gave way
    assert word.calls == ["protect_document"]
    events = tools.offer_events()
    assert [(e.tool, e.why) for e in events if e.tool == "word__protect_document"] == [
        ("word__protect_document", OfferReason.FOUND)
    ]


async def test_a_left_out_tool_called_by_name_is_offered_at_the_next_step_not_run() -> None:
    (word,) = catalog_toolsets(("word",))
    model = ScriptedModel([
        call("word__protect_document", {"filename": "a.docx"}),
        call("word__protect_document", {"filename": "a.docx"}, call_id="c2"),
        answer("protected"),
    ])  # fmt: skip
    deps, _ = deps_for(model, word)
    await run_turn(deps, [Message(Role.USER, "hello")])
    told = model.calls[1][0][-1].content
    assert "was not offered at this step and did not run" in told
    assert "word__protect_document" in offered_at(model, 1)
    assert word.calls == ["protect_document"]  # once: at the second step


async def test_a_tool_nobody_enabled_is_refused_with_a_hint_to_search() -> None:
    (word,) = catalog_toolsets(("word",))
    model = ScriptedModel([call("word__shred_everything", {}), answer("ok")])
    deps, _ = deps_for(model, word)
    await run_turn(deps, [Message(Role.USER, "hello")])
    told = model.calls[1][0][-1].content
    assert "there is no tool named 'word__shred_everything'" in told
    assert "palui__find_tools" in told
    assert word.calls == []


def test_find_tools_finds_by_connector_and_keeps_within_the_budget() -> None:
    registry = ToolRegistry([*catalog_toolsets(), CatalogToolset("palui", [])])
    offer = registry.offer("hello", 30)
    found = offer.find("kubernetes helm chart install")
    assert "kubernetes__install_helm_chart" in {t.spec.name for t in found}
    assert len(offer.tools) == 30 and FIND in offer.tools
