"""Settings: the only reader of the environment and of `config/palui.toml`.

Every setting has one name. In the environment it is `PALUI_<NAME>`; in palui.toml it is `<name>`
at the top level, except the budgets and caps, which live under `[limits]` (and are still
`PALUI_<NAME>` in the environment, e.g. `PALUI_MAX_STEPS`). The environment wins over the file.
Sections that only make sense in a file (`[mcp.*]`, `[recall]`, `[webhooks.*]`, `[hooks]`,
`[guards.*]`, `[web]`) are read from the file alone.

`settings.py` holds the values and their checks, `sections.py` the file-only sections, and
`loading.py` reads both sources and words a refusal.
"""

from palui.config.loading import DEFAULT_CONFIG_PATH, FILE_SECTIONS, LIMIT_KEYS, load_settings
from palui.config.sections import (
    ArgumentRule,
    HooksSettings,
    McpServerSettings,
    RecallSettings,
    RunCodeSettings,
    ToolGuardSettings,
    WebhookSettings,
)
from palui.config.settings import FIX_HINTS, TELEGRAM_API_URL, Settings, normalise_database_url

__all__ = [
    "DEFAULT_CONFIG_PATH",
    "FILE_SECTIONS",
    "FIX_HINTS",
    "LIMIT_KEYS",
    "TELEGRAM_API_URL",
    "ArgumentRule",
    "HooksSettings",
    "McpServerSettings",
    "RecallSettings",
    "RunCodeSettings",
    "Settings",
    "ToolGuardSettings",
    "WebhookSettings",
    "load_settings",
    "normalise_database_url",
]
