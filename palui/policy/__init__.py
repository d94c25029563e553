"""Tool classes and the approval policy. Pure: no I/O, no clients, no module-level state."""

from palui.policy.classes import Classification, ClassSource, ToolClass, stricter
from palui.policy.classify import classify, definition_hash, recheck
from palui.policy.kinds_file import KindEntry, KindsFile, draft_kinds_file, parse_kinds_file
from palui.policy.matrix import Decision, Width, decide, decide_call, decision_id, why
from palui.policy.taint_rule import describe_taint, most_recent, taints

__all__ = [
    "ClassSource",
    "Classification",
    "Decision",
    "KindEntry",
    "KindsFile",
    "ToolClass",
    "Width",
    "classify",
    "decide",
    "decide_call",
    "decision_id",
    "definition_hash",
    "describe_taint",
    "draft_kinds_file",
    "most_recent",
    "parse_kinds_file",
    "recheck",
    "stricter",
    "taints",
    "why",
]
