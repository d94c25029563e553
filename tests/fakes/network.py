"""Which addresses tests and benchmarks may connect to: loopback only."""

from __future__ import annotations

import ipaddress
from typing import Any


def is_loopback(address: Any) -> bool:
    if isinstance(address, str | bytes):  # a Unix socket path
        return True
    host = address[0]
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
