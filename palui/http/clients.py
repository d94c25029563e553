"""Who sent a request: the TCP peer, or the client a trusted reverse proxy names.

Anyone can write an `X-Forwarded-For` header, so it is believed only from a peer inside
`PALUI_HTTP_TRUSTED_PROXIES`, and only as far as trusted proxies wrote it: each proxy appends the
address it got the request from, so the hops are read from the right, skipping trusted proxies,
and the first address that is not one is the client (what a client put on the left itself is
never reached). Where the header is missing or unreadable at that point, the peer stays the
client: unreadable input never makes a request someone else.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

FORWARDED_FOR = "X-Forwarded-For"


def client_address(
    peer: str | None, forwarded_for: Iterable[str], trusted: Sequence[Network]
) -> str | None:
    """The client's address for a request from `peer` carrying these X-Forwarded-For headers."""
    peer_address = _address(peer or "")
    if peer_address is None or not _within(peer_address, trusted):
        return peer
    hops = [hop.strip() for header in forwarded_for for hop in header.split(",")]
    leftmost: Address | None = None
    for hop in reversed(hops):
        address = _address(hop)
        if address is None:
            return peer  # a trusted proxy wrote no such thing: believe nothing past it
        if not _within(address, trusted):
            return str(address)
        leftmost = address
    # Every hop is one of ours (or there are none): the first one is as far as anyone knows.
    return str(leftmost) if leftmost is not None else peer


def _address(text: str) -> Address | None:
    """An address as proxies write it: bare, `[v6]`, `[v6]:port` or `v4:port`."""
    if text.startswith("["):
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:
        text = text.partition(":")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _within(address: Address, networks: Sequence[Network]) -> bool:
    return any(address.version == network.version and address in network for network in networks)
