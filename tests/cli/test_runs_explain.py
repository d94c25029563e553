"""`palui runs explain <decision-id>`: what decided a recorded call — its class and where the
class came from then, the width, the taint and its source, the turn's kind, the matrix cell,
the kinds file's digest and whether inference was on — and the web console's turn page too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from palui.config import Settings
from tests import toolkit
from tests.fakes.cli import palui_main
from tests.fakes.memory_channel import (
    approval_cards,
    in_memory_settings,
    running_palui,
    switch_on,
)
from tests.fakes.web_console import signed_in


async def _text(**_: object) -> str:
    return "found"


@pytest.fixture
def settings(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("PALUI_DATABASE_URL", database_url)
    config = tmp_path / "palui.toml"
    config.write_text("")
    monkeypatch.setenv("PALUI_CONFIG", str(config))
    return in_memory_settings(database_url, str(tmp_path / "data"))


async def test_a_recorded_decision_is_explained_from_its_id(settings) -> None:
    toolset = toolkit.FunctionToolset(
        "fn", {"find_notes": _text, "delete_note": _text}, read_only=["find_notes"],
        destructive=["delete_note"], trust="untrusted",
    )  # fmt: skip
    model = toolkit.ScriptedModel(
        [toolkit.call("fn__find_notes", {}), toolkit.call("fn__delete_note", {}, call_id="c2")],
        forever=toolkit.answer("ok"),
    )
    async with running_palui(settings, model, toolsets=[toolset]) as (app, chat):
        await switch_on(app, "fn", "delete_note")
        await chat.send("find it, then delete it")
        assert approval_cards(chat)
        run = (await app.store.runs.recent_runs(1))[0]
        policy = [s for s in await app.store.runs.steps(run.turn_id) if s.stage == "policy"]
        held = next(s for s in policy if s.tool == "fn__delete_note")
        decision_id = held.detail["decision_id"]

        code, out, err = await palui_main("runs", "explain", decision_id)
        assert code == 0, err
        assert f"Decision {decision_id}: ask" in out
        assert "tool: fn__delete_note" in out
        assert "class: destructive (from annotation: marked destructive" in out
        assert "width: writes, from default" in out
        assert "turn: chat" in out
        assert "taint: this turn read untrusted content from fn (fn__find_notes)" in out
        assert "matrix cell: destructive × tainted chat (width writes) → ask" in out
        assert "kinds file: none" in out and "inference: on" in out

        code, out, _ = await palui_main("runs", "explain", decision_id, "--json")
        data = json.loads(out)
        assert data["detail"]["class_source"] == "annotation" and data["outcome"] == "ask"
        code, out, _ = await palui_main("runs", "explain", "0000000000000000")
        assert code == 1 and "No call was decided under" in out

        async with signed_in(app, chat) as web:
            page = await web.get(f"/ui/turns/{run.turn_id}")
            assert "matrix cell: destructive × tainted chat (width writes) → ask" in page
