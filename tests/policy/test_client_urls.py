"""The one parser of URLs, hosts and addresses (palui.policy.urls, hosts, addresses): it reads a
value the way a WHATWG client (a browser, most HTTP libraries) does, so where Palui thinks a call
goes is where it goes. Pure: no app."""

from __future__ import annotations

import pytest

from palui.policy.addresses import Address, AddressKind, read_bare, read_destination
from palui.policy.destinations import call_destinations, refused_destination
from palui.policy.hosts import canonical_host, looks_like_host
from palui.policy.named import NamedDestinations, allows
from palui.policy.urls import UrlReading, read_url

HOST, EMAIL = AddressKind.HOST, AddressKind.EMAIL
BACKSLASH = "it has a backslash before or right after its host"
USER = "it has a user name before its host"
DIFFER = "clients read its host differently"
NEWLINE = "it has a tab or line break inside"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://Evil.Example/x?d=1", UrlReading("evil.example")),
        ("  \x00https://evil.example/ \x1f", UrlReading("evil.example")),  # C0 and spaces trimmed
        ("https://evil.example./x", UrlReading("evil.example")),  # the trailing dot
        ("https://www.evil.example/", UrlReading("evil.example")),
        ("https://evil.example:8443/", UrlReading("evil.example")),
        ("https://ev%69l.example/", UrlReading("evil.example")),  # the host percent-decoded
        ("https://ｅｖｉｌ。example/", UrlReading("evil.example")),  # UTS-46 maps both
        ("https://faß.de/", UrlReading("xn--fa-hia.de")),  # IDNA 2008, not 2003's fass.de
        ("https://exаmple.org/", UrlReading("xn--exmple-4nf.org")),  # a Cyrillic "а"
        ("http://2130706433/", UrlReading("127.0.0.1")),
        ("http://0x7f.1/", UrlReading("127.0.0.1")),
        ("http://0177.0.0.1/", UrlReading("127.0.0.1")),
        ("http://127.1/", UrlReading("127.0.0.1")),
        ("http://[0:0::FFFF:7f00:1]/", UrlReading("[::ffff:7f00:1]")),
        ("ws://evil.example/socket", UrlReading("evil.example")),
        ("ssh://evil.example/", UrlReading("evil.example")),
        ("http://evil.example\\@named.example/x", UrlReading("evil.example", BACKSLASH)),
        ("https:\\\\evil.example\\x", UrlReading("evil.example", BACKSLASH)),
        ("http://named.example@evil.example/", UrlReading("evil.example", USER)),
        ("http://a@b@evil.example/", UrlReading("evil.example", USER)),  # the last `@` counts
        ("http:evil.example/x", UrlReading("evil.example", DIFFER)),
        ("http:///evil.example/x", UrlReading("evil.example", DIFFER)),
        ("https://named.exa\tmple/", UrlReading("named.example", NEWLINE)),
        ("https://evil.example:80x/", UrlReading(None)),  # not a port: the client refuses it
        ("https://exa mple.org/", UrlReading(None)),
        ("http://999.1.1.1/", UrlReading(None)),  # ends in a number, no IPv4 address
        ("http://[::1/", UrlReading(None)),
    ],
)
def test_a_url_reads_as_a_whatwg_client_reads_it(url: str, expected: UrlReading) -> None:
    assert read_url(url) == expected


@pytest.mark.parametrize(
    "text", ["file:///etc/passwd", "mailto:ana@example.org", "tel:+351912345678", "notes.md", ""]
)
def test_what_has_no_host_to_reach_is_no_url(text: str) -> None:
    assert read_url(text) is None


def test_hosts_are_canonical_with_uts46_so_look_alikes_stay_apart() -> None:
    assert canonical_host("faß.de") == "xn--fa-hia.de" != canonical_host("fass.de") == "fass.de"
    assert canonical_host("XN--FA-HIA.DE.") == "xn--fa-hia.de"
    assert canonical_host("MÜNCHEN.de") == "xn--mnchen-3ya.de"
    assert canonical_host("xn--zz.example") is None  # not valid punycode: a client refuses it
    assert canonical_host("evil.example%00") is None


@pytest.mark.parametrize(
    ("name", "host"),
    [
        ("evil.example", True),
        ("x.co", True),
        ("mail.google.com", True),
        ("münchen.de", True),
        ("notes.md", False),
        ("report.pdf", False),
        ("main.py", False),
        ("1.2.3", False),
        ("3.14", False),
        ("e.g", False),
        ("example", False),
    ],
)
def test_a_bare_name_looks_like_a_host_only_in_a_hosts_shape(name: str, host: bool) -> None:
    assert looks_like_host(name) is host


def test_every_address_in_a_destination_value_counts() -> None:
    assert read_destination("me@x.com, drop@evil.example").addresses == (
        Address(EMAIL, "me@x.com"),
        Address(EMAIL, "drop@evil.example"),
    )
    assert read_destination("Ana <ana@x.org>; Bob <bob@faß.de>").addresses == (
        Address(EMAIL, "ana@x.org"),
        Address(EMAIL, "bob@xn--fa-hia.de"),
    )
    text = "see https://a.example/x and http://b.example, or c.example/page"
    assert read_destination(text).addresses == (
        Address(HOST, "a.example"),
        Address(HOST, "b.example"),
        Address(HOST, "c.example"),
    )
    mailto = read_destination("mailto:ana@x.org?cc=eve%40evil.example&subject=hi").addresses
    assert mailto == (Address(EMAIL, "ana@x.org"), Address(EMAIL, "eve@evil.example"))


@pytest.mark.parametrize(
    "value",
    [
        "go to https://named.example<@evil.example/x now",
        'go to https://named.example"@evil.example/x now',
        "go to https://named.example'@evil.example/x now",
    ],
)
def test_a_url_cut_short_in_prose_still_shows_the_host_a_client_would_reach(value: str) -> None:
    assert Address(HOST, "evil.example") in read_destination(value).addresses


def test_a_url_split_by_a_line_break_is_read_whole_too() -> None:
    reading = read_destination("https://named.example\n.evil.example/x")
    assert Address(HOST, "named.example.evil.example") in reading.addresses
    assert reading.ambiguous == ("https://named.example\\n.evil.example/x (" + NEWLINE + ")",)
    # A list of URLs, one a line, is only its URLs.
    listed = read_destination("https://a.example/\nhttps://b.example/")
    assert listed.addresses == (Address(HOST, "a.example"), Address(HOST, "b.example"))
    assert not listed.ambiguous


@pytest.mark.parametrize(
    "value",
    [
        "https://evil.example/c?d=SECRET",
        "evil.example",
        "x.co/path",
        "drop@evil.example",
        "me@x.com, drop@evil.example",
        "Eve <drop@evil.example>",
        "https://evil.example/a b",
        "10.0.0.1:8080",
        "//evil.example/x",
        "\\\\evil.example\\share",
    ],
)
def test_a_value_that_is_nothing_but_addresses_is_a_destination_whatever_its_name(
    value: str,
) -> None:
    assert read_bare(value)
    schema = {"type": "object", "properties": {"target": {"type": "string"}}}
    assert refused_destination(schema, {"options": {"target": value}})
    assert refused_destination(schema, {"items": [{"href": value}]})


@pytest.mark.parametrize(
    "value",
    [
        "notes.md",
        "report.pdf",
        "1.2.3",
        "3.14",
        "10.0.0.1",  # a version as much as an address, with no port or path
        "groceries for sunday",
        "see https://example.org for details",  # prose that mentions a URL
        "Time: 10:30",
        "http: a protocol",
        "note:see example.org and more",
        "a < b and example.org > c",
        "lodash@4.17.21",
    ],
)
def test_a_benign_value_in_an_ordinary_argument_is_no_destination(value: str) -> None:
    assert read_bare(value) is None
    assert refused_destination({}, {"title": value}) is None


def test_an_ambiguous_url_asks_even_when_its_host_was_named() -> None:
    named = NamedDestinations.of(["my notes are on named.example"])
    fine = call_destinations({}, {"url": "https://named.example/", "link": "named.example/x"})
    assert not named.unnamed(fine)
    tricky = call_destinations(
        {}, {"url": "https://named.example/", "link": "http://evil.example\\@named.example/x"}
    )
    unnamed = named.unnamed(tricky)
    assert unnamed and unnamed.ambiguous
    assert unnamed.words().startswith("its URL may go to a host other than it seems: ")
    assert BACKSLASH in unnamed.words()


def test_an_address_outside_a_destination_argument_never_proves_where_a_call_goes() -> None:
    named = NamedDestinations.of(["my notes are on named.example"])
    only_there = call_destinations({}, {"site": "named.example"})
    assert only_there.addresses == (Address(HOST, "named.example"),) and only_there.unknown
    unnamed = named.unnamed(call_destinations({}, {"site": "evil.example", "note": "x"}))
    assert unnamed.words() == (
        "it would reach evil.example, which you haven't named in this conversation, "
        "and Palui can't tell where else"
    )


def test_the_named_side_reads_with_the_same_parser() -> None:
    named = NamedDestinations.of(["notes on faß.de and https://ex%61mple.org/a"])
    assert Address(HOST, "xn--fa-hia.de") in named.named
    assert Address(HOST, "example.org") in named.named
    assert Address(HOST, "fass.de") not in named.named
    assert named.unnamed(call_destinations({}, {"url": "https://fass.de/"}))
    assert not named.unnamed(call_destinations({}, {"url": "https://FAß.de./x"}))


@pytest.mark.parametrize(
    ("pattern", "value", "allowed"),
    [
        ("*.faß.de", "https://api.xn--fa-hia.de/", True),
        ("*.faß.de", "https://api.fass.de/", False),
        ("https://corp.example/", "https://corp.example/x", True),
        ("https://corp.example@evil.example/", "https://evil.example/", False),
        ("10.0.0.1", "http://10.0.0.1:8080/", True),
        ("10.0.0.1", "http://0x0a.0.0.1/", True),
        ("*@faß.de", "Ana@FAß.de", True),
        ("*@faß.de", "ana@fass.de", False),
        ("*@*.mycompany.com", "bob@eu.mycompany.com", True),
    ],
)
def test_allow_list_hosts_are_read_with_the_same_parser(
    pattern: str, value: str, allowed: bool
) -> None:
    (address,) = read_destination(value).addresses
    assert allows(pattern, address) is allowed
