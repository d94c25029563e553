"""The operator's kinds file (`config/tool_kinds.yaml`), and drafting one for review.

```yaml
infer: true                  # false: a tool not named here and without marks is destructive
tools:
  mcp-notes__add_note:       # full name: <connectorId>__<tool>; a bare name (add_note) names
                             # the one connector's tool of that name (two have it: config error)
    kind: write              # read | write | destructive | sends_out (= write that sends out)
    sends_out: false         # left out: Palui looks for destination arguments itself
    source: you              # who decided; default you. assistant: a model's proposal, which
                             # counts only where stricter until you change it to you; catalogue:
                             # from a catalogue of tools (lost, like marks, if the tool changes)
    reason: "adds a note"
    form: true               # every call opens ✏️ Edit's questions first (default false)
```
The caller reads the file; this module only parses text, so it stays pure: a bare name is kept
apart (`KindsFile.bare`) and resolved against the tools connected (`KindsFile.bare_entry`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import yaml

from palui.errors import AmbiguousName, ConfigError
from palui.policy.classes import Classification, ClassSource, ToolClass

DEFAULT_PATH = "config/tool_kinds.yaml"
_ENTRY_KEYS = ("kind", "sends_out", "source", "reason", "form")
_KINDS = "read, write, destructive or sends_out"


@dataclass(frozen=True, slots=True)
class KindEntry:
    tool_class: ToolClass
    sends_out: bool | None  # None: the file does not say; destination arguments decide
    source: ClassSource
    reason: str
    form: bool = False  # every call is reviewed in ✏️ Edit's questions before it runs


@dataclass(frozen=True, slots=True)
class KindsFile:
    infer: bool
    tools: Mapping[str, KindEntry]
    digest: str  # sha256 of the parsed content: comments and layout don't change it
    path: str = DEFAULT_PATH
    # By bare tool name (`orders`): resolved against the connectors' tools when classified.
    bare: Mapping[str, KindEntry] = field(default_factory=lambda: MappingProxyType({}))

    def without(self, name: str) -> KindsFile:
        """The file as if it did not name `name` (its digest stays the file's own)."""
        rest = {key: entry for key, entry in self.tools.items() if key != name}
        return replace(self, tools=MappingProxyType(rest))

    def naming(self, full_name: str, entry: KindEntry) -> KindsFile:
        """The file as if it named `full_name` in full (a bare name resolved to it)."""
        return replace(self, tools=MappingProxyType({**self.tools, full_name: entry}))

    def bare_entry(self, full_name: str, tool: str, holders: Sequence[str]) -> KindEntry | None:
        """The entry a bare name gives the tool `full_name` (`tool` on its server), when no
        entry names it in full: only if exactly one connector (`holders`) has that tool.
        Several: `AmbiguousName`."""
        entry = self.bare.get(tool)
        if entry is None or full_name in self.tools:
            return None
        if len(holders) > 1:
            raise AmbiguousName(self.path, tool, holders)
        return entry

    def check_bare(self, tools: Mapping[str, Collection[str]]) -> None:
        """`AmbiguousName` for the first bare name that several connectors have (`tools`: each
        connector's tool names)."""
        for name in self.bare:
            holders = [connector for connector, names in tools.items() if name in names]
            if len(holders) > 1 and not all(f"{h}__{name}" in self.tools for h in holders):
                raise AmbiguousName(self.path, name, holders)


def parse_kinds_file(text: str, path: str = DEFAULT_PATH) -> KindsFile:
    """Parse and check the kinds file; any problem is one `ConfigError` line."""
    try:
        duplicate = _duplicate_key(yaml.compose(text, Loader=yaml.SafeLoader))
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" (line {mark.line + 1})" if mark is not None else ""
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise ConfigError(f"{path}: not valid YAML{line}: {problem}") from None
    if duplicate:
        key, line_no = duplicate
        raise ConfigError(f"{path}: key '{key}' appears twice (line {line_no}); keep one")
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping with 'infer' and 'tools' at the top")
    for key in data:
        if key not in ("infer", "tools"):
            raise ConfigError(f"{path}: key '{key}': unknown (expected infer, tools)")
    infer = data.get("infer", True)
    if not isinstance(infer, bool):
        raise ConfigError(f"{path}: key 'infer': expected true or false, got {infer!r}")
    tools = data.get("tools") or {}
    if not isinstance(tools, dict):
        raise ConfigError(f"{path}: key 'tools': expected a mapping of tool names to kinds")
    entries: dict[str, KindEntry] = {}
    bare: dict[str, KindEntry] = {}
    for name, body in tools.items():
        full = _tool_name(path, name)
        (entries if "__" in full else bare)[full] = _entry(path, full, body)
    digest = _digest(infer, {**entries, **bare})
    return KindsFile(infer, MappingProxyType(entries), digest, path, bare=MappingProxyType(bare))


def _tool_name(path: str, name: Any) -> str:
    connector, _, tool = str(name).partition("__")
    full = "__" in str(name)
    if not isinstance(name, str) or not name.strip() or (full and not (connector and tool)):
        raise ConfigError(
            f"{path}: tool '{name}': name it as <connector>__<tool> (e.g. mcp-notes__add_note),"
            " or by the tool's own name if only one connector has it"
        )
    return name


def _entry(path: str, name: str, body: Any) -> KindEntry:
    where = f"{path}: tool '{name}'"
    if not isinstance(body, dict):
        raise ConfigError(f"{where}: expected a mapping with {', '.join(_ENTRY_KEYS)}")
    for key in body:
        if key not in _ENTRY_KEYS:
            raise ConfigError(f"{where}, key '{key}': unknown (expected {', '.join(_ENTRY_KEYS)})")
    kind = body.get("kind")
    if kind is None:
        raise ConfigError(f"{where}, key 'kind': missing ({_KINDS})")
    sends_out = body.get("sends_out")
    if sends_out is not None and not isinstance(sends_out, bool):
        raise ConfigError(f"{where}, key 'sends_out': expected true or false, got {sends_out!r}")
    if kind == "sends_out":  # the peer format's kind: a write that sends out
        if sends_out is False:
            raise ConfigError(f"{where}, key 'sends_out': false contradicts kind: sends_out")
        kind, sends_out = ToolClass.WRITE, True
    if kind not in tuple(ToolClass):
        raise ConfigError(f"{where}, key 'kind': {kind!r} is not {_KINDS}")
    source = body.get("source", ClassSource.YOU)
    if source not in tuple(ClassSource):
        allowed = ", ".join(ClassSource)
        raise ConfigError(f"{where}, key 'source': {source!r} is not one of {allowed}")
    reason = body.get("reason") or ""
    if not isinstance(reason, str):
        raise ConfigError(f"{where}, key 'reason': expected text, got {reason!r}")
    form = body.get("form", False)
    if not isinstance(form, bool):
        raise ConfigError(f"{where}, key 'form': expected true or false, got {form!r}")
    return KindEntry(ToolClass(kind), sends_out, ClassSource(source), reason, form)


def _duplicate_key(node: Any) -> tuple[str, int] | None:
    # PyYAML keeps the last of two equal keys; a kinds file must not say two things at once.
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if key is not None and key in seen:
                return key, key_node.start_mark.line + 1
            if key is not None:
                seen.add(key)
            found = _duplicate_key(value_node)
            if found:
                return found
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            found = _duplicate_key(item)
            if found:
                return found
    return None


def _digest(infer: bool, entries: Mapping[str, KindEntry]) -> str:
    canonical = {
        "infer": infer,
        "tools": {
            # `form` only when set: the digests of files without it stay as they were.
            name: [str(e.tool_class), e.sends_out, str(e.source), e.reason, *(["form"] * e.form)]
            for name, e in entries.items()
        },
    }
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


_DRAFT_ORDER = (
    (ClassSource.UNSURE, "unsure: nothing tells what these do, so they count as destructive"),
    (ClassSource.ASSISTANT, "proposed by an assistant: check each one"),
    (ClassSource.INFERRED, "inferred from name, description and arguments"),
    (ClassSource.ANNOTATION, "from the server's own annotations"),
    (ClassSource.CATALOGUE, "from a catalogue of tools"),
    (ClassSource.YOU, "decided by you"),
)


def draft_kinds_file(classifications: Mapping[str, Classification], *, infer: bool = True) -> str:
    """A kinds file for the operator to review: unsure tools first, then by source and name."""
    lines = [
        "# Palui tool kinds, drafted for review. Unsure tools come first: decide those.",
        "# kind: read | write | destructive.",
        "# sends_out: reaches an address, URL, person or channel named in its arguments.",
        "# source: who decided (you, assistant, annotation, inferred, unsure).",
        f"infer: {_scalar(infer)}",
        "tools:" if classifications else "tools: {}",
    ]
    for source, heading in _DRAFT_ORDER:
        names = sorted(name for name, c in classifications.items() if c.source is source)
        if names:
            lines += ["", f"  # --- {heading}"]
        for name in names:
            c = classifications[name]
            if c.conflict:
                lines.append(f"  # conflict: {' '.join(c.conflict.split())}")
            elif c.unsure:
                lines.append("  # check: Palui could not tell what this tool does")
            lines += [
                f"  {_scalar(name)}:",
                f"    kind: {c.tool_class}",
                f"    sends_out: {_scalar(c.sends_out)}",
                f"    source: {c.source}",
                f"    reason: {_scalar(c.reason)}",
            ]
    return "\n".join(lines) + "\n"


def _scalar(value: str | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    dumped = yaml.safe_dump(value, allow_unicode=True, default_style='"', width=1 << 20)
    return dumped.rstrip("\n")
