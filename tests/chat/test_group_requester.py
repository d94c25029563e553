"""A group turn serves one person, so `[groups] approver = "requester"` names the right one:
messages of different people waiting together make separate turns, in order, and the requester
decides their card in the chat or on the web console, no one else. Through the real
python-telegram-bot, the fake Bot API, a fake model and the real notes MCP server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp

from tests.conftest import OWNER_ID
from tests.fakes.model_server import ModelRequest, Script
from tests.fakes.web_console import LINK, WebClient, use_link
from tests.toolkit import BOT, FRIEND_ID, GROUP, user_contents
from tests.toolkit import approve_data as _approve
from tests.toolkit import group_card as _card

DELETE = Script(tool_calls=[("mcp-notes__delete_note", json.dumps({"id": "1"}))])


def notes_brain(release: asyncio.Event | None = None) -> Any:
    """Holds a first "hold on" turn until `release`; asks to delete note 1 when the newest
    person's message says so; answers "Deleted it." after the tool's result."""

    async def brain(request: ModelRequest) -> Script:
        if request.messages[-1]["role"] == "tool":
            return Script(text="Deleted it.")
        said = request.last_user_text
        if "hold on" in said and release is not None:
            await release.wait()
            return Script(text="Held.")
        if "delete note 1" in said or said.endswith("please"):
            return DELETE
        return Script(text="Sunny.")

    return brain


async def test_two_peoples_messages_make_two_turns_each_decided_only_by_its_requester(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    release = asyncio.Event()
    fake_model.brain = notes_brain(release)
    await start_palui(
        PALUI_ALLOWED_USERS=f"{OWNER_ID},{FRIEND_ID}", PALUI_GROUPS__APPROVER="requester"
    )
    fake_telegram.push_message(GROUP, FRIEND_ID, f"{BOT} hold on")
    await fake_model.wait_until_in_flight()
    # While that turn runs, the owner asks twice, then the friend asks: all three wait.
    waiting = [
        fake_telegram.push_message(GROUP, OWNER_ID, f"{BOT} delete note 1"),
        fake_telegram.push_message(GROUP, OWNER_ID, f"{BOT} please"),
        fake_telegram.push_message(GROUP, FRIEND_ID, f"{BOT} weather?"),
    ]
    for update_id in waiting:
        await fake_telegram.wait_until_confirmed(update_id)
    release.set()

    await fake_telegram.wait_for_text(GROUP, "Approval needed")
    await fake_telegram.wait_for_text(GROUP, "Sunny.")
    # The owner's two messages make one turn, the friend's the next: in the order they came.
    owners, friends = fake_model.requests[1], fake_model.requests[2]
    assert user_contents(owners)[-2:] == [f"{BOT} delete note 1", f"{BOT} please"]
    assert f"{BOT} weather?" not in user_contents(owners)
    assert user_contents(friends)[-1] == f"{BOT} weather?"
    card = _card(fake_telegram)

    # The friend spoke last, but the card is the owner's: the friend's tap decides nothing.
    fake_telegram.push_callback(GROUP, FRIEND_ID, card["message_id"], _approve(card))
    refused = await fake_telegram.wait_for_request("answerCallbackQuery")
    assert refused.params["text"] == "Only the person who asked can decide this card."
    assert "1" in json.loads(with_notes.read_text())

    fake_telegram.push_callback(GROUP, OWNER_ID, card["message_id"], _approve(card))
    await fake_telegram.wait_for_text(GROUP, "Deleted it.")
    assert json.loads(with_notes.read_text()) == {}


async def _signed_in(fake_telegram, url: str, user_id: int, session: aiohttp.ClientSession):
    """`/web` in the person's private chat, then the link's Sign in button."""
    fake_telegram.push_message(user_id, user_id, "/web")
    sent = await fake_telegram.wait_for_text(user_id, "/ui/signin/")
    link = LINK.search(sent["text"])
    assert link is not None
    assert (await use_link(session, link.group(0))).status == 303
    client = WebClient(session, url)
    await client.get("/ui/approvals")  # its CSRF token
    return client


async def test_the_requester_decides_a_group_card_on_the_web_and_no_one_else_does(
    with_notes, start_palui, fake_telegram, fake_model
) -> None:
    fake_model.brain = notes_brain()
    palui = await start_palui(
        PALUI_ALLOWED_USERS=f"{OWNER_ID},{FRIEND_ID}", PALUI_GROUPS__APPROVER="requester"
    )
    fake_telegram.push_message(GROUP, FRIEND_ID, f"{BOT} weather?")  # the group is theirs too
    await fake_telegram.wait_for_text(GROUP, "Sunny.")
    fake_telegram.push_message(GROUP, OWNER_ID, f"{BOT} delete note 1")
    await fake_telegram.wait_for_text(GROUP, "Approval needed")
    (pending,) = await palui.app.store.approvals.pending(GROUP)
    form = {"decision": "approve", "digest": pending.digest}
    url = palui.app.http.url

    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        friend = await _signed_in(fake_telegram, url, FRIEND_ID, session)
        assert pending.digest in await friend.get("/ui/approvals")  # they see it
        answer = await friend.post(f"/ui/approvals/{pending.id}", form)
        assert answer.headers["Location"] == "/ui/approvals?done=not_requester"
        page = await friend.get(answer.headers["Location"])
        assert "Only the person who asked can decide this card." in page
        assert "1" in json.loads(with_notes.read_text())

    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        owner = await _signed_in(fake_telegram, url, OWNER_ID, session)
        answer = await owner.post(f"/ui/approvals/{pending.id}", form)
        assert answer.headers["Location"] == "/ui/approvals?done=approved"
    await fake_telegram.wait_for_text(GROUP, "Deleted it.")
    assert json.loads(with_notes.read_text()) == {}
