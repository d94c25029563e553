"""`palui__run_code(language, code)`: Python in the sandbox, as a built-in tool.

Destructive by its marks (always a card). Offered only when `[run_code] enabled` and the probe
at start could set a sandbox up. Its result is untrusted content: it carries whatever the code
printed, so it taints the turn.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from palui.config import RunCodeSettings
from palui.domain import RemoteTool, ToolOutcome
from palui.logs import get_logger
from palui.sandbox.bridge import Bridge, Dispatch
from palui.sandbox.confine import Confinement, choose
from palui.sandbox.launcher import RunResult, Sandbox, probe
from palui.sandbox.limits import MAX_BRIDGE_CALLS, SandboxLimits, cut

log = get_logger("palui.sandbox")

NAME = "run_code"
MAX_CODE = 100_000
LANGUAGES = ("python",)
MEMORY_NOTE = "went over its memory limit"  # what inside/start.py prints on a MemoryError
PROCESS_NOTE = "went over its limit of"  # ... and when a process or thread could not start


# Fixed words: the description is part of the tool's definition hash, so limits changed in
# palui.toml must not make it look like a changed (rug-pulled) tool.
DEFINITION = RemoteTool(
    NAME,
    "Run a short Python program in an isolated sandbox and get what it printed (stdout and "
    "stderr, cut when long). No network, no files of the user's, a fresh empty home, and limits "
    "on time and memory. Inside, `import palui_tools; palui_tools.call('palui__list_jobs', {})` "
    f"runs one of Palui's built-in read tools (at most {MAX_BRIDGE_CALLS} calls per run).",
    {
        "type": "object",
        "properties": {
            "language": {"type": "string", "enum": list(LANGUAGES)},
            "code": {"type": "string", "description": "The program's source code."},
        },
        "required": ["language", "code"],
    },
    {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": False},
)


class RunCode:
    """The tool's state: its sandbox, and whether the probe at start found it usable."""

    def __init__(
        self,
        settings: RunCodeSettings,
        data_dir: Path,
        *,
        confine: Callable[[], Confinement] = choose,  # how the run's totals are held, at probe
    ) -> None:
        self._confine = confine
        self.limits = SandboxLimits(
            timeout_s=settings.timeout_seconds,
            memory_mb=settings.memory_mb,
            processes=settings.processes,
            output_chars=settings.output_chars,
        )
        self._settings = settings
        self._data_dir = data_dir
        self._sandbox = Sandbox(
            settings.bwrap, settings.python, self.limits, Confinement(None, "not probed yet")
        )
        self.unavailable: str | None = "not probed yet"  # why it is not offered

    @property
    def tool(self) -> RemoteTool:
        return DEFINITION

    @property
    def confinement(self) -> Confinement:
        return self._sandbox.confinement

    @property
    def ready(self) -> bool:
        return self.unavailable is None

    async def probe(self) -> str | None:
        """Choose how the run's totals are held, try the sandbox once; remember and return why
        it can't be used (None: it can)."""
        confinement = self._confine()
        self._sandbox = Sandbox(
            self._settings.bwrap, self._settings.python, self.limits, confinement
        )
        self.unavailable = await probe(
            self._settings.bwrap, self._data_dir, self.limits, confinement
        )
        if self.unavailable:
            log.warning("run_code_unavailable", reason=self.unavailable)
        return self.unavailable

    async def run(self, arguments: dict[str, Any], dispatch: Dispatch) -> ToolOutcome:
        language, code = arguments.get("language"), arguments.get("code")
        if language not in LANGUAGES:
            return _error(f"language must be 'python' (got {language!r}); nothing was run.")
        if not isinstance(code, str) or not code.strip():
            return _error("'code' must be the program's source, a non-empty string.")
        if len(code) > MAX_CODE:
            return _error(f"'code' is too long ({len(code):,} characters; at most {MAX_CODE:,}).")
        if not self.ready:
            return _error(f"the sandbox can't be used here: {self.unavailable}. Nothing was run.")
        result = await self._sandbox.run(code, Bridge(dispatch, self.limits.bridge_calls))
        log.info(
            "run_code_ran",
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            peak_bytes=result.usage.peak_bytes,
        )
        text = describe(result, self.limits)
        return ToolOutcome(text, is_error=result.exit_code != 0, untrusted=True)


def describe(result: RunResult, limits: SandboxLimits) -> str:
    """What the model reads: how the run ended, then its output, each part cut at the limit."""
    if result.timed_out:
        head = (
            f"Stopped: the code ran past its {limits.timeout_s:g} s time limit and was killed "
            "(with everything it started)."
        )
    elif result.exit_code == 0:
        head = "The code ran (exit code 0)."
    else:
        head = f"The code failed (exit code {result.exit_code})."
    if MEMORY_NOTE in result.stderr or result.usage.oom_killed:
        head += f" It ran out of memory (the limit is {limits.memory_mb} MB for the whole run)."
    if PROCESS_NOTE in result.stderr or result.usage.process_capped:
        head += f" It hit the limit of {result.processes} processes and threads at once."
    if result.bridge_calls:
        calls = "once" if result.bridge_calls == 1 else f"{result.bridge_calls} times"
        head += f" It asked for Palui's tools {calls} (at most {limits.bridge_calls} run)."
    parts = [head]
    for name, text, more in (
        ("stdout", result.stdout, result.stdout_cut),
        ("stderr", result.stderr, result.stderr_cut),
    ):
        if text or more:
            parts.append(f"{name}:\n{cut(text, limits.output_chars, more=more)}")
    if not result.stdout and not result.stderr:
        parts.append("(no output)")
    return "\n".join(parts)


def _error(text: str) -> ToolOutcome:
    return ToolOutcome(f"Error: {text}", is_error=True)
