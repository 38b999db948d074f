"""How an app is supervised, as plain data: the `[supervision]` table and its per-app overrides."""

from __future__ import annotations

from typing import Annotated, Literal

import attrs

from supervisor.model.structuring import Between

RestartType = Literal["permanent", "transient", "temporary"]
Seconds = Annotated[float, Between(0, low_exclusive=True)]
NonNegativeSeconds = Annotated[float, Between(0)]
Count = Annotated[int, Between(1)]
NonNegativeCount = Annotated[int, Between(0)]


@attrs.frozen(kw_only=True)
class SupervisionPolicy:
    """Restart type, backoff, intensity, liveness and limits of one app."""

    restart: RestartType = "permanent"
    backoff_initial_s: Seconds = 0.5
    backoff_max_s: Seconds = 30.0
    intensity: NonNegativeCount = 5
    period_s: Seconds = 60.0
    healthy_after_s: NonNegativeSeconds = 60.0
    ping_interval_s: Seconds = 20.0
    ping_timeout_s: Seconds = 5.0
    ping_misses: Count = 3
    stop_grace_s: NonNegativeSeconds = 5.0
    max_concurrent_calls: Count = 32


SUPERVISION_KEYS: tuple[str, ...] = tuple(a.name for a in attrs.fields(SupervisionPolicy))


def policy_problems(policy: SupervisionPolicy) -> list[tuple[str, str]]:
    """Rules that involve more than one key, as `(key, sentence)` pairs."""
    if policy.backoff_max_s < policy.backoff_initial_s:
        return [
            (
                "backoff_max_s",
                f"must be at least backoff_initial_s ({policy.backoff_initial_s:g}),"
                f" got {policy.backoff_max_s:g}",
            )
        ]
    return []
