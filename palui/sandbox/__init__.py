"""Sandboxed code execution for `palui__run_code`: bubblewrap isolation and its limits
(`launcher`, `limits`), the narrow bridge back to Palui's built-in read tools (`bridge`), the
tool itself (`tool`), and what runs inside the sandbox (`inside/`, standard library only)."""

from palui.sandbox.launcher import RunResult, Sandbox, probe
from palui.sandbox.limits import MAX_BRIDGE_CALLS, SandboxLimits
from palui.sandbox.tool import RunCode

__all__ = ["MAX_BRIDGE_CALLS", "RunCode", "RunResult", "Sandbox", "SandboxLimits", "probe"]
