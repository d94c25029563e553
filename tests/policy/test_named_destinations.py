"""Which destinations the person gave (palui.policy.addresses, palui.policy.named) and the
operator's allow-list as palui.toml takes it: pure, no app."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from palui.config import Settings, load_settings
from palui.domain import JobRecord, Taint
from palui.policy.addresses import Address, AddressKind, address_of, addresses_in
from palui.policy.destinations import call_destinations
from palui.policy.named import NamedDestinations, allows
from palui.turns import words

HOST, EMAIL, PHONE, CHAT = AddressKind.HOST, AddressKind.EMAIL, AddressKind.PHONE, AddressKind.CHAT


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("https://Evil.Example/x?d=1", Address(HOST, "evil.example")),
        ("www.example.org/page", Address(HOST, "example.org")),
        ("http://example.org@evil.example/", Address(HOST, "evil.example")),  # userinfo
        ("https://exаmple.org/", Address(HOST, "xn--exmple-4nf.org")),  # a Cyrillic "а"
        ("mailto:Ana@Example.org?subject=hi", Address(EMAIL, "ana@example.org")),
        ("Ana <ana@example.org>", Address(EMAIL, "ana@example.org")),
        ("+55 11 91234-5678", Address(PHONE, "5511912345678")),
        ("-1001234567890", Address(CHAT, "-1001234567890")),
        ("@SomeChannel", Address(CHAT, "@somechannel")),
        ("groceries", None),
        ("file:///etc/passwd", None),
    ],
)
def test_a_destination_value_reads_as_one_canonical_address(
    value: str, expected: Address | None
) -> None:
    assert address_of(value) == expected


def test_the_persons_words_name_hosts_addresses_numbers_and_handles() -> None:
    found = addresses_in(
        "read https://docs.python.org/3/ and example.org, mail ana@x.org, call +351 912 345 678, "
        "post in -100123456 or @mychan (note 12)"
    )
    assert {
        Address(HOST, "docs.python.org"),
        Address(HOST, "example.org"),
        Address(EMAIL, "ana@x.org"),
        Address(PHONE, "351912345678"),
        Address(CHAT, "-100123456"),
        Address(CHAT, "@mychan"),
    } <= found
    assert not any(address.value == "12" for address in found)


@pytest.mark.parametrize(
    ("pattern", "value", "allowed"),
    [
        ("example.org", "https://example.org/a", True),
        ("example.org", "https://www.example.org/a", True),
        ("example.org", "https://api.example.org/a", False),
        ("*.example.org", "https://api.example.org/a", True),
        ("*@mycompany.com", "Bob@MyCompany.com", True),
        ("*@mycompany.com", "bob@mycompany.com.evil.example", False),
        ("*@mycompany.com", "https://mycompany.com/", False),
        ("mycompany.com", "bob@mycompany.com", False),
        ("+351*", "+351 912 345 678", True),
        ("+351*", "+44 20 7946 0958", False),
        ("@mychan", "@MyChan", True),
    ],
)
def test_an_allow_list_entry_lets_through_only_its_kind(
    pattern: str, value: str, allowed: bool
) -> None:
    address = address_of(value)
    assert address is not None
    assert allows(pattern, address) is allowed


def test_a_call_whose_destination_cant_be_read_counts_as_unnamed() -> None:
    schema = {"type": "object", "properties": {"to": {"type": "string"}}}
    named = NamedDestinations.of(["send it to ana@example.org"])
    assert not named.unnamed(call_destinations(schema, {"to": "ana@example.org"}))
    unknown = named.unnamed(call_destinations(schema, {"to": "the usual place"}))
    assert unknown and unknown.words() == "it sends out, and Palui can't tell where to"
    assert named.unnamed(call_destinations(schema, {}))  # no destination at all: can't tell


def test_the_allow_list_comes_from_limits_and_refuses_a_pattern_that_allows_everything() -> None:
    settings = Settings(allowed_destinations=["Example.org", "*@mycompany.com"])
    assert settings.allowed_destinations == ("example.org", "*@mycompany.com")
    assert Settings(allowed_destinations="a.example, b.example").allowed_destinations == (
        "a.example",
        "b.example",
    )
    with pytest.raises(ValueError, match="everything"):
        Settings(allowed_destinations=["*"])


def test_limits_allowed_destinations_is_read_from_palui_toml_and_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "palui.toml"
    config.write_text('[limits]\nallowed_destinations = ["example.org", "*@mycompany.com"]\n')
    assert load_settings(config).allowed_destinations == ("example.org", "*@mycompany.com")
    monkeypatch.setenv("PALUI_ALLOWED_DESTINATIONS", "corp.example")
    assert load_settings(config).allowed_destinations == ("corp.example",)


def test_a_jobs_prompt_counts_as_the_persons_words_only_while_the_job_is_not_tainted() -> None:
    now = datetime.now(UTC)
    job = JobRecord(1, "t", 1001, "read https://status.example", "every 1h", "UTC", True,
                    1000, now, "ana", now, now)  # fmt: skip
    assert words.of_job(job, None) == ("read https://status.example",)
    assert words.of_job(job, Taint("mcp-web", "mcp-web__fetch")) == ()
