"""Writing an assistant's proposals into the operator's kinds file, keeping everything else.

The file is the operator's: its comments, order and layout stay. Earlier entries for the tools
proposed now (an older proposal, or a draft's `source: unsure`) are taken out, and the new
ones go, under one heading, at the end of the `tools` mapping. The result is parsed back and
must say exactly what the old file said apart from those tools, or nothing is written: a layout
this can't edit safely (a flow-style `tools: {...}`) gets a clear error instead.
"""

from __future__ import annotations

from collections.abc import Sequence

import yaml

from palui.cli.kinds.proposals import Proposal
from palui.errors import ConfigError
from palui.policy.classes import ClassSource
from palui.policy.kinds_file import KindEntry, KindsFile, parse_kinds_file

HEADING = "# --- proposed by an assistant (palui kinds propose), not confirmed"
_HEADING_MORE = (
    "# Each counts only where it is stricter than what Palui found itself. To confirm one,",
    "# change its source to you (or set the class on the /connectors card).",
)
_NEW_FILE = (
    "# Palui tool kinds (see `palui kinds list`). kind: read | write | destructive.",
    "infer: true",
)


class ProposalFileError(ConfigError):
    """The kinds file can't take the proposals without changing something else."""


def with_proposals(text: str | None, proposals: Sequence[Proposal], path: str) -> str:
    """The kinds file's text with `proposals` written in as `source: assistant` entries."""
    if text is not None and not text.endswith("\n"):
        text += "\n"
    old = parse_kinds_file(text or "", path)
    lines = (text or "\n".join(_NEW_FILE) + "\n").splitlines(keepends=True)
    root = yaml.compose(text or "", Loader=yaml.SafeLoader)
    tools = _tools_node(root)
    if tools is None:  # no `tools:` yet (or no file): a new mapping at the end
        lines += ["tools:\n", *_block(proposals, 2)]
    elif isinstance(tools, yaml.ScalarNode) or (
        isinstance(tools, yaml.MappingNode) and tools.flow_style and not tools.value
    ):  # `tools:` with nothing, `tools: ~` or `tools: {}`: the entries go below it
        row = tools.start_mark.line
        line = lines[row]
        lines[row] = line[: tools.start_mark.column] + line[tools.end_mark.column :]
        lines[row + 1 : row + 1] = _block(proposals, 2)
    elif isinstance(tools, yaml.MappingNode) and not tools.flow_style:
        lines = _replace_in_block(lines, tools, proposals)
    else:
        raise ProposalFileError(
            f"{path}: 'tools' is written in flow style ({{...}}); write it as a block mapping "
            "(one tool per line) so proposals can be added; nothing was written"
        )
    result = "".join(lines)
    _check(old, parse_kinds_file(result, path), proposals, path)
    return result


def _tools_node(root: yaml.Node | None) -> yaml.Node | None:
    if not isinstance(root, yaml.MappingNode):
        return None
    return next((v for k, v in root.value if getattr(k, "value", None) == "tools"), None)


def _replace_in_block(
    lines: list[str], tools: yaml.MappingNode, proposals: Sequence[Proposal]
) -> list[str]:
    names = {p.tool for p in proposals}
    indent = tools.value[0][0].start_mark.column
    drop: set[int] = set()
    for key, value in tools.value:
        if key.value in names:
            drop.update(range(key.start_mark.line, _last_line(value) + 1))
    drop.update(i for i, line in enumerate(lines) if line.strip() in (HEADING, *_HEADING_MORE))
    after = _last_line(tools)
    kept = [line for i, line in enumerate(lines[: after + 1]) if i not in drop]
    rest = [line for i, line in enumerate(lines[after + 1 :], after + 1) if i not in drop]
    return [*kept, *_block(proposals, indent), *rest]


def _last_line(node: yaml.Node) -> int:
    """The last line holding the node's own text (a block collection's end mark is the next
    token, past any comments, so it is found through its last child)."""
    if isinstance(node, yaml.MappingNode) and not node.flow_style and node.value:
        return _last_line(node.value[-1][1])
    if isinstance(node, yaml.SequenceNode) and not node.flow_style and node.value:
        return _last_line(node.value[-1])
    end = node.end_mark
    return end.line - 1 if end.column == 0 and end.line > node.start_mark.line else end.line


def _scalar(value: str) -> str:
    dumped = yaml.safe_dump(value, allow_unicode=True, default_style='"', width=1 << 20)
    return dumped.rstrip("\n")


def _block(proposals: Sequence[Proposal], indent: int) -> list[str]:
    pad = " " * indent
    lines = [f"{pad}{HEADING}\n", *(f"{pad}{line}\n" for line in _HEADING_MORE)]
    for p in proposals:
        lines += [
            f"{pad}{_scalar(p.tool)}:\n",
            f"{pad}  kind: {p.tool_class}\n",
            f"{pad}  sends_out: {'true' if p.sends_out else 'false'}\n",
            f"{pad}  source: {ClassSource.ASSISTANT}\n",
            f"{pad}  reason: {_scalar(p.reason)}\n",
        ]
    return lines


def _check(old: KindsFile, new: KindsFile, proposals: Sequence[Proposal], path: str) -> None:
    """The new file says what the old one said, plus the proposals: else nothing is written."""
    names = {p.tool for p in proposals}
    wanted = {
        p.tool: KindEntry(p.tool_class, p.sends_out, ClassSource.ASSISTANT, p.reason)
        for p in proposals
    }
    others_old = {k: v for k, v in old.tools.items() if k not in names}
    others_new = {k: v for k, v in new.tools.items() if k not in names}
    got = {k: v for k, v in new.tools.items() if k in names}
    if old.infer != new.infer or others_old != others_new or got != wanted:
        raise ProposalFileError(
            f"{path}: the proposals could not be added without changing its other entries "
            "(an unusual layout?); nothing was written"
        )
