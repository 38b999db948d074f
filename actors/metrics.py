"""What `/metrics` shows, with prometheus-client.

Counters and histograms are moved where the thing happens (an app actor finishing a request, a
chat turn ending); the app states and restarts are read from the registry's snapshot when the
page is scraped, so they are never out of date and nobody keeps a second copy of them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from actors.messages import AppStatus
from supervisor.model.lifecycle import AppState

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Tool calls range from a cache hit (~1 ms) to a slow remote API (the default request timeout
# is 60 s); chat turns with a model take seconds.
CALL_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
TURN_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.calls = Counter(
            "mcpapps_app_requests",
            "Requests an app answered, by MCP method and outcome (ok or error).",
            ["app", "method", "outcome"],
            registry=self.registry,
        )
        self.call_seconds = Histogram(
            "mcpapps_app_request_seconds",
            "How long an app took to answer a request, by MCP method.",
            ["app", "method"],
            buckets=CALL_BUCKETS,
            registry=self.registry,
        )
        self.turns = Counter(
            "mcpapps_chat_turns",
            "Chat turns run, by agent engine and outcome (ok or error).",
            ["engine", "outcome"],
            registry=self.registry,
        )
        self.turn_seconds = Histogram(
            "mcpapps_chat_turn_seconds",
            "How long a chat turn took, by agent engine.",
            ["engine"],
            buckets=TURN_BUCKETS,
            registry=self.registry,
        )
        self.saves = Counter(
            "mcpapps_file_saves",
            "Saves of workspace files from app views, by outcome (saved, conflict, too-large,"
            " refused).",
            ["outcome"],
            registry=self.registry,
        )
        self._apps = _AppsCollector()
        self._counted: dict[tuple[str, str, str], Any] = {}
        self._timed: dict[tuple[str, str], Any] = {}
        self.registry.register(self._apps)

    def observe_request(self, app_id: str, method: str, seconds: float, ok: bool) -> None:
        # The labelled series, each looked up once: this runs for every call.
        status = "ok" if ok else "error"
        counted = self._counted.get((app_id, method, status))
        if counted is None:
            counted = self._counted[app_id, method, status] = self.calls.labels(
                app_id, method, status
            )
        timed = self._timed.get((app_id, method))
        if timed is None:
            timed = self._timed[app_id, method] = self.call_seconds.labels(app_id, method)
        counted.inc()
        timed.observe(seconds)

    def observe_turn(self, engine: str, seconds: float, ok: bool) -> None:
        self.turns.labels(engine, "ok" if ok else "error").inc()
        self.turn_seconds.labels(engine).observe(seconds)

    def observe_save(self, outcome: str) -> None:
        self.saves.labels(outcome).inc()

    def render(self, statuses: Sequence[AppStatus]) -> bytes:
        """The whole page, with the app gauges taken from `statuses`."""
        self._apps.statuses = tuple(statuses)
        return generate_latest(self.registry)


class _AppsCollector(Collector):
    def __init__(self) -> None:
        self.statuses: tuple[AppStatus, ...] = ()

    def collect(self) -> Iterator[Any]:
        state = GaugeMetricFamily(
            "mcpapps_app_state",
            "1 for the state each app is in, 0 for the others.",
            labels=["app", "state"],
        )
        restarts = CounterMetricFamily(
            "mcpapps_app_restarts", "Restarts since the supervisor started.", labels=["app"]
        )
        in_flight = GaugeMetricFamily(
            "mcpapps_app_in_flight", "Requests an app is working on now.", labels=["app"]
        )
        for status in self.statuses:
            for each in AppState:
                state.add_metric([status.id, each.value], float(status.state is each))
            restarts.add_metric([status.id], status.restarts)
            in_flight.add_metric([status.id], status.in_flight)
        yield from (state, restarts, in_flight)
