"""The policy matrix, decision ids, the card's "why" line and taint bookkeeping."""

from __future__ import annotations

import pytest

from palui.domain import RemoteTool, Taint, TurnKind
from palui.policy import (
    Decision,
    ToolClass,
    classify,
    decide,
    decide_call,
    decision_id,
    describe_taint,
    most_recent,
    taints,
    why,
)

READ, WRITE, DESTRUCTIVE = ToolClass.READ, ToolClass.WRITE, ToolClass.DESTRUCTIVE
CHAT, SCHEDULED, WEBHOOK = TurnKind.CHAT, TurnKind.SCHEDULED, TurnKind.WEBHOOK
RUN, ASK, NOT_OFFERED = Decision.RUN, Decision.ASK, Decision.NOT_OFFERED

MATRIX = [
    (READ, CHAT, False, RUN),
    (WRITE, CHAT, False, RUN),
    (DESTRUCTIVE, CHAT, False, ASK),
    (READ, CHAT, True, RUN),
    (WRITE, CHAT, True, ASK),
    (DESTRUCTIVE, CHAT, True, ASK),
    (READ, SCHEDULED, False, RUN),
    (WRITE, SCHEDULED, False, ASK),
    (DESTRUCTIVE, SCHEDULED, False, NOT_OFFERED),
    (READ, SCHEDULED, True, RUN),
    (WRITE, SCHEDULED, True, ASK),
    (DESTRUCTIVE, SCHEDULED, True, NOT_OFFERED),
    (READ, WEBHOOK, False, NOT_OFFERED),
    (WRITE, WEBHOOK, False, NOT_OFFERED),
    (DESTRUCTIVE, WEBHOOK, False, NOT_OFFERED),
    (READ, WEBHOOK, True, NOT_OFFERED),
    (WRITE, WEBHOOK, True, NOT_OFFERED),
    (DESTRUCTIVE, WEBHOOK, True, NOT_OFFERED),
]


@pytest.mark.parametrize(("tool_class", "kind", "tainted", "expected"), MATRIX)
def test_every_cell_of_the_matrix(
    tool_class: ToolClass, kind: TurnKind, tainted: bool, expected: Decision
) -> None:
    assert decide(tool_class, kind, tainted) is expected


@pytest.mark.parametrize("unknown", [None, "admin", ""])
@pytest.mark.parametrize(("kind", "expected"), [(CHAT, ASK), (SCHEDULED, NOT_OFFERED)])
def test_an_unknown_class_is_treated_as_destructive(
    unknown: str | None, kind: TurnKind, expected: Decision
) -> None:
    assert decide(unknown, kind, tainted=False) is expected


def test_an_unknown_turn_kind_gets_no_tools() -> None:
    assert decide(READ, "cron", tainted=False) is NOT_OFFERED


@pytest.mark.parametrize(("kind", "expected"), [(CHAT, ASK), (SCHEDULED, NOT_OFFERED)])
def test_a_tool_nobody_can_tell_asks_in_chat_and_is_not_offered_to_jobs(
    kind: TurnKind, expected: Decision
) -> None:
    unknowable = RemoteTool("zorp", "Zorps the quux", {"type": "object", "properties": {}})
    classification = classify("mcp-x__zorp", unknowable, None)
    assert classification.tool_class is DESTRUCTIVE
    assert decide(classification.tool_class, kind, tainted=False) is expected


@pytest.mark.parametrize(("tool_class", "kind", "tainted", "expected"), MATRIX)
def test_a_call_to_a_tool_that_is_not_offered_is_refused(
    tool_class: ToolClass, kind: TurnKind, tainted: bool, expected: Decision
) -> None:
    at_call = Decision.REFUSED if expected is NOT_OFFERED else expected
    assert decide_call(tool_class, kind, tainted) is at_call


# --- decision ids ----------------------------------------------------------------------

BASIS = {
    "tool": "mcp-notes__add_note",
    "tool_class": WRITE,
    "decision": ASK,
    "kinds_digest": "a" * 64,
    "infer": True,
    "definition_hash": "b" * 64,
}


def test_decision_id_is_short_stable_hex() -> None:
    first, second = decision_id(**BASIS), decision_id(**dict(BASIS))  # type: ignore[arg-type]
    assert first == second
    assert len(first) == 16 and int(first, 16) >= 0


@pytest.mark.parametrize(
    ("field", "other"),
    [
        ("tool", "mcp-notes__add_notes"),
        ("tool_class", DESTRUCTIVE),
        ("decision", RUN),
        ("kinds_digest", "c" * 64),
        ("kinds_digest", None),
        ("infer", False),
        ("definition_hash", "d" * 64),
    ],
)
def test_decision_id_changes_with_everything_it_rests_on(field: str, other: object) -> None:
    changed = {**BASIS, field: other}
    assert decision_id(**changed) != decision_id(**BASIS)  # type: ignore[arg-type]


# --- why lines -------------------------------------------------------------------------

FETCH = Taint("mcp-notes", "mcp-notes__fetch_page")
EARLIER = Taint("mcp-web", "mcp-web__fetch", turns_ago=2)


@pytest.mark.parametrize(
    ("tool_class", "kind", "tainted", "taint", "expected"),
    [
        (DESTRUCTIVE, CHAT, False, None, "destructive tools always ask first"),
        (
            DESTRUCTIVE,
            CHAT,
            True,
            FETCH,
            "destructive tools always ask first; "
            "this turn read untrusted content from mcp-notes (mcp-notes__fetch_page)",
        ),
        (
            WRITE,
            CHAT,
            True,
            FETCH,
            "this turn read untrusted content from mcp-notes (mcp-notes__fetch_page)",
        ),
        (
            WRITE,
            CHAT,
            True,
            EARLIER,
            "this conversation includes content from mcp-web, 2 turns ago; /new starts clean",
        ),
        (WRITE, CHAT, True, None, "this turn read untrusted content"),
        (WRITE, SCHEDULED, False, None, "scheduled jobs ask before any write"),
        (
            WRITE,
            SCHEDULED,
            True,
            EARLIER,
            "scheduled jobs ask before any write; "
            "this conversation includes content from mcp-web, 2 turns ago; /new starts clean",
        ),
        (DESTRUCTIVE, SCHEDULED, False, None, "scheduled jobs are not offered destructive tools"),
        (READ, WEBHOOK, False, None, "webhook summaries run with no tools"),
        (READ, CHAT, True, FETCH, "read tools run without asking"),
        (WRITE, CHAT, False, None, "writes run at once in a chat turn with no untrusted content"),
    ],
)
def test_why_line_for_the_card(
    tool_class: ToolClass,
    kind: TurnKind,
    tainted: bool,
    taint: Taint | None,
    expected: str,
) -> None:
    assert why(tool_class, kind, tainted, taint=taint) == expected


def test_why_says_when_palui_could_not_tell_what_a_tool_does() -> None:
    assert "can't tell" in why(None, CHAT, False, unsure=True)


# --- taint -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (Taint("webhook:github"), "this turn read untrusted content from webhook:github"),
        (
            Taint("mcp-web", "mcp-web__fetch", turns_ago=0),
            "this turn read untrusted content from mcp-web (mcp-web__fetch)",
        ),
        (
            Taint("mcp-web", turns_ago=1),
            "this conversation includes content from mcp-web, 1 turn ago; /new starts clean",
        ),
    ],
)
def test_taint_is_described_with_its_source_and_age(source: Taint, expected: str) -> None:
    assert describe_taint(source) == expected


def test_taint_carried_into_later_turns_ages() -> None:
    assert FETCH.carried().turns_ago == 1
    assert FETCH.carried().carried(2).turns_ago == 3


def test_the_card_names_the_most_recent_source() -> None:
    assert most_recent([EARLIER, FETCH.carried(), EARLIER.carried()]) == FETCH.carried()
    assert most_recent([]) is None


@pytest.mark.parametrize(
    ("trust", "expected"), [("trusted", False), ("untrusted", True), (None, True), ("?", True)]
)
def test_only_trusted_connectors_leave_a_turn_clean(trust: str | None, expected: bool) -> None:
    assert taints(trust) is expected
