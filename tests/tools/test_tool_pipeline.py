"""The tool pipeline: the operator's hooks and guards, the daily send cap, and the record
`palui runs` shows. End to end (a real MCP server, the fake Bot API, the fake model, the `palui`
CLI) where the test reads the record or the server's effects; the rest in this process
(tests/fakes/memory_channel.py, the notes tools as Python functions, a scripted model)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from palui.config import Settings
from palui.domain import Completion, Message, ToolCallRequest, Usage
from palui.errors import ConfigError
from tests import hooks_fixture, toolkit
from tests.conftest import OWNER_CHAT, OWNER_ID
from tests.fakes.memory_channel import CHAT_ID, approval_cards, in_memory_settings
from tests.fakes.model_server import ModelRequest, Script
from tests.fakes.notes_toolset import notes_palui
from tests.toolkit import labelled, palui_cli


def tool_results(request: ModelRequest) -> list[str]:
    return [m["content"] for m in request.messages if m["role"] == "tool"]


def calls(*calls: tuple[str, dict[str, Any]]) -> Script:
    return Script(tool_calls=[(name, json.dumps(arguments)) for name, arguments in calls])


def steps_then_echo(*steps: Script):
    """Each model step in turn; then a reply that quotes every tool result of the turn."""
    queue = list(steps)

    def brain(request: ModelRequest) -> Script:
        if queue:
            return queue.pop(0)
        return Script(text="Results: " + " | ".join(tool_results(request)))

    return brain


def configure(notes_extra: str = "", extra: str = "") -> None:
    """Add to the notes server's section and append sections to the test's palui.toml."""
    config = Path(os.environ["PALUI_CONFIG"])
    config.write_text(config.read_text() + notes_extra + "\n" + extra)


def notes(path: Path) -> dict[str, dict[str, str]]:
    return json.loads(path.read_text())


async def reply_to(fake_telegram, text: str, count: int = 1) -> str:
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, text)
    return (await fake_telegram.wait_for_messages(OWNER_CHAT, count, timeout=20))[-1]["text"]


@pytest.fixture(autouse=True)
def fresh_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    hooks_fixture.SEEN.clear()
    # Whole answers only: a streamed one would be read while it is still being written.
    monkeypatch.setenv("PALUI_STREAM_REPLIES", "false")


# -- hooks -------------------------------------------------------------------------------------


async def test_a_pre_hook_supplies_the_result_and_the_server_is_not_called(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    configure(extra='[hooks]\npre = ["tests.hooks_fixture:cached_list"]\n')
    fake_model.brain = steps_then_echo(calls(("mcp-notes__list_notes", {})))
    await start_palui()
    reply = await reply_to(fake_telegram, "list my notes")
    assert reply == "Results: 1: Groceries (from the operator's cache)"
    _, out = await palui_cli("runs", "--json")
    turn = json.loads(out)[0]["turn_id"]
    _, out = await palui_cli("runs", "show", turn, "--json")
    stages = [(s["stage"], s["outcome"]) for s in json.loads(out)["steps"]]
    assert stages == [("hook", "supplied")]  # no policy, no execution


async def test_a_raising_and_a_hanging_hook_fail_their_calls_closed_with_the_reason_recorded(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    configure(
        extra="[hooks]\npre = ["
        '"tests.hooks_fixture:explode", "tests.hooks_fixture:hang", '
        '"tests.hooks_fixture:hang_blocking"]\n'
        "timeout_s = 0.5\n"
    )
    fake_model.brain = steps_then_echo(
        calls(
            ("mcp-notes__add_note", {"title": "pay rent", "body": "now"}),
            ("mcp-notes__delete_note", {"id": "1"}),
            ("mcp-notes__search_notes", {"query": "rent"}),
        )
    )
    await start_palui()
    reply = await reply_to(fake_telegram, "pay the rent and delete note 1")
    assert "add_note was not run because a safety check failed" in reply
    assert "raised RuntimeError: the payments API key is missing" in reply
    assert "delete_note was not run because a safety check failed" in reply
    assert "did not answer within 0.5 s" in reply
    assert "search_notes was not run because a safety check failed" in reply
    assert notes(with_notes) == {"1": {"title": "Groceries", "body": "milk"}}  # nothing ran

    _, out = await palui_cli("runs", "--json")
    turn = json.loads(out)[0]
    assert turn["status"] == "done"  # the turn went on and answered
    _, out = await palui_cli("runs", "show", turn["turn_id"], "--json")
    failed = {s["tool"]: s["reason"] for s in json.loads(out)["steps"] if s["outcome"] == "failed"}
    assert "the payments API key is missing" in failed["mcp-notes__add_note"]
    assert "did not answer within 0.5 s" in failed["mcp-notes__delete_note"]
    assert "hang_blocking did not answer" in failed["mcp-notes__search_notes"]


def test_an_unimportable_hook_stops_start_up_with_exit_2(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from palui.cli.main import main

    config = tmp_path / "palui.toml"
    config.write_text('[hooks]\npre = ["tests.no_such_module:guard"]\n')
    monkeypatch.setenv("PALUI_CONFIG", str(config))
    monkeypatch.setenv("PALUI_TELEGRAM_TOKEN", "123:abc")
    monkeypatch.setenv("PALUI_ALLOWED_USERS", "1")
    monkeypatch.setenv("PALUI_MODEL", "openai/fake")
    monkeypatch.setenv("PALUI_DATA_DIR", str(tmp_path))
    assert main(["run"]) == 2
    err = capsys.readouterr().err
    assert "can't import 'tests.no_such_module'" in err and "tests.no_such_module:guard" in err


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        ('[hooks]\npre = ["no_colon_here"]\n', "is not a hook path"),
        ('[hooks]\npre = ["tests.hooks_fixture:not_callable"]\n', "is not callable"),
        ('[guards."mcp-notes__add_note".args.title]\npattern = "(["\n', "not a valid regular"),
        ('[guards."mcp-notes__add_note".args.title]\nlongest = 3\n', "longest"),
    ],
)
def test_bad_hook_and_guard_settings_are_config_errors(
    section: str, expected: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from palui.config import load_settings
    from palui.tools.rules import ToolRules

    config = tmp_path / "palui.toml"
    config.write_text(section)
    with pytest.raises(ConfigError, match=expected.replace("(", r"\(")):
        ToolRules.from_settings(load_settings(config))


# -- guards ------------------------------------------------------------------------------------


# -- the daily send cap ------------------------------------------------------------------------


async def test_past_the_daily_send_cap_a_send_is_refused_and_the_chat_is_told_once(
    with_notes, start_palui, fake_telegram, fake_model, tmp_path: Path
) -> None:
    kinds = tmp_path / "tool_kinds.yaml"
    kinds.write_text("tools:\n  mcp-notes__add_note:\n    kind: sends_out\n")
    configure(notes_extra='trust = "trusted"\n')  # its results don't taint: no cards
    fake_model.brain = steps_then_echo(
        calls(
            ("mcp-notes__add_note", {"title": "one", "body": "1"}),
            ("mcp-notes__add_note", {"title": "two", "body": "2"}),
            ("mcp-notes__add_note", {"title": "three", "body": "3"}),
        )
    )
    await start_palui(PALUI_KINDS_FILE=str(kinds), PALUI_DAILY_SEND_CAP="2")
    fake_telegram.push_text(OWNER_CHAT, OWNER_ID, "send three")
    messages = await fake_telegram.wait_for_messages(OWNER_CHAT, 2, timeout=20)
    texts = [m["text"] for m in messages]
    notice = [t for t in texts if t.startswith("Today's send cap is used up")]
    assert len(notice) == 1 and "limits.daily_send_cap" in notice[0]
    reply = next(t for t in texts if t.startswith("Results:"))
    assert reply.count("added note") == 2
    assert "today's limit of 2 outgoing sends is used up" in reply
    assert {n["title"] for n in notes(with_notes).values()} == {"Groceries", "one", "two"}

    fake_model.brain = steps_then_echo(calls(("mcp-notes__add_note", {"title": "4", "body": "4"})))
    reply = await reply_to(fake_telegram, "send one more", count=3)
    assert "today's limit of 2 outgoing sends is used up" in reply
    texts = [m["text"] for m in fake_telegram.sent_messages(OWNER_CHAT)]
    assert sum(t.startswith("Today's send cap is used up") for t in texts) == 1  # told once


# -- the record --------------------------------------------------------------------------------


async def test_palui_runs_show_explains_a_blocked_a_guarded_a_refused_and_a_timed_out_call(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    configure(
        notes_extra="timeout_s = 1\n",
        extra='[hooks]\npre = ["tests.hooks_fixture:block_deletes"]\n'
        '[guards."mcp-notes__add_note".args.title]\nmax_length = 10\n',
    )
    fake_model.brain = steps_then_echo(
        calls(
            ("mcp-notes__delete_note", {"id": "1"}),
            ("mcp-notes__add_note", {"title": "a title far too long", "body": "b"}),
            ("mcp-notes__add_note", {"title": "fwd", "body": "b", "to": "x@evil.example"}),
            ("mcp-notes__slow_op", {"seconds": 30}),
        )
    )
    await start_palui()
    reply = await reply_to(fake_telegram, "do four things")
    assert "Unknown outcome" in reply

    code, out = await palui_cli("runs")
    assert code == 0 and "done" in out and "chat" in out
    code, out = await palui_cli("runs", "--json")
    turn = json.loads(out)[0]
    assert turn["calls"] == 4 and turn["chat_id"] == OWNER_CHAT

    code, out = await palui_cli("runs", "show", turn["turn_id"][:10], "--json")
    assert code == 0
    steps = json.loads(out)["steps"]
    by_tool: dict[str, list[dict[str, Any]]] = {}
    for step in steps:
        by_tool.setdefault(step["call_id"], []).append(step)
    explained = [[(s["stage"], s["outcome"], s["reason"]) for s in v] for v in by_tool.values()]
    blocked, guarded, refused, timed_out = explained
    assert blocked == [("hook", "blocked", "deleting notes is switched off by the operator")]
    assert guarded[0][:2] == ("guard", "rejected") and "'title' is too long" in guarded[0][2]
    assert [s[:2] for s in refused] == [("guard", "passed"), ("policy", "run"),
                                        ("destination", "refused")]  # fmt: skip
    assert "x@evil.example" in refused[-1][2]
    assert [s[:2] for s in timed_out] == [("policy", "run"), ("execute", "timeout")]
    assert "Unknown outcome" in timed_out[-1][2]
    policy = next(s for s in steps if s["stage"] == "policy")
    assert len(policy["detail"]["decision_id"]) == 16

    code, text = await palui_cli("runs", "show", turn["turn_id"][:10])
    assert code == 0
    for line in ("deleting notes is switched off", "'title' is too long", "x@evil.example",
                 "Unknown outcome", "decision "):  # fmt: skip
        assert line in text
    code, text = await palui_cli("runs", "show", "zzzz")
    assert code == 1 and "No turn with an id starting 'zzzz'" in text


# -- in this process ---------------------------------------------------------------------------


def settings_with(database_url: str, tmp_path: Path, **sections: Any) -> Settings:
    """In-process settings with palui.toml's `[hooks]` and `[guards]` sections given."""
    return in_memory_settings(database_url, str(tmp_path / "data"), **sections)


def step(*tool_calls: tuple[str, dict[str, Any]]) -> Completion:
    """One model step calling every given tool at once."""
    requests = tuple(
        ToolCallRequest(f"c{i}", name, json.dumps(arguments))
        for i, (name, arguments) in enumerate(tool_calls, 1)
    )
    return Completion("scripted", "", requests, Usage(10, 5))


async def echo(messages: list[Message]) -> Completion:
    """The model's last step: a reply that quotes every tool result of the turn."""
    results = [m.content for m in messages if m.role == "tool"]
    return toolkit.answer("Results: " + " | ".join(results))


async def test_a_pre_hook_blocks_a_call_and_the_model_is_told_why(
    database_url: str, tmp_path: Path
) -> None:
    settings = settings_with(
        database_url, tmp_path, hooks={"pre": ["tests.hooks_fixture:block_deletes"]}
    )
    async with notes_palui(settings, step(("mcp-notes__delete_note", {"id": "1"})), echo) as (
        _, chat, _model, notes,
    ):  # fmt: skip
        await chat.send("delete note 1")
        assert "deleting notes is switched off by the operator" in chat.texts()[-1]
        assert "1" in notes.notes and notes.ran("delete_note") == 0  # nothing deleted
        # Blocked before the policy: a destructive call that never gets a card.
        assert not approval_cards(chat)
    seen = hooks_fixture.SEEN[0]
    assert (seen.tool, seen.connector, seen.tool_class) == (
        "mcp-notes__delete_note", "mcp-notes", "destructive",
    )  # fmt: skip
    assert (seen.turn_kind, seen.tainted, seen.chat_id) == ("chat", False, CHAT_ID)
    assert dict(seen.arguments) == {"id": "1"} and not seen.sends_out and seen.turn_id


async def test_a_pre_hook_rewrites_the_arguments_that_run(
    database_url: str, tmp_path: Path
) -> None:
    settings = settings_with(
        database_url, tmp_path, hooks={"pre": ["tests.hooks_fixture:tag_titles"]}
    )
    first = step(("mcp-notes__add_note", {"title": "Call mum", "body": "Sunday"}))
    async with notes_palui(settings, first, echo) as (_, chat, _model, notes):
        await chat.send("note: call mum on Sunday")
        assert "added note 2" in chat.texts()[-1]
        assert notes.notes["2"] == {"title": "[bot] Call mum", "body": "Sunday"}
        assert notes.ran("add_note") == 1


async def test_a_post_hook_adjusts_the_result_the_model_sees(
    database_url: str, tmp_path: Path
) -> None:
    settings = settings_with(
        database_url, tmp_path, hooks={"post": ["tests.hooks_fixture:redact_groceries"]}
    )
    first = step(("mcp-notes__search_notes", {"query": "milk"}))
    async with notes_palui(settings, first, echo) as (_, chat, _model, _notes):
        await chat.send("find milk")
        assert chat.texts()[-1] == "Results: 1: [redacted]"


async def test_a_raising_post_hook_withholds_the_result_of_a_call_that_ran(
    database_url: str, tmp_path: Path
) -> None:
    settings = settings_with(
        database_url, tmp_path, hooks={"post": ["tests.hooks_fixture:explode_after"]}
    )
    first = step(("mcp-notes__add_note", {"title": "Call mum", "body": "Sunday"}))
    async with notes_palui(settings, first, echo) as (_, chat, _model, notes):
        await chat.send("note: call mum")
        reply = chat.texts()[-1]
        assert "add_note ran, but its result was withheld" in reply
        assert "raised ValueError: can't parse ok result" in reply
        assert "added note" not in reply
        assert notes.notes["2"]["title"] == "Call mum"  # it did run: the model is told so
        assert notes.ran("add_note") == 1


async def test_a_guard_rejection_reaches_the_model_and_its_corrected_call_runs_in_the_turn(
    database_url: str, tmp_path: Path
) -> None:
    guards = {"mcp-notes__add_note": {"args": {"title": {"max_length": 10}}}}
    settings = settings_with(database_url, tmp_path, guards=guards)
    steps = (
        step(("mcp-notes__add_note", {"title": "Buy a birthday present", "body": "for Ann"})),
        step(("mcp-notes__add_note", {"title": "Ann gift", "body": "for Ann"})),
        echo,
    )
    async with notes_palui(settings, *steps) as (_, chat, _model, notes):
        await chat.send("remind me to buy Ann a present")
        assert len(chat.texts()) == 1  # one turn, one answer
        first, second = chat.texts()[0].removeprefix("Results: ").split(" | ")
        assert first == (
            "Error: mcp-notes__add_note was not run. The argument 'title' is too long: at most 10 "
            "characters allowed (it has 22). Call mcp-notes__add_note again with a corrected "
            "'title'."
        )
        assert second == "added note 2"
        assert notes.notes["2"] == {"title": "Ann gift", "body": "for Ann"}
        assert len(notes.notes) == 2 and notes.ran("add_note") == 1


async def test_a_pinned_argument_cant_be_overridden_and_the_card_shows_the_pinned_value(
    database_url: str, tmp_path: Path
) -> None:
    settings = settings_with(
        database_url, tmp_path, hooks={"pre": ["tests.hooks_fixture:tag_titles"]},
        guards={"mcp-notes__add_note": {"pin": {"body": "kept by the operator"}}},
    )  # fmt: skip
    # The search result (untrusted) taints the turn, so the write needs a card.
    steps = (
        step(("mcp-notes__search_notes", {"query": "milk"})),
        step(("mcp-notes__add_note", {"title": "exfil", "body": "all your secrets"})),
        echo,
    )
    async with notes_palui(settings, *steps) as (app, chat, _model, notes):
        await chat.send("find milk and note it")
        (card,) = approval_cards(chat)
        assert "body: kept by the operator" in card.text
        assert "title: [bot] exfil" in card.text
        assert "all your secrets" not in card.text
        await chat.tap(labelled(card)["✅ Approve"])
        await app.chats.wait_idle(chat.chat_id)
        assert chat.texts()[-1].startswith("Results:")
        # Approved as shown: pinned, and the pre hook did not run a second time.
        assert notes.notes["2"] == {"title": "[bot] exfil", "body": "kept by the operator"}
        assert notes.ran("add_note") == 1
    assert [c.tool for c in hooks_fixture.SEEN].count("mcp-notes__add_note") == 1
