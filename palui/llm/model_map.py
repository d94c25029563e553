"""What litellm's model map says of a model, read from the map's file rather than through
litellm: answering "does this model see images?" must not import every provider litellm knows
(~140 MB) into a daemon whose model speaks OpenAI's format (`palui.llm.openai_http`).

The file is the one litellm itself reads when told to stay offline
(LITELLM_LOCAL_MODEL_COST_MAP, which Palui always sets); finding it does not run litellm's
`__init__`. A model is looked up as litellm does: by its full name, then without its provider
prefix (`openai/gpt-4o` → `gpt-4o`; `gemini/gemini-1.5-pro` is listed with its prefix).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

_MAP = "model_prices_and_context_window_backup.json"


def sees_images(model: str) -> bool:
    """litellm's `supports_vision` for `model`; False for a model the map does not know."""
    entry = _entry(model)
    return bool(entry and entry.get("supports_vision"))


def _entry(model: str) -> dict[str, Any] | None:
    path = _map_file()
    if path is None:
        return None
    table = json.loads(path.read_bytes())
    for name in (model, model.split("/", 1)[-1]):
        entry = table.get(name)
        if isinstance(entry, dict):
            return entry
    return None


def _map_file() -> Path | None:
    spec = importlib.util.find_spec("litellm")  # finds the package without importing it
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / _MAP
        if path.is_file():
            return path
    return None
