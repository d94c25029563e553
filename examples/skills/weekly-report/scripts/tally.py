"""Tally (label, hours) pairs: append a call such as `print(tally([("writing", 3.5)]))`."""


def tally(entries: list[tuple[str, float]]) -> str:
    totals: dict[str, float] = {}
    for label, hours in entries:
        totals[label] = totals.get(label, 0.0) + hours
    lines = [f"{label}: {hours:g} h" for label, hours in sorted(totals.items())]
    lines.append(f"total: {sum(totals.values()):g} h")
    return "\n".join(lines)
