"""A tool's first record never overwrites a switch saved meanwhile (palui.tools.watch)."""

from __future__ import annotations

import dataclasses
from typing import Any

from palui.domain import ToolSettingRecord


async def test_a_new_tools_first_record_keeps_a_switch_a_person_saved_meanwhile(
    store: Any,
) -> None:
    first_seen = ToolSettingRecord("mcp-t__plan_release", False, None, "digest", False)
    # The person's tap landed between the watch's read and its write.
    await store.tool_settings.save(dataclasses.replace(first_seen, enabled=True))
    version = await store.tool_settings.version()

    assert await store.tool_settings.add_new(first_seen) is False
    assert (await store.tool_settings.all())["mcp-t__plan_release"].enabled is True
    assert await store.tool_settings.version() == version  # nothing changed: no reload anywhere


async def test_a_new_tool_is_remembered_once(store: Any) -> None:
    first_seen = ToolSettingRecord("mcp-t__list", False, None, "digest", False)
    assert await store.tool_settings.add_new(first_seen) is True
    assert await store.tool_settings.add_new(first_seen) is False
    assert (await store.tool_settings.all())["mcp-t__list"] == first_seen
