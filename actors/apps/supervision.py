"""Supervision as data: when to restart, how long to wait, when to give up.

The decisions are pure functions over a `SupervisionPolicy` and the restart history; `supervise`
is the one loop that applies them, used by every app actor. It reads like an OTP supervisor's
child spec: restart type, backoff, intensity within a period.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable

import attrs
import trio

from supervisor.model.policy import RestartType, SupervisionPolicy


@attrs.frozen
class Exit:
    """How one run of a child ended. `abnormal` is false only for a clean exit the child chose
    (status 0); `ran_for` is how long it had been Running (0 when it never got there)."""

    reason: str
    abnormal: bool = True
    ran_for: float = 0.0
    # The child is run again at once, whatever the restart type: its exit was no failure but
    # a step of its own (a sign-in to ask again for), so no backoff and no restart is counted.
    at_once: bool = False


def wants_restart(restart: RestartType, exit: Exit) -> bool:
    if restart == "permanent":
        return True
    if restart == "transient":
        return exit.abnormal
    return False


def restart_delay(policy: SupervisionPolicy, attempt: int, rng: random.Random) -> float:
    """Exponential backoff with full jitter: uniform in [0, min(max, initial * 2^attempt)]."""
    ceiling = min(policy.backoff_max_s, policy.backoff_initial_s * 2.0 ** min(attempt, 60))
    return rng.uniform(0.0, ceiling)


def recent(history: tuple[float, ...], now: float, period_s: float) -> tuple[float, ...]:
    """The restart times still inside the intensity period."""
    return tuple(t for t in history if now - t < period_s)


def gives_up(policy: SupervisionPolicy, history: tuple[float, ...]) -> bool:
    """More than `intensity` restarts within `period_s` (history already trimmed to the period)."""
    return len(history) > policy.intensity


@attrs.frozen
class Retry:
    """A restart was decided: it happens at `at` (trio clock), after `delay` seconds."""

    delay: float
    at: float
    restarts: int


@attrs.frozen
class Ended:
    """The restart type says the last exit ends supervision (a clean exit under `transient`,
    any exit under `temporary`)."""

    exit: Exit


@attrs.frozen
class GaveUp:
    """More restarts within the period than the intensity allows: supervision gave up."""

    exit: Exit


Outcome = Ended | GaveUp


async def supervise(
    run_once: Callable[[], Awaitable[Exit]],
    policy: SupervisionPolicy,
    *,
    on_retry: Callable[[Exit, Retry], None],
    rng: random.Random | None = None,
) -> Outcome:
    """Run the child again and again as the policy says, until the restart type says stop
    (`Ended`) or the restart intensity is exceeded (`GaveUp`)."""
    rng = rng or random.Random()
    attempt = 0  # the backoff exponent, reset after a healthy run
    history: tuple[float, ...] = ()
    restarts = 0
    while True:
        exit = await run_once()
        if exit.at_once:
            continue
        if not wants_restart(policy.restart, exit):
            return Ended(exit)
        now = trio.current_time()
        if exit.ran_for >= policy.healthy_after_s:
            attempt = 0
        history = (*recent(history, now, policy.period_s), now)
        if gives_up(policy, history):
            return GaveUp(exit)
        delay = restart_delay(policy, attempt, rng)
        attempt += 1
        restarts += 1
        on_retry(exit, Retry(delay=delay, at=now + delay, restarts=restarts))
        await trio.sleep(delay)
