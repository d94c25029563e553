"""A server's question that asks the person to open a page (MCP elicitation, URL mode): a sign-in,
a payment, a consent the server collects on its own site, out of Palui's sight.

The card shows the server's message and the address exactly as the server gave it, with a
button that opens it (link previews are off for every message Palui sends, so nothing fetches
the page before the person does), "✅ Done", Decline and Cancel. Telegram never says whether a
URL button was tapped, so the person's "✅ Done" is their consent; on the older protocol the
server's `notifications/elicitation/complete` for the question's `elicitationId` says the same
and ends the wait too. Either way the server is answered `accept` (URL mode carries no content);
Decline and Cancel reach it as such, and an unanswered question is cancelled when it expires.

An address is shown only if a browser would go where it says: http or https, read with Palui's
one URL parser (palui/policy/urls.py), no user name before the host, nothing a client reads
otherwise, no spaces or control characters (the address shown must be the address opened). Any
other is declined without a card, and the person is told why in Palui's words.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import mcp.types as mcp_types

from palui.callbacks import question
from palui.connectors.asked import CANCEL, DECLINE, Round, not_accepted
from palui.domain import Button
from palui.policy.urls import SCHEME, read_url

DONE = "y"
MAX_URL_CHARS = 2048  # what browsers and Telegram's URL buttons take without trouble
MAX_MESSAGE_CHARS = 1000
WEB_SCHEMES = ("http", "https")


def page_problem(url: str) -> str | None:
    """Why `url` is not shown to the person (None: it may be)."""
    scheme = SCHEME.match(url)
    if scheme is None or scheme.group(1).lower() not in WEB_SCHEMES:
        return "its address is not a web address (http or https)"
    if len(url) > MAX_URL_CHARS:
        return "its address is too long"
    if any(not ch.isprintable() or ch.isspace() for ch in url):
        return "its address has spaces or invisible characters in it"
    reading = read_url(url)
    if reading is None or reading.host is None:
        return "its address names no host a browser can reach"
    if reading.ambiguous is not None:
        return f"its address could lead somewhere else than it shows: {reading.ambiguous}"
    return None


def refused_note(connector_id: str, problem: str) -> str:
    return f"⚠️ {connector_id} asked you to open a page; Palui declined it: {problem}."


@dataclass(frozen=True, slots=True)
class PageAsked:
    """A page a server asks the person to open, as asked (and as stored for a restart)."""

    connector_id: str
    params: mcp_types.ElicitRequestURLParams
    round_: Round | None = None

    typed = False  # answered by a tap only

    def card_text(self) -> str:
        message = self.params.message[:MAX_MESSAGE_CHARS]
        return (
            f"🔗 {self.connector_id} asks you to open a page (the server's words, not Palui's):\n"
            f"{message}\n\n{self.params.url}\n\n"
            "Tap ✅ Done once you have finished there."
        )

    def rows(self, token: str) -> tuple[tuple[Button, ...], ...]:
        return (
            (Button("🔗 Open the page", "", url=self.params.url),),
            (Button("✅ Done", question(token, DONE)),),
            (
                Button("Decline", question(token, DECLINE)),
                Button("Cancel", question(token, CANCEL)),
            ),
        )

    def choice(self, choice: str) -> dict[str, Any]:
        action = {DONE: "accept", DECLINE: "decline"}.get(choice, "cancel")
        return {"action": action}

    def said(self, answer: dict[str, Any], typed: str) -> str:
        return "done" if answer["action"] == "accept" else not_accepted(answer)

    def call_json(self) -> str | None:
        if self.round_ is None:
            return None
        params = self.params.model_dump(mode="json", by_alias=True, exclude_none=True)
        return json.dumps({**self.round_.stored(), "params": params})

    @staticmethod
    def of(connector_id: str, call: dict[str, Any]) -> PageAsked:
        params = mcp_types.ElicitRequestURLParams.model_validate(call["params"])
        return PageAsked(connector_id, params, Round.of(call))
