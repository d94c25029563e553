"""Remote MCP servers that ask a person to sign in: a protected streamable-HTTP server and its
authorization server on loopback (tests/fakes/oauth_server.py), Palui in this process; the test
plays the person's browser with aiohttp."""

from __future__ import annotations

import asyncio
import io
import json
import math
import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest
from sqlalchemy import text

from palui.cli.doctor import run_doctor
from palui.connectors import McpConnector
from palui.connectors.oauth import OAuthSetup
from palui.db import Database
from palui.db.oauth import OAuthGrantRepo
from palui.db.sealing import SecretBox
from palui.domain import ConnectorState
from tests.fakes.memory_channel import (
    MemoryChannel,
    button,
    in_memory_settings,
    running_palui,
    switch_on,
)
from tests.fakes.oauth_server import oauth_servers
from tests.fakes.otlp_collector import FakeCollector
from tests.fakes.remote_palui import (
    SECRET,
    Setup,
    asks,
    connect_link,
    connected,
    follow,
    palui_with_tracker,
    tracker,
)
from tests.fakes.watched_channel import BOUND_S, WatchedChannel
from tests.toolkit import ScriptedModel, answer, call


async def test_protected_server_needs_sign_in_until_the_link_is_followed(
    database_url: str, tmp_path: Path
) -> None:
    async with palui_with_tracker(database_url, tmp_path) as t:
        app, chat, auth, url = t.app, t.chat, t.auth, t.url
        async with asyncio.timeout(BOUND_S):
            await tracker(app).wait_settled()
        before = tracker(app).status()
        await chat.command("status")
        status = chat.texts()[-1]

        link = await connect_link(chat)
        asked = {k: v[0] for k, v in parse_qs(urlsplit(link).query).items()}
        page = await follow(link)
        done = await chat.wait_for(connected)
        result = await tracker(app).call("list_issues", {})

    assert before.state is ConnectorState.NEEDS_SIGN_IN
    assert "🔑 tracker — needs sign-in" in status and "not connected" not in status
    assert asked["code_challenge_method"] == "S256" and asked["resource"] == url
    assert asked["redirect_uri"] == f"{app.http.url}/oauth/callback"
    assert page.status == 200
    assert done == (
        "✅ mcp-tracker connected: 5 tools (registered dynamically; PALUI_WEB_URL is not https, "
        "so no client metadata document)."
    )
    assert result.text == "1: login broken"
    assert auth.bearers_seen and set(auth.bearers_seen) <= set(auth.access)


async def test_a_used_or_unknown_state_is_refused(database_url: str, tmp_path: Path) -> None:
    async with palui_with_tracker(database_url, tmp_path) as t:
        chat = t.chat
        link = await connect_link(chat)
        landed = await follow(link, redirects=False)
        callback = landed.headers["Location"]
        forged = await follow(callback.replace("state=", "state=forged"))
        first = await follow(callback)
        again = await follow(callback)
        await chat.wait_for(connected)

    assert forged.status == 400 and first.status == 200 and again.status == 400


async def test_tokens_are_sealed_in_the_database(database_url: str, tmp_path: Path) -> None:
    async with palui_with_tracker(database_url, tmp_path) as t:
        app, chat, auth = t.app, t.chat, t.auth
        await follow(await connect_link(chat))
        await chat.wait_for(connected)
        async with app.db.session() as s:
            rows = (await s.execute(text("SELECT tokens, client FROM oauth_grants"))).all()

    tokens = [*auth.access, *auth.refresh]
    stored = " ".join(f"{row.tokens} {row.client}" for row in rows)
    assert tokens and rows
    assert not any(token in stored for token in tokens)
    if database_url.startswith("sqlite"):
        assert not any(token.encode() in sqlite_bytes(tmp_path / "data") for token in tokens)


def sqlite_bytes(data_dir: Path) -> bytes:
    """Every byte of the database files, the write-ahead log's too."""
    return b"".join(path.read_bytes() for path in data_dir.glob("palui.db*"))


async def test_paste_the_address_when_the_browser_cannot_reach_palui(
    database_url: str, tmp_path: Path
) -> None:
    web_url = "https://palui.example"
    async with palui_with_tracker(database_url, tmp_path, documents=True, web_url=web_url) as t:
        app, chat, auth = t.app, t.chat, t.auth
        link = await connect_link(chat)
        landed = await follow(link, redirects=False)  # the browser ends on an unreachable page
        address = landed.headers["Location"]
        await chat.send(address)
        done = await chat.wait_for(connected)
        async with aiohttp.ClientSession() as browser:
            document = await (await browser.get(f"{app.http.url}/oauth/client.json")).json()

    assert address.startswith(f"{web_url}/oauth/callback?")
    assert auth.authorize_requests[-1]["client_id"] == f"{web_url}/oauth/client.json"
    assert document["client_id"] == f"{web_url}/oauth/client.json"
    assert document["redirect_uris"] == [f"{web_url}/oauth/callback"]
    assert done == "✅ mcp-tracker connected: 5 tools (as Palui's client metadata document)."
    assert "Got it, signing in…" in chat.texts()


async def seal_expired(app: Any) -> None:
    """The stored access token as if it had expired (the server's too)."""
    grants: OAuthGrantRepo = app.remote.grants
    stored = json.loads(await grants.tokens("mcp-tracker") or "{}")
    stored["expires_at"] = time.time() - 1
    await grants.save_tokens("mcp-tracker", json.dumps(stored), app.now())


def other_process(app: Any, holder: str) -> McpConnector:
    """The tracker's connector as another Palui process on the same database builds it."""
    grants = OAuthGrantRepo(app.db, SecretBox.from_passphrase(SECRET))
    setup = OAuthSetup(grants, lambda: app.http.url, holder=holder)
    return McpConnector("tracker", tracker(app).settings, oauth=setup)


async def test_an_expired_token_is_refreshed_once_across_two_processes(
    database_url: str, tmp_path: Path
) -> None:
    async with palui_with_tracker(database_url, tmp_path) as t:
        app, chat, auth = t.app, t.chat, t.auth
        await follow(await connect_link(chat))
        await chat.wait_for(connected)
        await seal_expired(app)
        auth.expire_access_tokens()
        others = [other_process(app, holder) for holder in ("process 1", "process 2")]
        try:
            await asyncio.gather(*(c.start() for c in others))
            async with asyncio.timeout(BOUND_S):
                states = await asyncio.gather(
                    *(c.wait_for_state(ConnectorState.CONNECTED) for c in others)
                )
            results = [await c.call("list_issues", {}) for c in others]
        finally:
            await asyncio.gather(*(c.stop() for c in others))

    assert states == [ConnectorState.CONNECTED] * 2
    assert auth.refreshes == 1
    assert [r.text for r in results] == ["1: login broken"] * 2


async def test_a_revoked_refresh_token_asks_for_sign_in_once(
    database_url: str, tmp_path: Path
) -> None:
    async with palui_with_tracker(database_url, tmp_path) as t:
        app, chat, auth = t.app, t.chat, t.auth
        await follow(await connect_link(chat))
        await chat.wait_for(connected)
        await seal_expired(app)
        auth.expire_access_tokens()
        auth.revoke_refresh_tokens()
        connector = tracker(app)
        connector.retry_now()
        async with asyncio.timeout(BOUND_S):
            await connector.wait_for_state(ConnectorState.NEEDS_SIGN_IN)
        told = await chat.wait_for(lambda t: "sign in again" in t)
        connector.retry_now()
        async with asyncio.timeout(BOUND_S):
            await connector.wait_for_state(ConnectorState.CONNECTING)
            await connector.wait_for_state(ConnectorState.NEEDS_SIGN_IN)
        await chat.command("status")

    assert told == "⚠️ mcp-tracker needs you to sign in again: send /connect tracker"
    assert sum("sign in again" in t for t in chat.texts()) == 1


async def test_disconnect_revokes_and_forgets_the_tokens(
    database_url: str, tmp_path: Path, capsys: Any
) -> None:
    async with palui_with_tracker(database_url, tmp_path) as t:
        await follow(await connect_link(t.chat))
        await t.chat.wait_for(connected)
        issued = [*t.auth.access, *t.auth.refresh]
        await t.chat.command("disconnect", "tracker")
        async with asyncio.timeout(BOUND_S):
            await tracker(t.app).wait_for_state(ConnectorState.NEEDS_SIGN_IN)
        left = await t.app.remote.grants.tokens("mcp-tracker")
        await t.chat.command("status")
    logged = capsys.readouterr()

    assert "Signed out of mcp-tracker: its tokens are forgotten and revoked at the server." in (
        t.chat.texts()
    )
    assert left is None and set(t.auth.revoked) == set(issued)
    assert "🔑 tracker — needs sign-in" in t.chat.texts()[-1]
    assert not any(token in logged.out + logged.err for token in issued)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_doctor_says_a_protected_server_needs_sign_in(
    settings_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = Database(settings_env["PALUI_DATABASE_URL"])
    await db.migrate()
    await db.close()
    async with oauth_servers() as (_auth, url):
        config = tmp_path / "palui.toml"
        config.write_text(f'[mcp.tracker]\nurl = "{url}"\n')
        monkeypatch.setenv("PALUI_CONFIG", str(config))
        out = io.StringIO()
        await run_doctor(None, out)
    report = out.getvalue()

    assert "❌ mcp-tracker: needs sign-in" in report, report
    assert "Send /connect tracker to Palui in your private chat" in report


async def signed_in_tracker(t: Setup) -> None:
    await follow(await connect_link(t.chat))
    await t.chat.wait_for(connected)
    await switch_on(t.app, "mcp-tracker", "file_issue")


@pytest.mark.parametrize(
    ("tapped", "result"),
    [
        ("beta", "filed “login” in beta"),
        ("Decline", "not filed: decline"),
        ("Cancel", "not filed: cancel"),
    ],
)
async def test_a_servers_question_is_asked_in_the_chat_and_answered_by_a_tap(
    database_url: str, tmp_path: Path, tapped: str, result: str
) -> None:
    model = ScriptedModel([call("mcp-tracker__file_issue", {"title": "login"}), answer("Done.")])
    allowed = frozenset({MemoryChannel.user_id, 4242})  # 4242: someone else allowed
    async with palui_with_tracker(
        database_url, tmp_path, model=model, trust="trusted", allowed_users=allowed
    ) as t:
        await signed_in_tracker(t)
        await t.chat.send("file an issue about login")
        approval = await t.chat.wait_for_card(lambda c: "file_issue" in c.text)
        turn = asyncio.create_task(t.chat.tap(button(approval, "✅ Approve")))
        card = await t.chat.wait_for_card(asks)
        # A tap is answered only once the chat is idle, and the turn waits for the answer: the
        # taps go in as tasks, the stranger's first.
        stranger = t.chat.inbound(callback_data=button(card, "alpha"), user_id=4242)
        refused = asyncio.create_task(t.chat.push(stranger))
        await t.chat.wait_for_toast(f"cb{stranger.update_id}")
        answered = asyncio.create_task(t.chat.tap(button(card, tapped)))
        async with asyncio.timeout(BOUND_S):
            await asyncio.gather(turn, refused, answered)
        async with t.app.db.session() as s:
            tainted = (await s.execute(text("SELECT tainted, taint_source FROM turns"))).all()

    assert card.text.splitlines() == [
        "❓ mcp-tracker asks (the server's words, not Palui's):",
        "Which project should “login” go to?",
    ]
    labels = [b.label for row in card.keyboard for b in row]
    assert labels == ["alpha", "beta", "Decline", "Cancel"]
    assert ("cb" + str(stranger.update_id), "Only the person this turn is for can answer.") in (
        t.chat.answers
    )
    tool_result = model.calls[-1][0][-1]
    assert result in str(tool_result.content)
    assert t.chat.texts()[-1] == "Done."
    assert any(row.tainted and "mcp-tracker" in (row.taint_source or "") for row in tainted)


async def test_a_question_pending_across_a_restart_is_answered_after(
    database_url: str, tmp_path: Path
) -> None:
    model = ScriptedModel([call("mcp-tracker__file_issue", {"title": "login"}), answer("Done.")])
    chat = WatchedChannel()  # one person's chat across both runs
    async with oauth_servers() as (auth, url):
        settings = in_memory_settings(
            database_url, str(tmp_path / "data"), mcp={"tracker": {"url": url, "trust": "trusted"}},
            secret_key=SECRET,
        )  # fmt: skip
        async with running_palui(settings, model, chat) as (app, _):
            await signed_in_tracker(Setup(app, chat, auth, url))
            await chat.send("file an issue about login")
            approval = await chat.wait_for_card(lambda c: "file_issue" in c.text)
            approved = asyncio.create_task(chat.tap(button(approval, "✅ Approve")))
            card = await chat.wait_for_card(asks)
            approved.cancel()  # Palui stops with the question open
        async with running_palui(settings, ScriptedModel([]), chat) as (app, _):
            await tracker(app).wait_settled()
            await chat.tap(button(card, "beta"))
            shown = await chat.wait_for(lambda t: "continued after your answer" in t)
            async with app.db.session() as s:
                statuses = (await s.execute(text("SELECT status FROM server_questions"))).all()

    assert shown.splitlines() == [
        "mcp-tracker__file_issue, continued after your answer (the server's words, not Palui's):",
        "filed “login” in beta",
    ]
    assert [row.status for row in statuses] == ["continued"]
    assert sum("continued after your answer" in t for t in chat.texts()) == 1


async def test_a_form_is_asked_one_field_at_a_time_and_typed_answers_stay_out_of_the_chat(
    database_url: str, tmp_path: Path
) -> None:
    model = ScriptedModel([call("mcp-tracker__plan_release", {"name": "v2"}), answer("Planned.")])
    async with palui_with_tracker(database_url, tmp_path, model=model, trust="trusted") as t:
        await follow(await connect_link(t.chat))
        await t.chat.wait_for(connected)
        await switch_on(t.app, "mcp-tracker", "plan_release")
        # A read-only looking tool runs without a card: the turn waits for the form's answers.
        turn = asyncio.create_task(t.chat.send("plan the v2 release"))
        when = await t.chat.wait_for_card(lambda c: "(1/3) When" in c.text)
        typed = [asyncio.create_task(t.chat.send("tomorrow at noon"))]
        await t.chat.wait_for_card(lambda c: "(2/3) Hours" in c.text)
        typed.append(asyncio.create_task(t.chat.send("three")))
        refused = await t.chat.wait_for_card(lambda c: c.text.startswith("That is not"))
        typed.append(asyncio.create_task(t.chat.send("3")))
        urgent = await t.chat.wait_for_card(lambda c: "(3/3) Urgent" in c.text)
        typed.append(asyncio.create_task(t.chat.tap(button(urgent, "Yes"))))
        async with asyncio.timeout(BOUND_S):
            await asyncio.gather(turn, *typed)

    assert when.text.splitlines()[-1] == "When: reply with your answer."
    assert [b.label for row in urgent.keyboard for b in row] == ["Yes", "No", "Decline", "Cancel"]
    assert refused.text == "That is not Hours: reply with a whole number."
    sent = model.calls[-1][0]
    assert "v2: tomorrow at noon, 3 h, urgent=True" in str(sent[-1].content)
    assert not any("tomorrow" in str(m.content) for m in sent[:-1])  # never in the history
    assert t.chat.texts()[-1] == "Planned."


async def test_a_calls_progress_is_one_message_edited_at_most_once_a_second_then_removed(
    database_url: str, tmp_path: Path
) -> None:
    model = ScriptedModel([call("mcp-tracker__deploy", {}), answer("Deployed.")])
    async with palui_with_tracker(database_url, tmp_path, model=model, trust="trusted") as t:
        await follow(await connect_link(t.chat))
        await t.chat.wait_for(connected)
        await switch_on(t.app, "mcp-tracker", "deploy")
        turn = asyncio.create_task(t.chat.send("deploy it"))
        first = await t.chat.wait_for_card(lambda c: "deploy" in c.text)
        if any(b.label == "✅ Approve" for row in first.keyboard for b in row):
            turn = asyncio.create_task(t.chat.tap(button(first, "✅ Approve")))
        started = time.monotonic()
        async with asyncio.timeout(BOUND_S):
            await turn
            await t.chat.wait_for(lambda text: text == "Deployed.")
        took = time.monotonic() - started

    notes = [sent for sent in t.chat.sent_cards if sent.card.text.startswith("⏳ ")]
    assert len(notes) == 1
    assert notes[0].card.text.startswith("⏳ mcp-tracker__deploy: ")
    edits = [card for _, message_id, card in t.chat.edits if message_id == notes[0].message_id]
    assert all(card.text.startswith("⏳ mcp-tracker__deploy: ") for card in edits)
    assert len(edits) <= math.ceil(took)
    assert t.chat.deleted == [notes[0].message_id]


async def test_a_call_to_a_streamable_http_server_carries_the_turns_trace_context(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    collector = FakeCollector()
    await collector.start()
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")  # export every 50 ms, not 5 s
    model = ScriptedModel([call("mcp-tracker__trace_context", {}), answer("Traced.")])
    try:
        async with palui_with_tracker(
            database_url, tmp_path, model=model, trust="trusted", otel_endpoint=collector.url
        ) as t:
            await follow(await connect_link(t.chat))
            await t.chat.wait_for(connected)
            await switch_on(t.app, "mcp-tracker", "trace_context")
            await t.chat.send("where is the trace?")
            approvals = [c for c in t.chat.cards if "trace_context" in c.text]
            if approvals:  # how the tool is classed decides whether it asks first
                await t.chat.tap(button(approvals[-1], "✅ Approve"))
            await t.chat.wait_for(lambda text: text == "Traced.")
            await collector.wait_for(lambda spans: any(s.name == "palui.tool" for s in spans))
    finally:
        await collector.close()

    carried = str(model.calls[-1][0][-1].content)
    [tool] = [s for s in collector.spans if s.name == "palui.tool"]
    assert re.search(rf"00-{tool.trace_id}-[0-9a-f]{{16}}-[0-9a-f]{{2}}", carried), carried
