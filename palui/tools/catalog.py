"""Every known tool's class and switch, from the kinds file, the person's settings and the tool.

Pure: the tool watch (`palui.tools.watch`) loads the stored settings and saves what changes.
Rules (DESIGN §1.3):
- a class comes from the kinds file, else a class the person set (source `you`), else the
  tool's marks and inference (`palui.policy.classify`); an assistant's unconfirmed proposal in
  the file only makes that stricter;
- a tool whose definition changed since it was first seen loses a class that came from its
  marks or inference (it is destructive until someone looks at it again) and is switched off
  unless it is still read;
- switches: palui.toml's `enable`/`disable` globs decide the tools they name at every start
  (disable wins; `ToolWatch` writes them into the stored switches); otherwise, and after a
  change in the chat, the stored switch; a tool seen for the first time is on only if read;
- a connector's width (`palui.policy.matrix.Width`): the one the person chose on /connectors or
  the web console, else palui.toml's `allow`, else `writes`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from fnmatch import fnmatchcase

from palui.domain import RemoteTool
from palui.errors import AmbiguousName
from palui.policy.annotations import open_world
from palui.policy.classes import Classification, ClassSource, ToolClass
from palui.policy.classify import classify, definition_hash
from palui.policy.kinds_file import KindsFile
from palui.policy.matrix import Width
from palui.tools.names import full_name
from palui.tools.registry import BUILTIN_IDS

CACHE_SIZE = 2_048  # tool names whose entries are kept; far more than a turn offers


@dataclass(frozen=True, slots=True)
class StoredTool:
    """What the database remembers of a tool."""

    enabled: bool
    tool_class: ToolClass | None  # set by the person (source `you`)
    definition_hash: str | None
    changed: bool = False  # its definition changed since classification; not yet looked at


@dataclass(frozen=True, slots=True)
class Globs:
    enable: Sequence[str] = ()
    disable: Sequence[str] = ()

    def decide(self, tool: str) -> bool | None:
        if any(fnmatchcase(tool, glob) for glob in self.disable):
            return False
        if any(fnmatchcase(tool, glob) for glob in self.enable):
            return True
        return None


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    name: str  # full name
    connector_id: str
    remote: RemoteTool
    classification: Classification
    enabled: bool
    first_seen: bool
    changed: bool  # the definition changed since the stored classification

    @property
    def off_site(self) -> bool:
        return off_site(self.connector_id, self.remote)


def off_site(connector_id: str, remote: RemoteTool) -> bool:
    """Whether a tool reaches beyond its server's own application: the "off-site" badge, which
    changes no question. An MCP tool that does not say is off-site (MCP's default for
    openWorldHint); Palui's own tools are its application, off-site only where they say so."""
    said = open_world(remote.annotations)
    if said is not None:
        return said
    return connector_id not in BUILTIN_IDS


class WidthSource(StrEnum):
    YOU = "you"  # chosen on /connectors or the web console
    FILE = "palui.toml"
    DEFAULT = "default"


class ToolCatalog:
    def __init__(
        self,
        kinds: KindsFile | None,
        stored: Mapping[str, StoredTool],
        globs: Mapping[str, Globs],
        start_on: frozenset[str] = frozenset(),
        widths: Mapping[str, Width] | None = None,
        holders: Callable[[str], Sequence[str]] | None = None,
        forms: frozenset[str] = frozenset(),
    ) -> None:
        self._forms = forms  # full names palui.toml marks `form = true`
        self.kinds = kinds
        # Which connectors have a tool of this name: a bare name in the kinds file names the
        # tool only when exactly one does (None: only the connector asked about).
        self._holders = holders
        self._file_widths = dict(widths or {})  # palui.toml's `allow`, where it is written
        self._chosen_widths: dict[str, Width] = {}  # the person's, from the database
        # Full names that start on when first seen although not read (recall's save/forget).
        self._start_on = start_on
        self._stored = dict(stored)
        self._globs = dict(globs)
        # One entry per tool name, for its latest definition only (a tool whose definition
        # keeps changing replaces its entry instead of adding one), and at most CACHE_SIZE
        # names, least recently used first out: memory stays flat however long Palui runs.
        # Each entry keeps the definition it was drawn from: the connector hands the same
        # `RemoteTool` object turn after turn, so that one is known without hashing it again
        # (json + sha256 of its schema, several times a turn per tool offered).
        self._cache: OrderedDict[str, tuple[RemoteTool, str, CatalogEntry]] = OrderedDict()

    @property
    def kinds_digest(self) -> str | None:
        return self.kinds.digest if self.kinds else None

    @property
    def infer(self) -> bool:
        return self.kinds.infer if self.kinds else True

    def remember(self, name: str, stored: StoredTool) -> None:
        """The service saved new settings for a tool (a switch or a class from the chat)."""
        self._stored[name] = stored
        self._cache.pop(name, None)

    def reload(
        self, stored: Mapping[str, StoredTool], widths: Mapping[str, Width] | None = None
    ) -> None:
        """Another process changed the stored settings (`palui.tools.switchboard`): take them
        all, and forget every entry drawn from the old ones."""
        self._stored = dict(stored)
        if widths is not None:
            self._chosen_widths = dict(widths)
        self._cache.clear()

    def form(self, connector_id: str, remote: RemoteTool) -> bool:
        """Whether every call of the tool is reviewed in a form first (palui.toml's
        `[mcp.<name>.tools.<tool>] form`, or the kinds file's `form`)."""
        name = full_name(connector_id, remote.name)
        if name in self._forms:
            return True
        kinds, _ = self._kinds_for(connector_id, name, remote)
        entry = kinds.tools.get(name) if kinds is not None else None
        return bool(entry and entry.form)

    def choose_width(self, connector_id: str, width: Width) -> None:
        """The person chose a connector's width (saved by the caller)."""
        self._chosen_widths[connector_id] = width

    def width(self, connector_id: str) -> Width:
        """What of the connector runs without a card in a clean chat turn."""
        chosen = self._chosen_widths.get(connector_id)
        return chosen or self._file_widths.get(connector_id, Width.WRITES)

    def width_source(self, connector_id: str) -> WidthSource:
        if connector_id in self._chosen_widths:
            return WidthSource.YOU
        return WidthSource.FILE if connector_id in self._file_widths else WidthSource.DEFAULT

    def entry(self, connector_id: str, remote: RemoteTool) -> CatalogEntry:
        name = full_name(connector_id, remote.name)
        # A bare name in the kinds file depends on the other connectors' tools: drawn afresh.
        bare = self.kinds is not None and remote.name in self.kinds.bare
        cached = None if bare else self._cache.get(name)
        if cached is not None and cached[0] is remote:
            self._cache.move_to_end(name)
            return cached[2]
        digest = definition_hash(remote)
        if cached is not None and cached[1] == digest:
            self._cache[name] = (remote, digest, cached[2])
            self._cache.move_to_end(name)
            return cached[2]
        stored = self._stored.get(name)
        override = None
        if stored is not None and stored.tool_class is not None:
            override = Classification(
                tool_class=stored.tool_class,
                sends_out=False,
                source=ClassSource.YOU,
                reason="set in the chat",
                definition_hash=digest,
            )
        kinds, ambiguous = self._kinds_for(connector_id, name, remote)
        classification = classify(name, remote, kinds, override=override)
        if ambiguous is not None:
            classification = replace(
                classification,
                tool_class=ToolClass.DESTRUCTIVE,
                source=ClassSource.UNSURE,
                reason=f"config error: {ambiguous}",
            )
        changed = bool(stored and stored.definition_hash and stored.definition_hash != digest)
        changed = changed or bool(stored and stored.changed)
        # Only a class the tool gave itself, or an assistant's unconfirmed proposal about its
        # old definition, is lost; one a person chose still stands.
        changed = changed and classification.source in (
            ClassSource.ANNOTATION,
            ClassSource.CATALOGUE,
            ClassSource.INFERRED,
            ClassSource.ASSISTANT,
        )
        if changed:
            classification = replace(
                classification,
                tool_class=ToolClass.DESTRUCTIVE,
                source=ClassSource.UNSURE,
                reason="its definition changed after it was classified; look at it again",
            )
        enabled = self._switch(connector_id, remote.name, name, classification, stored, changed)
        entry = CatalogEntry(
            name, connector_id, remote, classification, enabled, stored is None, changed
        )
        self._cache[name] = (remote, digest, entry)
        self._cache.move_to_end(name)
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)
        return entry

    def _kinds_for(
        self, connector_id: str, name: str, remote: RemoteTool
    ) -> tuple[KindsFile | None, str | None]:
        """The kinds file as it applies to this tool (a bare name resolved to its full name),
        or the config error of a bare name several connectors' tools have."""
        kinds = self.kinds
        if kinds is None or remote.name not in kinds.bare:
            return kinds, None
        holders = list(self._holders(remote.name)) if self._holders is not None else []
        if connector_id not in holders:
            holders.append(connector_id)
        try:
            entry = kinds.bare_entry(name, remote.name, holders)
        except AmbiguousName as exc:
            return kinds, str(exc)
        return (kinds.naming(name, entry) if entry is not None else kinds), None

    @property
    def cached(self) -> int:
        """How many entries the cache holds (tests: it stays bounded)."""
        return len(self._cache)

    def _switch(
        self,
        connector_id: str,
        tool: str,
        name: str,
        classification: Classification,
        stored: StoredTool | None,
        changed: bool,
    ) -> bool:
        is_read = classification.tool_class is ToolClass.READ
        if changed and not is_read:
            return False
        if stored is not None:  # palui.toml's globs were written into it at start
            return stored.enabled
        by_file = self.file_switch(connector_id, tool)
        # Palui's own tools start on: the policy matrix alone decides when they ask.
        start_on = is_read or name in self._start_on or connector_id in BUILTIN_IDS
        return start_on if by_file is None else by_file

    def file_switch(self, connector_id: str, tool: str) -> bool | None:
        """What palui.toml's globs say of a tool's switch (None: they don't name it)."""
        return self._globs.get(connector_id, Globs()).decide(tool)
