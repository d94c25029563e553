"""What an approval is bound to: a tool, its arguments in canonical form, and its definition."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def call_digest(tool: str, arguments: dict[str, Any], definition: str) -> str:
    return hashlib.sha256(f"{tool}\n{canonical(arguments)}\n{definition}".encode()).hexdigest()
