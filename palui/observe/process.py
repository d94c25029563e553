"""What the daemon costs its host, as `GET /healthz` and `palui doctor` show it: resident memory
now and at its peak, and how long it took from the process's start to serving."""

from __future__ import annotations

import gc
import os
import resource
from dataclasses import dataclass
from pathlib import Path

from palui.logs import get_logger

log = get_logger("palui.app")


@dataclass(frozen=True, slots=True)
class ProcessFacts:
    rss_mb: float | None  # resident now (Linux /proc; None elsewhere)
    peak_rss_mb: float  # the most it ever held
    ready_in_s: float | None  # process start to serving, warm; None until then
    polling_in_s: float | None = None  # process start to Telegram polled (stored, not answered)

    def as_json(self) -> dict[str, float | None]:
        return {
            "rss_mb": _round(self.rss_mb),
            "peak_rss_mb": _round(self.peak_rss_mb),
            "ready_in_s": None if self.ready_in_s is None else round(self.ready_in_s, 2),
            "polling_in_s": None if self.polling_in_s is None else round(self.polling_in_s, 2),
        }


class StartUp:
    """When this process started and when it began serving (one per app)."""

    def __init__(self) -> None:
        self.ready_in_s: float | None = None
        self.polling_in_s: float | None = None

    def polling(self) -> None:
        """Telegram is polled: what comes is stored, and answered once serving begins."""
        self.polling_in_s = process_age_s()
        log.info("palui_polling", polling_in_s=self.polling_in_s)

    def ready(self) -> None:
        """Serving begins: note how long it took, and move every object start-up made (the
        imported libraries: over half a million) out of the collector's way. A full
        collection over them takes ~0.1-0.3 s, paid again and again by turns under load;
        frozen, they are never scanned (`gc.freeze`). No collection first: it would cost as
        much once, and finds a few dozen unreachable objects at this point."""
        gc.freeze()
        self.ready_in_s = process_age_s()
        log.info("palui_ready", **self.facts().as_json())

    def stopped(self) -> None:
        """Serving ends: what start-up froze is the collector's again (an app run inside a
        longer-lived process, as tests and the console do, leaves nothing pinned)."""
        gc.unfreeze()

    def facts(self) -> ProcessFacts:
        now, peak = resident_mb()
        return ProcessFacts(now, peak, self.ready_in_s, self.polling_in_s)


def resident_mb() -> tuple[float | None, float]:
    """(resident now, the most it ever was) in MB, read together so the peak is never below."""
    fields: dict[str, float] = {}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                fields[line[:5]] = int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        fields.clear()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return fields.get("VmRSS"), fields.get("VmHWM", peak)


def process_age_s() -> float | None:
    """Seconds since this process was started (interpreter start and imports included)."""
    try:
        # Field 22 of /proc/self/stat: start time in clock ticks since boot (after the
        # command name, which may hold spaces, in parentheses).
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        boot_age_s = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return max(0.0, boot_age_s - ticks / os.sysconf("SC_CLK_TCK"))


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)
