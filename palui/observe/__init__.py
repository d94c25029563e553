"""What an operator watches: metrics (`metrics.py`) and traces (`traces.py`). The only package that
imports prometheus-client and OpenTelemetry."""

from palui.observe.metrics import Metrics

__all__ = ["Metrics"]
