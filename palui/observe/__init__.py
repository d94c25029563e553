"""What an operator watches: metrics (`metrics.py`) and traces (`traces.py`). The only package that
imports prometheus-client and OpenTelemetry."""

from palui.observe.metrics import Metrics
from palui.observe.traces import Tracing, event, trace_id, traced_model, traceparent

__all__ = ["Metrics", "Tracing", "event", "trace_id", "traced_model", "traceparent"]
