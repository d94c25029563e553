"""Parameter guards as palui.toml configures them: each rule's plain-English rejection, pins, and
the tool schema's basics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from palui.config import load_settings
from palui.errors import GuardRejected
from palui.tools.guards import Guards

TOOL = "mcp-mail__send"
SCHEMA = {
    "type": "object",
    "properties": {
        "to": {"type": "string"},
        "priority": {"type": "integer", "enum": [1, 2, 3]},
        "urgent": {"type": "boolean"},
    },
    "required": ["to"],
}


@pytest.fixture
def guards(tmp_path: Path) -> Guards:
    config = tmp_path / "palui.toml"
    config.write_text(
        f'[guards."{TOOL}"]\n'
        'pin = { from = "me@example.org" }\n'
        f'[guards."{TOOL}".args.to]\n'
        'pattern = "[a-z.]+@example\\\\.org"\n'
        f'[guards."{TOOL}".args.subject]\n'
        "required = true\nmin_length = 3\nmax_length = 20\n"
        f'[guards."{TOOL}".args.folder]\n'
        'enum = ["inbox", "archive"]\n'
        f'[guards."{TOOL}".args.amount]\n'
        "minimum = 1\nmaximum = 500\n"
    )
    return Guards.from_settings(load_settings(config))


def good(**changes: Any) -> dict[str, Any]:
    return {"to": "ann@example.org", "subject": "Lunch", **changes}


def test_pinned_values_are_set_whatever_the_model_sent(guards: Guards) -> None:
    assert guards.pinned(TOOL) == {"from": "me@example.org"}
    final = guards.apply(TOOL, good(**{"from": "attacker@evil.example"}), SCHEMA)
    assert final["from"] == "me@example.org"
    assert guards.apply(TOOL, good(), SCHEMA) == {**good(), "from": "me@example.org"}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (good(to="x@evil.example"), "The argument 'to' must match the pattern"),
        ({"to": "ann@example.org"}, "The argument 'subject' is required but was not given"),
        (good(subject="Hi"), "'subject' is too short: at least 3 characters needed (it has 2)"),
        (
            good(subject="x" * 21),
            "'subject' is too long: at most 20 characters allowed (it has 21)",
        ),
        (good(folder="spam"), "'folder' must be one of 'inbox', 'archive' (it was 'spam')"),
        (good(amount=0), "'amount' must be at least 1 (it was 0)"),
        (good(amount=501.5), "'amount' must be at most 500 (it was 501.5)"),
        (good(amount="10"), "'amount' must be a number (it was '10')"),
        (good(priority=7), "'priority' must be one of 1, 2, 3 (it was 7)"),
        (good(urgent="yes"), "'urgent' must be true or false (it was 'yes')"),
        ({"subject": "Lunch"}, "The argument 'to' is required but was not given"),
    ],
)
def test_a_rejection_names_the_argument_and_the_rule(
    guards: Guards, arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(GuardRejected) as caught:
        guards.apply(TOOL, arguments, SCHEMA)
    assert message in caught.value.message
    assert caught.value.message.endswith(
        "again with a corrected " + repr(message.split("'")[1]) + "."
    )


def test_a_tool_without_guards_passes_unchanged_but_its_schema_still_counts(guards: Guards) -> None:
    assert guards.apply("mcp-notes__list_notes", {"a": 1}) == {"a": 1}
    assert guards.pinned("mcp-notes__list_notes") == {}
    with pytest.raises(GuardRejected, match="'to' is required"):
        guards.apply("mcp-other__send", {}, SCHEMA)
