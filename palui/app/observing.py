"""What an operator watches, built once per app: the metrics every part counts into."""

from __future__ import annotations

from pydantic import SecretStr

from palui.observe import Metrics
from palui.tools.registry import ToolRegistry


def secret(value: SecretStr | None) -> str | None:
    return None if value is None else value.get_secret_value()


def app_metrics(registry: ToolRegistry, metrics: Metrics | None = None) -> Metrics:
    """This app's metrics (`metrics`, counted into since the first poll, or new); connectors'
    states read from the registry at each scrape."""
    metrics = metrics or Metrics()

    def states() -> list[tuple[str, str]]:
        return [(s.id, str(s.state)) for s in (t.status() for t in registry.toolsets)]

    metrics.follow_connectors(states)
    return metrics
