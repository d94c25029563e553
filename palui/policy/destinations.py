"""A call's destinations: what its arguments send to, and the guard built on them.

A destination is every address in an argument the schema or its name makes a destination, and
any value that is nothing but URLs, hosts or e-mail addresses whatever its argument is called
(DESIGN §1.13): a `target` or a `link` reaches its URL as surely as a `url` does.
The guard: a mislabelled tool (say, the kinds file calls it `sends_out: false`) must not be able
to carry data away, so a call that hands such a tool an e-mail address, a URL, a host, a phone
number or a chat id is refused before it goes out. For a tool that sends out,
`call_destinations` reads where the call goes (`palui.policy.named` weighs it in a tainted turn).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from palui.policy.addresses import Address, Reading, read_bare, read_destination
from palui.policy.schema import arguments, destination

# A word list laid out by hand, not one word a line.
DESTINATION_NAMES = frozenset(
    {"to", "recipient", "recipients", "url", "uri", "endpoint", "webhook", "channel", "email",
     "address", "destination", "cc", "bcc", "phone", "chat_id", "channel_id", "para"}
)  # fmt: skip


def looks_like_address(value: str) -> str | None:
    """What kind of address `value` holds ("an e-mail address", "a URL", ...), or None."""
    said = read_destination(value).said
    return said[0] if said else None


def _leaves(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for key, sub in value.items():
            yield from _leaves(sub, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item, path)
    elif isinstance(value, str | int) and not isinstance(value, bool):
        yield path, str(value)


def _readings(
    input_schema: dict[str, Any], call_arguments: dict[str, Any]
) -> Iterator[tuple[str, str, Reading, bool]]:
    """(path, value, what it holds, whether its argument is a destination) of every
    destination in a call: each value of an argument the schema or its name makes a destination,
    and any value, whatever its argument is called, that is nothing but URLs, hosts or e-mail
    addresses (a `target`, `link`, `href`, `site`)."""
    declared = {path for path, prop in arguments(input_schema) if destination(path, prop)}
    for path, value in _leaves(call_arguments, ""):
        leaf = path.rsplit(".", 1)[-1].lower()
        if path in declared or leaf in DESTINATION_NAMES:
            if value.strip():
                yield path, value, read_destination(value), True
        elif (reading := read_bare(value)) is not None:
            yield path, value, reading, False


def refused_destination(input_schema: dict[str, Any], call_arguments: dict[str, Any]) -> str | None:
    """Why a call to a tool that does not send out must be refused, or None."""
    for path, value, reading, _ in _readings(input_schema, call_arguments):
        if reading.said:
            return (
                f"its argument '{path}' holds {reading.said[0]} ({value[:80]}), but this tool "
                "is not allowed to send anything out"
            )
    return None


@dataclass(frozen=True, slots=True)
class CallDestinations:
    """Where a call of a tool that sends out goes, as far as its arguments tell."""

    addresses: tuple[Address, ...] = ()
    # A destination argument holds something that is no address Palui reads, or the call names
    # no destination at all (the tool's own service, say): where it goes can't be told.
    unknown: bool = False
    # URLs clients could read as going to different hosts: they ask whatever host they seem to
    # name, so a look-alike of a named host never passes as it.
    ambiguous: tuple[str, ...] = ()


def call_destinations(
    input_schema: dict[str, Any], call_arguments: dict[str, Any]
) -> CallDestinations:
    found: list[Address] = []
    ambiguous: list[str] = []
    unknown = False
    told = False  # a destination argument says where the call goes
    for _, _, reading, declared in _readings(input_schema, call_arguments):
        unknown = unknown or reading.unreadable or (declared and not reading.addresses)
        told = told or (declared and bool(reading.addresses))
        found += [address for address in reading.addresses if address not in found]
        ambiguous += [entry for entry in reading.ambiguous if entry not in ambiguous]
    # An address in another argument is one more place the call reaches, never proof that
    # it reaches nothing else: with no destination argument, where it goes still can't be told.
    return CallDestinations(tuple(found), unknown or not told, tuple(ambiguous))
