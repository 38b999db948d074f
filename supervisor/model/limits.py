"""`[limits]`: what the front door takes from any one client, as plain data. Each limit holds on
every route, so no route is the weak one; the defaults suit a supervisor on loopback."""

from __future__ import annotations

import attrs

from supervisor.model.policy import Count, Seconds


@attrs.frozen(kw_only=True)
class LimitsConfig:
    max_body_bytes: Count = 4 * 1024 * 1024  # a larger request body is refused with 413
    body_timeout_s: Seconds = 30.0  # a body not finished by then is refused with 408
    max_sessions: Count = 1000  # open MCP sessions per endpoint; one more is a 503
    session_idle_s: Seconds = 30 * 60.0  # an MCP session unused this long is closed
    keep_alive_s: Seconds = 75.0  # an idle HTTP connection is closed after this


DEFAULT_LIMITS = LimitsConfig()
