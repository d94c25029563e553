"""Charts as SVG drawn on the server: bars against a cap line, with labelled axes.

Pure functions from numbers to markup (no script, no fonts or anything fetched). Every text is
escaped here, since the result goes into a page unescaped. Each chart is an image with a
`<title>` and a `<desc>` for screen readers, and each bar has a `<title>` (its exact number, shown
on hover too). The bars and the cap line carry their numbers as `data-` attributes, so a test can
read what a chart says.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT = 720, 240
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 28, 44  # room for the axes' numbers and labels
MAX_X_LABELS = 12
# Inside each SVG, so a chart looks the same wherever it is put (the page's policy allows it).
STYLE = (
    "<style>.grid{stroke:#e3e6ea}.axis{stroke:#8a9099}.tick{font:11px sans-serif;fill:#5b626b}"
    ".axis-label{font:12px sans-serif;fill:#3b4148}.bar{fill:#4a7fc1}.bar:hover{fill:#2f5f9e}"
    ".bar.over{fill:#c8553d}.cap{stroke:#c8553d;stroke-width:2;stroke-dasharray:6 4}"
    ".cap-label{font:bold 11px sans-serif;fill:#c8553d}.track{fill:#e3e6ea}</style>"
)


@dataclass(frozen=True, slots=True)
class Bar:
    label: str  # under the bar ("Tue 1", "14:00")
    value: int
    title: str  # the bar's tooltip: its window in full and its exact number


def short_number(n: int) -> str:
    """12 · 1.5k · 200k · 2M: an axis tick, not an exact count (the titles are exact)."""
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        if abs(n) >= size:
            value = n / size
            text = f"{value:.1f}".removesuffix(".0") if value < 10 else f"{value:.0f}"
            return text + suffix
    return str(n)


def nice_step(value: int, ticks: int = 4) -> int:
    """A tick step of 1, 2 or 5 × 10ⁿ such that `ticks` steps reach `value` (at least 1)."""
    step = 1
    while True:
        for factor in (1, 2, 5):
            if step * factor * ticks >= value:
                return step * factor
        step *= 10


def _attr(text: str) -> str:
    return escape(text, quote=True)


def bar_chart(
    bars: Sequence[Bar],
    *,
    title: str,
    description: str,
    x_label: str,
    y_label: str,
    cap: int = 0,
    cap_label: str = "cap",
    chart_id: str = "chart",
) -> str:
    """Vertical bars, one per window, under a dashed cap line (none when `cap` is 0); a bar at
    or over the cap is drawn in the warning colour."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    peak = max([cap, *(bar.value for bar in bars), 1]) * 21 // 20  # some room above
    step = nice_step(peak)
    top = step * -(-peak // step)  # whole steps: the grid ends at the top
    base = TOP + plot_h

    def y(value: int) -> float:
        return base - plot_h * value / top

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'role="img" aria-labelledby="{chart_id}-t {chart_id}-d" id="{chart_id}">',
        f'<title id="{chart_id}-t">{escape(title)}</title>',
        f'<desc id="{chart_id}-d">{escape(description)}</desc>',
        STYLE,
    ]
    for tick in range(0, top + 1, step):  # the grid and the y axis' numbers
        parts.append(
            f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(tick):.1f}" '
            f'y2="{y(tick):.1f}"/>'
            f'<text class="tick" x="{LEFT - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">'
            f"{short_number(tick)}</text>"
        )
    slot = plot_w / max(len(bars), 1)
    every = max(1, -(-len(bars) // MAX_X_LABELS))  # label every n-th bar: never crowded
    for index, bar in enumerate(bars):
        x = LEFT + index * slot + slot * 0.15
        height = base - y(bar.value)
        over = " over" if cap and bar.value >= cap else ""
        parts.append(
            f'<rect class="bar{over}" x="{x:.1f}" y="{y(bar.value):.1f}" '
            f'width="{slot * 0.7:.1f}" height="{height:.1f}" data-label="{_attr(bar.label)}" '
            f'data-value="{bar.value}"><title>{escape(bar.title)}</title></rect>'
        )
        if (len(bars) - 1 - index) % every == 0:  # the newest bar is always labelled
            parts.append(
                f'<text class="tick" x="{x + slot * 0.35:.1f}" y="{base + 16}" '
                f'text-anchor="middle">{escape(bar.label)}</text>'
            )
    parts.append(f'<line class="axis" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{base}" y2="{base}"/>')
    if cap:
        parts.append(
            f'<line class="cap" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(cap):.1f}" '
            f'y2="{y(cap):.1f}" data-cap="{cap}"><title>{escape(cap_label)}: {cap:,}</title></line>'
            # The key above the plot, where no bar can cover it.
            f'<line class="cap" x1="{LEFT}" x2="{LEFT + 24}" y1="{TOP - 14}" y2="{TOP - 14}"/>'
            f'<text class="cap-label" x="{LEFT + 30}" y="{TOP - 10}">'
            f"{escape(cap_label)}: {cap:,}</text>"
        )
    parts.append(
        f'<text class="axis-label" x="{LEFT + plot_w / 2:.0f}" y="{HEIGHT - 6}" '
        f'text-anchor="middle">{escape(x_label)}</text>'
        f'<text class="axis-label" x="14" y="{TOP + plot_h / 2:.0f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {TOP + plot_h / 2:.0f})">{escape(y_label)}</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


def meter(value: int, cap: int, *, title: str, width: int = 160, height: int = 14) -> str:
    """One small horizontal bar: `value` against `cap` (full when at or over it)."""
    share = 1.0 if cap <= 0 else min(value / cap, 1.0)
    over = " over" if cap and value >= cap else ""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="meter" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{_attr(title)}"><title>{escape(title)}</title>{STYLE}'
        f'<rect class="track" x="0" y="0" width="{width}" height="{height}" rx="3"/>'
        f'<rect class="bar{over}" x="0" y="0" width="{width * share:.1f}" height="{height}" '
        f'rx="3" data-value="{value}" data-cap="{cap}"/></svg>'
    )
