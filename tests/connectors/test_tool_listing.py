"""Each tool of a `tools/list` page is read by itself: a hint that is not a JSON true or false is
kept as sent (unreadable: the tool is unsure, so destructive), and a tool nobody can read is
left out alone. (tests/cli/test_kinds_cli.py lists a real server whose hints can't all be read.)"""

from __future__ import annotations

from palui.connectors.listing import read_tool
from palui.policy.classify import classify

SCHEMA = {"type": "object", "properties": {}}


def test_a_hint_that_is_not_true_or_false_is_kept_and_makes_the_tool_unsure() -> None:
    for value in ("yes", "1", 1, [1], {"x": True}):
        read = read_tool({"name": "list_things", "inputSchema": SCHEMA,
                          "annotations": {"readOnlyHint": value, "title": "Things"}})  # fmt: skip
        assert read is not None
        sdk, tool = read
        assert sdk.annotations is not None and sdk.annotations.read_only_hint is None
        assert tool.annotations == {"readOnlyHint": value, "title": "Things"}
        found = classify("mcp-x__list_things", tool, None)
        assert found.tool_class == "destructive" and found.unsure, value
        assert "annotation 'readOnlyHint' is not true or false" in found.reason


def test_annotations_that_are_no_object_make_the_tool_unsure() -> None:
    read = read_tool({"name": "list_things", "inputSchema": SCHEMA, "annotations": "read-only"})
    assert read is not None
    found = classify("mcp-x__list_things", read[1], None)
    assert found.unsure and found.reason == "its annotations are not an object"


def test_a_tool_nobody_can_read_is_left_out_and_true_hints_still_count() -> None:
    assert read_tool({"inputSchema": SCHEMA}) is None
    assert read_tool("list_things") is None
    assert read_tool({"name": "x", "inputSchema": "not a schema"}) is None
    read = read_tool({"name": "list_things", "inputSchema": SCHEMA,
                      "annotations": {"readOnlyHint": True}})  # fmt: skip
    assert read is not None and classify("mcp-x__list_things", read[1], None).tool_class == "read"
