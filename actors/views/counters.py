"""The view hub's counters in `/metrics`: the person's decisions on held calls, and the requests
of views the server refused."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

from actors.metrics import Metrics
from actors.views.refusals import ViewRefusal


class ViewCounters:
    def __init__(self, metrics: Metrics | None = None) -> None:
        # Without the supervisor's metrics (a test), counters of their own: never the global
        # registry, where a second hub would clash with the first.
        registry = metrics.registry if metrics is not None else CollectorRegistry()
        self._decisions = Counter(
            "mcpapps_view_approvals",
            "Approvals of a view's tool calls, by app and decision (once, while-open, deny,"
            " timeout).",
            ["app", "decision"],
            registry=registry,
        )
        self._refusals = Counter(
            "mcpapps_view_refusals",
            "Requests of a view the server refused, by app and reason (the refusal's kind).",
            ["app", "reason"],
            registry=registry,
        )

    def decided(self, app_id: str, decision: str) -> None:
        self._decisions.labels(app_id, decision).inc()

    def refused(self, app_id: str, refusal: ViewRefusal) -> None:
        self._refusals.labels(app_id, refusal.reason).inc()
