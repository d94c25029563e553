"""The off-site badge: a tool whose openWorldHint is true or unset (MCP's default) reaches beyond
its server's own application. It shows on approval cards, the /connectors card and in `palui
kinds list`, and changes no question by itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

# Imported while sys.stderr is still a real file (see tests/cli/test_kinds_cli.py).
import palui.connectors  # noqa: F401
from palui.config import Settings
from palui.domain import Completion, RemoteTool, ToolCallRequest, Usage
from palui.policy import classify
from palui.policy.annotations import open_world
from tests import toolkit
from tests.fakes.memory_channel import in_memory_settings, running_palui, switch_on
from tests.toolkit import SERVERS, json_lines, kinds, server_section

ODD_SERVER = SERVERS / "odd_server.py"
SCHEMA = {"type": "object", "properties": {"id": {"type": "string"}}}


class WebToolset(toolkit.FunctionToolset):
    """Two destructive tools: one says nothing of openWorldHint, one says false."""

    def __init__(self) -> None:
        super().__init__("mcp-web", {"wipe_page": self.wipe, "wipe_draft": self.wipe})

    def tools(self) -> list[RemoteTool]:
        return [
            RemoteTool("wipe_page", "Wipe a page", SCHEMA, {"destructiveHint": True}),
            RemoteTool(
                "wipe_draft", "Wipe a draft", SCHEMA,
                {"destructiveHint": True, "openWorldHint": False},
            ),
        ]  # fmt: skip

    async def wipe(self, id: str) -> str:
        return f"wiped {id}"


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return in_memory_settings(database_url, str(tmp_path / "data"))


def line_of(text: str, tool: str) -> str:
    return next(line for line in text.splitlines() if f" {tool} " in f"{line} ")


async def test_off_site_shows_on_the_approval_card_and_the_connector_card_only_where_unset(
    settings: Settings,
) -> None:
    both = Completion(
        "scripted", "",
        (ToolCallRequest("c1", "mcp-web__wipe_page", json.dumps({"id": "1"})),
         ToolCallRequest("c2", "mcp-web__wipe_draft", json.dumps({"id": "2"}))),
        Usage(10, 5),
    )  # fmt: skip
    model = toolkit.ScriptedModel([both, toolkit.answer("done")])
    async with running_palui(settings, model, toolsets=[WebToolset()]) as (app, chat):
        await switch_on(app, "mcp-web", "wipe_page", "wipe_draft")
        await chat.send("wipe page 1 and draft 2")
        cards = [card.text for card in chat.cards if "Approval needed" in card.text]
        page = next(text for text in cards if "mcp-web__wipe_page" in text)
        draft = next(text for text in cards if "mcp-web__wipe_draft" in text)
        assert "off-site" in page
        assert "off-site" not in draft
        # A badge, not a question: both are destructive and both ask, as without it.
        assert "(destructive)" in page and "(destructive)" in draft

        await chat.command("connectors")
        sheet = next(card.text for card in chat.cards if card.text.startswith("web  ·"))
        assert "off-site" in line_of(sheet, "wipe_page")
        assert "off-site" not in line_of(sheet, "wipe_draft")


def test_kinds_list_says_off_site_in_json_and_text(configure, capsys) -> None:
    configure(server_section("odd", ODD_SERVER), "[recall]\nenabled = false\n")
    code, out, err = kinds(capsys, "list", "--json")
    assert code == 0, err
    items = {item["tool"]: item for item in json_lines(out)}
    assert items["mcp-odd__count_widgets"]["off_site"] is True  # openWorldHint unset
    assert items["mcp-odd__frobnicate"]["off_site"] is True  # no annotations at all
    assert items["mcp-odd__peek_status"]["off_site"] is False  # openWorldHint: false
    # Palui's own tools are its application: off-site only where they say so.
    assert items["palui__list_jobs"]["off_site"] is False
    assert items["palui__send_message"]["off_site"] is True
    # It changes no class: both read tools stay read.
    assert items["mcp-odd__count_widgets"]["class"] == items["mcp-odd__peek_status"]["class"]

    code, out, _ = kinds(capsys, "list")
    assert code == 0
    header = next(line for line in out.splitlines() if line.strip().startswith("TOOL"))
    assert "OFF-SITE" in header
    assert line_of(out, "mcp-odd__count_widgets").split()[3] == "yes"
    assert line_of(out, "mcp-odd__peek_status").split()[3] == "no"


@pytest.mark.parametrize(
    ("annotations", "said"),
    [
        (None, None),
        ({"title": "x"}, None),
        ({"openWorldHint": True}, True),
        ({"openWorldHint": False}, False),
        ({"open_world_hint": False}, False),
        ({"openWorldHint": "no"}, None),  # unreadable: MCP's default (off-site) stands
    ],
)
def test_open_world_reads_the_hint_and_leaves_the_default_to_the_caller(
    annotations: dict | None, said: bool | None
) -> None:
    assert open_world(annotations) is said


def test_the_off_site_hint_changes_no_class() -> None:
    for marks in ({"readOnlyHint": True}, {"destructiveHint": False}, None):
        closed = {**(marks or {}), "openWorldHint": False}
        one = classify("mcp-x__get_page", RemoteTool("get_page", "Get a page", SCHEMA, marks), None)
        other = classify("mcp-x__get_page", RemoteTool("get_page", "Get it", SCHEMA, closed), None)
        assert (one.tool_class, one.sends_out, one.source) == (
            other.tool_class, other.sends_out, other.source,
        )  # fmt: skip
