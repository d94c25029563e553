"""A call's arguments as the model sends them: a JSON object, or a reason it can act on."""

from __future__ import annotations

import json
from typing import Any


def parse_arguments(raw: str) -> dict[str, Any]:
    """The model's JSON arguments; ValueError with a reason the model can act on."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the arguments were not valid JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise ValueError("the arguments must be a JSON object")
    return value
