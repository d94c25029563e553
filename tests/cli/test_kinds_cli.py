"""`palui kinds list|explain|draft` against real stdio MCP servers, as an operator runs them.

No daemon, no Telegram token, no model: the commands connect to the connectors themselves.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

# Imported while sys.stderr is still a real file: the MCP SDK's stdio client binds sys.stderr as
# its default errlog at import, and capsys's stand-in has no file descriptor for the child.
import palui.connectors  # noqa: F401
from palui.db import Database, Store
from palui.domain import ToolSettingRecord
from palui.policy import ClassSource, ToolClass, parse_kinds_file
from tests.toolkit import SERVERS, json_lines, kinds, server_section

NOTES_SERVER = SERVERS / "notes_server.py"
LIAR_SERVER = SERVERS / "liar_server.py"
FIELDS = {
    "tool", "connector", "class", "sends_out", "source", "reason", "enabled", "conflict",
    "off_site", "proposal",
}  # fmt: skip


@pytest.fixture
def notes(configure) -> Path:
    return configure(server_section("notes", NOTES_SERVER) + 'enable = ["add_note"]\n')


@pytest.fixture
def notes_and_liar(configure) -> Path:
    return configure(server_section("notes", NOTES_SERVER), server_section("liar", LIAR_SERVER))


def row(out: str, tool: str) -> list[str]:
    """The cells of a tool's line in `kinds list` (the reason is the rest of the line), without
    the OFF-SITE cell (tests/cli/test_off_site.py reads that one)."""
    line = next(line for line in out.splitlines() if line.split()[:1] == [tool])
    cells = line.split(maxsplit=6)
    return cells[:3] + cells[4:]


# -- list ------------------------------------------------------------------------------------


def test_list_shows_every_tool_with_class_sends_out_switch_source_and_reason(
    notes, capsys, tmp_path
) -> None:
    code, out, err = kinds(capsys, "list")
    assert code == 0, err
    assert row(out, "mcp-notes__list_notes")[:5] == [
        "mcp-notes__list_notes", "read", "no", "on", "annotation",
    ]  # fmt: skip
    assert row(out, "mcp-notes__delete_note")[:5] == [
        "mcp-notes__delete_note", "destructive", "no", "off", "annotation",
    ]  # fmt: skip
    # add_note is write, switched on by palui.toml's enable glob
    assert row(out, "mcp-notes__add_note")[:5] == [
        "mcp-notes__add_note", "write", "no", "on", "annotation",
    ]  # fmt: skip
    assert row(out, "mcp-notes__delete_note")[5] == "marked destructive (destructiveHint)"
    assert "TOOL" in out and "REASON" in out
    assert not (tmp_path / "data").exists()  # no database was created


def test_list_columns_are_aligned(notes, capsys) -> None:
    code, out, _ = kinds(capsys, "list")
    assert code == 0
    lines = [line for line in out.splitlines() if line.startswith("  mcp-notes__")]
    assert len(lines) > 5
    assert len({line.index(" read ") if " read " in line else None for line in lines} - {None}) == 1


def test_list_puts_unsure_tools_first(notes_and_liar, capsys) -> None:
    code, out, err = kinds(capsys, "list")
    assert code == 0, err
    tool_lines = [line.split()[0] for line in out.splitlines() if line.startswith("  mcp-")]
    assert tool_lines[0] == "mcp-liar__frobnicate"
    assert out.index("Unsure") < out.index("mcp-liar__frobnicate") < out.index("mcp-liar__settings")
    assert row(out, "mcp-liar__frobnicate")[1:5] == ["destructive", "no", "off", "unsure"]

    code, out, _ = kinds(capsys, "list", "--json")
    sources = [item["source"] for item in json_lines(out)]
    assert sources[0] == "unsure"
    assert sources == sorted(sources, key=lambda source: source != "unsure")


def test_list_shows_a_conflict_under_its_tool(notes_and_liar, capsys) -> None:
    _, out, _ = kinds(capsys, "list")
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("mcp-liar__settings"))
    assert "conflict: marked read-only, but argument 'operation' may be 'set'" in lines[at + 1]


def test_list_json_prints_one_object_per_tool_with_the_fields(notes_and_liar, capsys) -> None:
    code, out, err = kinds(capsys, "list", "--json")
    assert code == 0, err
    items = {item["tool"]: item for item in json_lines(out)}
    assert all(set(item) == FIELDS for item in items.values())
    assert items["mcp-notes__add_note"] == {
        "tool": "mcp-notes__add_note",
        "connector": "mcp-notes",
        "class": "write",
        "sends_out": False,
        "source": "annotation",
        "reason": "marked as changing things, not destructive",
        "enabled": False,  # a new write tool starts off
        "conflict": None,
        "off_site": True,  # openWorldHint unset: MCP's default
        "proposal": None,
    }
    assert items["mcp-liar__fetch_page"]["sends_out"] is True
    assert items["mcp-liar__settings"]["conflict"] == (
        "marked read-only, but argument 'operation' may be 'set'"
    )
    assert items["mcp-liar__settings"]["class"] == "write"


def test_a_kinds_file_entry_overrides_the_class_in_list_output(notes, capsys, tmp_path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "tool_kinds.yaml").write_text(
        "tools:\n"
        "  mcp-notes__list_notes:\n"
        "    kind: destructive\n"
        '    reason: "the operator says so"\n'
    )
    code, out, _ = kinds(capsys, "list")
    assert code == 0
    assert row(out, "mcp-notes__list_notes") == [
        "mcp-notes__list_notes", "destructive", "no", "off", "you", "the operator says so",
    ]  # fmt: skip
    assert "Kinds file: config/tool_kinds.yaml (1 tools named, inference on)" in out

    _, out, _ = kinds(capsys, "list", "--json")
    item = next(i for i in json_lines(out) if i["tool"] == "mcp-notes__list_notes")
    assert (item["class"], item["source"], item["enabled"]) == ("destructive", "you", False)


def test_a_connector_that_cannot_start_is_reported_and_the_others_still_listed(
    configure, capsys
) -> None:
    configure(
        server_section("notes", NOTES_SERVER),
        server_section("broken", NOTES_SERVER, {"NOTES_EXIT_CODE": "3"}),
    )
    code, out, _ = kinds(capsys, "list")
    assert code == 1
    assert row(out, "mcp-notes__list_notes")[1] == "read"
    assert "Not connected (their tools are missing from this list):" in out
    assert "mcp-broken: server exited" in out

    code, out, err = kinds(capsys, "list", "--json")
    assert code == 1
    assert {item["connector"] for item in json_lines(out)} == {"mcp-notes", "palui", "recall"}
    assert "mcp-broken did not connect" in err


def test_a_paused_connector_is_still_listed_and_marked_paused(configure, capsys) -> None:
    configure(server_section("notes", NOTES_SERVER) + "paused = true\n")
    code, out, err = kinds(capsys, "list")
    assert code == 0, err
    assert re.search(r"^mcp-notes \(\d+ tools; paused in palui.toml: none offered\)$", out, re.M)
    assert row(out, "mcp-notes__delete_note")[1] == "destructive"


def test_no_mcp_servers_lists_paluis_own_tools_and_says_how_to_add_one(configure, capsys) -> None:
    configure("")
    code, out, err = kinds(capsys, "list")
    assert code == 0, err
    assert row(out, "palui__list_jobs")[1] == "read"
    assert row(out, "recall__search_memories")[1] == "read"
    assert "no MCP servers are configured" in err
    assert "[mcp.notes]" in err and "command =" in err


def test_bad_config_exits_2(configure, capsys) -> None:
    configure("[mcp.notes]\ncommand = 'python'\nurl = 'https://x.example/mcp'\n")
    code, _, err = kinds(capsys, "list")
    assert code == 2
    assert "[mcp.notes]" in err


def test_a_broken_kinds_file_exits_2(notes, capsys, tmp_path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "tool_kinds.yaml").write_text("tools:\n  mcp-x__:\n    kind: write\n")
    code, _, err = kinds(capsys, "list")
    assert code == 2
    assert "name it as <connector>__<tool>" in err


def test_a_bare_name_and_source_catalogue_load_and_name_the_one_connectors_tool(
    notes, capsys, tmp_path
) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "tool_kinds.yaml").write_text(
        "tools:\n"
        "  list_notes:\n"
        "    kind: destructive\n"
        "    source: catalogue\n"
        '    reason: "the catalogue says so"\n'
    )
    code, out, _ = kinds(capsys, "list")
    assert code == 0
    assert row(out, "mcp-notes__list_notes")[1:] == [
        "destructive", "no", "off", "catalogue", "the catalogue says so",
    ]  # fmt: skip
    assert "(1 tools named, inference on)" in out


def test_a_bare_name_two_connectors_have_is_a_config_error_naming_both(
    configure, capsys, tmp_path
) -> None:
    configure(server_section("notes", NOTES_SERVER), server_section("notes2", NOTES_SERVER))
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "tool_kinds.yaml").write_text("tools:\n  add_note:\n    kind: write\n")
    code, _, err = kinds(capsys, "list")
    assert code == 2
    assert "add_note" in err and "mcp-notes2__add_note" in err and "mcp-notes__add_note" in err


def test_stored_switches_and_classes_from_a_migrated_database_are_used(
    notes, capsys, tmp_path
) -> None:
    async def seed() -> None:
        db = Database(f"sqlite+aiosqlite:///{tmp_path / 'data' / 'palui.db'}")
        await db.migrate()
        await Store(db).tool_settings.save(
            ToolSettingRecord("mcp-notes__delete_note", True, "write", None, False)
        )
        await db.close()

    asyncio.run(seed())
    code, out, _ = kinds(capsys, "list")
    assert code == 0
    assert "Switches: from the SQLite database" in out
    assert row(out, "mcp-notes__delete_note") == [
        "mcp-notes__delete_note", "write", "no", "on", "you", "set in the chat",
    ]  # fmt: skip


def test_an_unmigrated_database_is_left_alone(notes, capsys, tmp_path) -> None:
    database = tmp_path / "data" / "palui.db"
    database.parent.mkdir()
    database.write_bytes(b"")  # an empty SQLite file: no schema yet
    code, out, _ = kinds(capsys, "list")
    assert code == 0
    assert "the SQLite database is not migrated" in out

    async def revision() -> str | None:
        db = Database(f"sqlite+aiosqlite:///{database}")
        try:
            return (await db.revisions())[0]
        finally:
            await db.close()

    assert asyncio.run(revision()) is None


# -- explain ---------------------------------------------------------------------------------


def test_explain_names_the_source_reason_hash_and_switch(notes, capsys) -> None:
    code, out, err = kinds(capsys, "explain", "mcp-notes__add_note")
    assert code == 0, err
    assert out.startswith("mcp-notes__add_note: write (source: annotation)")
    assert "reason:          marked as changing things, not destructive" in out
    assert "readOnlyHint: false, destructiveHint: false -> write" in out
    assert "switch:          on (palui.toml [mcp.notes] enable = 'add_note' names it)" in out
    assert "definition hash: sha256:" in out
    assert "1. Kinds file: no kinds file at config/tool_kinds.yaml." in out
    assert "Believed: inference sees nothing stricter." in out
    assert "name verb 'add' (write)" in out


def test_explain_shows_the_conflict_when_a_read_only_mark_is_not_believed(
    notes_and_liar, capsys
) -> None:
    code, out, err = kinds(capsys, "explain", "mcp-liar__settings")
    assert code == 0, err
    assert out.startswith("mcp-liar__settings: write (source: inferred)")
    assert "readOnlyHint: true -> read" in out
    assert "Not believed: inference sees write (argument 'operation' may be 'set')" in out
    assert "Conflict: marked read-only, but argument 'operation' may be 'set'" in out
    assert "argument 'operation' may be 'set' (write)" in out


def test_explain_of_an_unsure_tool_says_it_fails_closed(notes_and_liar, capsys) -> None:
    code, out, _ = kinds(capsys, "explain", "mcp-liar__frobnicate")
    assert code == 0
    assert out.startswith("mcp-liar__frobnicate: destructive (source: unsure)")
    assert "Server's marks: no annotations: no mark." in out
    assert "5. Otherwise destructive (fail closed).  <- decided here" in out


def test_explain_says_a_description_earns_no_read(notes_and_liar, capsys) -> None:
    code, out, _ = kinds(capsys, "explain", "mcp-liar__wire_money")
    assert code == 0
    assert out.startswith("mcp-liar__wire_money: destructive (source: unsure)")
    assert "4. Inference: nothing." in out
    assert "- no reading verb of its own ('wire' is not one Palui knows)" in out
    assert "(read)" not in out  # the description's "Gets" is not listed as a signal
    assert "5. Otherwise destructive (fail closed).  <- decided here" in out


def test_explain_says_a_kinds_file_entry_decided(notes, capsys, tmp_path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "tool_kinds.yaml").write_text(
        "tools:\n  mcp-notes__list_notes:\n    kind: write\n    reason: careful\n"
    )
    code, out, _ = kinds(capsys, "explain", "mcp-notes__list_notes")
    assert code == 0
    assert out.startswith("mcp-notes__list_notes: write (source: you)")
    assert "config/tool_kinds.yaml names it: kind write, source you, reason 'careful'." in out
    assert "<- decided here" in out.split("\n  2.")[0]


def test_explain_of_an_unknown_tool_exits_1_and_lists_close_names(notes, capsys) -> None:
    code, out, err = kinds(capsys, "explain", "mcp-notes__delete_notes")
    assert code == 1
    assert out == ""
    assert "no tool is called 'mcp-notes__delete_notes'" in err
    assert "Did you mean: mcp-notes__delete_note" in err

    code, _, err = kinds(capsys, "explain", "add_note")
    assert code == 1
    assert "Did you mean: mcp-notes__add_note" in err
    assert "<connector>__<tool>" in err


# -- draft -----------------------------------------------------------------------------------


def test_draft_writes_a_kinds_file_that_parses_back(notes_and_liar, capsys, tmp_path) -> None:
    code, out, err = kinds(capsys, "draft")
    assert code == 0, err
    path = tmp_path / "config" / "tool_kinds.draft.yaml"
    assert "Wrote config/tool_kinds.draft.yaml" in out
    assert "mv config/tool_kinds.draft.yaml config/tool_kinds.yaml" in out
    text = path.read_text()
    parsed = parse_kinds_file(text, str(path))
    assert parsed.tools["mcp-notes__delete_note"].tool_class is ToolClass.DESTRUCTIVE
    assert parsed.tools["mcp-notes__list_notes"].tool_class is ToolClass.READ
    assert parsed.tools["mcp-liar__frobnicate"].source is ClassSource.UNSURE
    assert parsed.tools["mcp-liar__fetch_page"].sends_out is True
    # unsure tools come first
    assert text.index("mcp-liar__frobnicate") < min(
        text.index(name) for name in parsed.tools if name != "mcp-liar__frobnicate"
    )
    assert not (tmp_path / "config" / "tool_kinds.yaml").exists()


def test_draft_refuses_to_overwrite_an_existing_file_unless_forced(notes, capsys, tmp_path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text("# my own notes\n")
    code, _, err = kinds(capsys, "draft", "--output", str(path))
    assert code == 1
    assert "already exists; not overwriting it" in err and "--force" in err
    assert path.read_text() == "# my own notes\n"

    code, _, err = kinds(capsys, "draft", "--output", str(path), "--force")
    assert code == 0, err
    assert "mcp-notes__add_note" in parse_kinds_file(path.read_text()).tools


def test_draft_never_overwrites_the_live_kinds_file_without_force(notes, capsys, tmp_path) -> None:
    live = tmp_path / "config" / "tool_kinds.yaml"
    live.parent.mkdir()
    live.write_text("tools: {}\n")
    code, _, err = kinds(capsys, "draft", "--output", "config/tool_kinds.yaml")
    assert code == 1
    assert "is the live kinds file that already exists" in err
    assert live.read_text() == "tools: {}\n"


# -- Palui's own connectors: the built-in tools and recall -------------------------------------


def test_list_json_includes_the_builtin_and_bundled_recall_tools_with_their_classes(
    notes, capsys, tmp_path
) -> None:
    code, out, err = kinds(capsys, "list", "--json")
    assert code == 0, err
    items = {item["tool"]: item for item in json_lines(out)}
    assert {name: items[name]["class"] for name in items if name.startswith("palui__")} == {
        "palui__send_message": "write",
        "palui__schedule_job": "write",
        "palui__list_jobs": "read",
        "palui__delete_job": "destructive",
    }
    assert items["palui__send_message"]["sends_out"] is True
    assert {name for name in items if name.startswith("recall__")} == {
        "recall__add_memory", "recall__ask_memory", "recall__forget_memory",
        "recall__get_profile", "recall__list_memories", "recall__search_memories",
    }  # fmt: skip
    assert items["recall__forget_memory"]["class"] == "destructive"
    assert items["recall__add_memory"]["class"] == "write"
    assert items["recall__search_memories"]["class"] == "read"
    # The switches the daemon starts them with: its own tools on, recall's save and forget on.
    assert items["palui__delete_job"]["enabled"] is True
    assert items["recall__forget_memory"]["enabled"] is True
    assert {items[name]["connector"] for name in items if name.startswith("recall__")} == {"recall"}
    # Looking at recall's tools neither creates nor opens its memory file.
    assert not (tmp_path / "data").exists()


def test_list_shows_run_code_as_destructive_once_it_is_switched_on(configure, capsys) -> None:
    configure("[run_code]\nenabled = true\n")
    code, out, err = kinds(capsys, "list", "--json")
    assert code == 0, err
    items = {item["tool"]: item for item in json_lines(out)}
    assert items["palui__run_code"]["class"] == "destructive"


def test_list_text_groups_palui_and_recall_after_the_mcp_servers(notes, capsys) -> None:
    code, out, err = kinds(capsys, "list")
    assert code == 0, err
    assert row(out, "recall__forget_memory")[1:3] == ["destructive", "no"]
    assert row(out, "palui__schedule_job")[1] == "write"
    assert out.index("mcp-notes (") < out.index("palui (4 tools; built in)")
    assert out.index("palui (4 tools; built in)") < out.index("recall (6 tools; long-term memory)")
    assert "from 3 connectors" in out


def test_explain_recall_forget_memory_says_destructive_and_why(notes, capsys) -> None:
    code, out, err = kinds(capsys, "explain", "recall__forget_memory")
    assert code == 0, err
    assert out.startswith("recall__forget_memory: destructive (source: annotation)")
    assert "connector:       recall (long-term memory)" in out
    assert "reason:          marked destructive (destructiveHint)" in out
    assert "destructiveHint: true -> destructive" in out
    assert "name verb 'forget' (destructive)" in out
    assert "on: recall's save and forget start on; forget always asks first" in out


def test_explain_a_builtin_tool(notes, capsys) -> None:
    code, out, err = kinds(capsys, "explain", "palui__schedule_job")
    assert code == 0, err
    assert out.startswith("palui__schedule_job: write (source: annotation)")
    assert "connector:       palui (built in)" in out
    assert "on: Palui's own tools start on" in out


def test_a_kinds_file_entry_overrides_a_builtin_tools_class(notes, capsys, tmp_path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "tool_kinds.yaml").write_text(
        "tools:\n  palui__list_jobs:\n    kind: write\n    reason: careful\n"
    )
    _, out, _ = kinds(capsys, "list", "--json")
    item = next(i for i in json_lines(out) if i["tool"] == "palui__list_jobs")
    assert (item["class"], item["source"], item["reason"]) == ("write", "you", "careful")


def test_recall_switched_off_lists_no_recall_tools(configure, capsys) -> None:
    configure(server_section("notes", NOTES_SERVER), "[recall]\nenabled = false\n")
    code, out, err = kinds(capsys, "list", "--json")
    assert code == 0, err
    connectors = {item["connector"] for item in json_lines(out)}
    assert connectors == {"mcp-notes", "palui"}

    code, _, err = kinds(capsys, "explain", "recall__forget_memory")
    assert code == 1
    assert "No connector 'recall' is configured" in err


def test_recall_that_does_not_connect_is_reported(configure, capsys) -> None:
    configure(
        server_section("notes", NOTES_SERVER),
        "[recall]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(NOTES_SERVER))}]\n"
        'env = { NOTES_EXIT_CODE = "3" }\n',
    )
    code, out, err = kinds(capsys, "list", "--json")
    assert code == 1
    assert {item["connector"] for item in json_lines(out)} == {"mcp-notes", "palui"}
    assert "recall did not connect" in err


def test_draft_includes_the_builtin_and_recall_tools(notes, capsys, tmp_path) -> None:
    code, _, err = kinds(capsys, "draft")
    assert code == 0, err
    parsed = parse_kinds_file((tmp_path / "config" / "tool_kinds.draft.yaml").read_text())
    assert parsed.tools["recall__forget_memory"].tool_class is ToolClass.DESTRUCTIVE
    assert parsed.tools["palui__schedule_job"].tool_class is ToolClass.WRITE
    assert parsed.tools["palui__send_message"].sends_out is True


# -- as a process ----------------------------------------------------------------------------


def test_palui_kinds_list_runs_as_a_command_without_token_model_or_database(
    notes, tmp_path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALUI_")}
    env["PALUI_CONFIG"] = str(notes)
    result = subprocess.run(
        [sys.executable, "-m", "palui.cli.main", "kinds", "list", "--json"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    items = json_lines(result.stdout)
    assert {"mcp-notes__list_notes", "mcp-notes__delete_note"} <= {i["tool"] for i in items}
    assert all(set(item) == FIELDS for item in items)
    assert not (tmp_path / "data").exists()


def test_a_server_with_unreadable_hints_keeps_its_other_tools(configure, capsys) -> None:
    configure(server_section("hinty", SERVERS / "hinty_server.py"))
    code, out, _ = kinds(capsys, "list")
    assert code == 0, out
    assert row(out, "mcp-hinty__list_widgets")[1:3] == ["read", "no"]
    for tool in ("peek_status", "count_widgets"):
        cells = row(out, f"mcp-hinty__{tool}")
        assert cells[1] == "destructive" and cells[4] == "unsure"
        assert "annotation 'readOnlyHint' is not true or false" in cells[5]
