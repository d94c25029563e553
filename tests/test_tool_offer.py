"""Which tools a turn is offered: at most max_tools, the relevant connectors first."""

from __future__ import annotations

from palui.domain import ConnectorState
from palui.tools.names import split_name
from palui.tools.ranking import rank
from palui.tools.registry import ToolRegistry
from tests.toolkit import FunctionToolset


async def _noop() -> str:
    return ""


def toolset(connector_id: str, words: list[str], **kw) -> FunctionToolset:
    names = [f"{verb}_{noun}" for verb in ("get", "list") for noun in words][:10]
    while len(names) < 10:
        names.append(f"misc_{connector_id.replace('-', '_')}_{len(names)}")
    return FunctionToolset(connector_id, dict.fromkeys(names, _noop), **kw)


def test_five_connectors_of_ten_tools_offer_at_most_30_including_the_relevant_one() -> None:
    connectors = [
        toolset("mcp-calendar", ["event", "meeting", "agenda", "invite", "slot"]),
        toolset("mcp-github", ["issue", "pull", "repo", "commit", "branch"]),
        toolset("mcp-weather", ["forecast", "temperature", "rain", "wind", "alert"]),
        toolset("mcp-notes", ["note", "notebook", "tag", "page", "draft"]),
        toolset("mcp-music", ["song", "playlist", "album", "artist", "track"]),
    ]
    offer = ToolRegistry(connectors).offer("will it rain tomorrow? what's the forecast", 30)
    assert len(offer.tools) <= 30
    offered_connectors = {split_name(name)[0] for name in offer.tools}  # type: ignore[index]
    assert "mcp-weather" in offered_connectors
    assert len(offered_connectors) == 3  # whole connectors, never a cut one


def test_all_tools_are_offered_when_they_fit() -> None:
    connectors = [toolset("mcp-a", ["x"]), toolset("mcp-b", ["y"])]
    assert len(ToolRegistry(connectors).offer("anything", 30).tools) == 20


def test_builtin_tools_always_fit() -> None:
    builtin = FunctionToolset("palui", {"list_jobs": _noop, "send_message": _noop})
    connectors = [toolset(f"mcp-c{i}", ["thing"]) for i in range(5)]
    offer = ToolRegistry([*connectors, builtin]).offer("thing", 30)
    assert {"palui__list_jobs", "palui__send_message"} <= set(offer.tools)
    assert len(offer.tools) <= 30


def test_disconnected_connectors_and_disabled_tools_are_not_offered() -> None:
    down = toolset("mcp-down", ["x"], state=ConnectorState.ERRORED)
    notes = FunctionToolset("mcp-notes", {"add_note": _noop, "delete_note": _noop})
    allow = lambda connector_id, tool: not tool.name.startswith("delete_")  # noqa: E731
    offer = ToolRegistry([down, notes]).offer("", 30, allow)
    assert list(offer.tools) == ["mcp-notes__add_note"]


def test_ranking_matches_word_forms_in_tool_names() -> None:
    documents = {"a": "list_songs play music", "b": "search_notes find a note by text"}
    assert rank("my notes please", documents)[0] == "b"
