"""A call's destinations: what its destination arguments hold, and the guard built on them.

The guard: a mislabelled tool (say, the kinds file calls it `sends_out: false`) must not be able
to carry data away, so a call that puts an e-mail address, a URL, a phone number or a chat id into
a destination argument of such a tool is refused before it goes out. For a tool that sends out,
`call_destinations` reads where the call goes (`palui.policy.named` weighs it in a tainted turn).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from palui.policy.addresses import Address, address_of
from palui.policy.schema import arguments, destination

EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
URL = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://\S+|\bwww\.\S+")
PHONE = re.compile(r"^\+?[\d\s().-]{7,}$")
CHAT_ID = re.compile(r"^-?\d{5,}$|^@[A-Za-z][A-Za-z0-9_]{3,}$")

DESTINATION_NAMES = frozenset(
    {"to", "recipient", "recipients", "url", "uri", "endpoint", "webhook", "channel", "email",
     "address", "destination", "cc", "bcc", "phone", "chat_id", "channel_id", "para"}
)  # fmt: skip


def looks_like_address(value: str) -> str | None:
    """What kind of address `value` is ("an e-mail address", ...), or None."""
    text = value.strip()
    if EMAIL.search(text):
        return "an e-mail address"
    if URL.search(text):
        return "a URL"
    if CHAT_ID.match(text):
        return "a chat id"
    if PHONE.match(text) and sum(ch.isdigit() for ch in text) >= 7:
        return "a phone number"
    return None


def _leaves(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for key, sub in value.items():
            yield from _leaves(sub, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item, path)
    elif isinstance(value, str | int) and not isinstance(value, bool):
        yield path, str(value)


def _destination_values(
    input_schema: dict[str, Any], call_arguments: dict[str, Any]
) -> Iterator[tuple[str, str]]:
    """(path, value) of every value in an argument the schema or its name makes a destination."""
    declared = {path for path, prop in arguments(input_schema) if destination(path, prop)}
    for path, value in _leaves(call_arguments, ""):
        leaf = path.rsplit(".", 1)[-1].lower()
        if path in declared or leaf in DESTINATION_NAMES:
            yield path, value


def refused_destination(input_schema: dict[str, Any], call_arguments: dict[str, Any]) -> str | None:
    """Why a call to a tool that does not send out must be refused, or None."""
    for path, value in _destination_values(input_schema, call_arguments):
        kind = looks_like_address(value)
        if kind:
            return (
                f"its argument '{path}' holds {kind} ({value[:80]}), but this tool is not "
                "allowed to send anything out"
            )
    return None


@dataclass(frozen=True, slots=True)
class CallDestinations:
    """Where a call of a tool that sends out goes, as far as its arguments tell."""

    addresses: tuple[Address, ...] = ()
    # A destination argument holds something that is no address Palui reads, or the call names
    # no destination at all (the tool's own service, say): where it goes can't be told.
    unknown: bool = False


def call_destinations(
    input_schema: dict[str, Any], call_arguments: dict[str, Any]
) -> CallDestinations:
    found: list[Address] = []
    unknown = False
    for _, value in _destination_values(input_schema, call_arguments):
        if not value.strip():
            continue
        address = address_of(value)
        if address is None:
            unknown = True
        elif address not in found:
            found.append(address)
    return CallDestinations(tuple(found), unknown or not found)
