"""The supervision decisions (pure) and the loop that applies them, on Trio's virtual clock."""

from __future__ import annotations

import random

import attrs
import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from actors.apps.supervision import (
    Ended,
    Exit,
    GaveUp,
    gives_up,
    recent,
    restart_delay,
    supervise,
    wants_restart,
)
from supervisor.model.policy import SupervisionPolicy

POLICY = SupervisionPolicy()


@pytest.mark.parametrize(
    ("restart", "abnormal", "expected"),
    [
        ("permanent", True, True),
        ("permanent", False, True),
        ("transient", True, True),
        ("transient", False, False),
        ("temporary", True, False),
        ("temporary", False, False),
    ],
)
def test_restart_types(restart: str, abnormal: bool, expected: bool) -> None:
    assert wants_restart(restart, Exit("x", abnormal=abnormal)) is expected  # type: ignore[arg-type]


@given(st.integers(min_value=0, max_value=10_000), st.integers())
def test_full_jitter_stays_within_the_exponential_ceiling(attempt: int, seed: int) -> None:
    delay = restart_delay(POLICY, attempt, random.Random(seed))
    ceiling = min(POLICY.backoff_max_s, POLICY.backoff_initial_s * 2 ** min(attempt, 64))
    assert 0 <= delay <= ceiling


def test_jitter_spreads_delays() -> None:
    rng = random.Random(1)
    delays = {round(restart_delay(POLICY, 3, rng), 3) for _ in range(50)}
    assert len(delays) > 40
    assert max(delays) <= 4.0


def test_intensity_window() -> None:
    assert recent((1.0, 50.0, 100.0), now=120.0, period_s=60.0) == (100.0,)
    policy = attrs.evolve(POLICY, intensity=2)
    assert not gives_up(policy, (1.0, 2.0))
    assert gives_up(policy, (1.0, 2.0, 3.0))
    assert gives_up(attrs.evolve(POLICY, intensity=0), (1.0,))


async def test_loop_gives_up_after_intensity(autojump_clock: trio.testing.MockClock) -> None:
    runs = 0
    retries = []

    async def crash() -> Exit:
        nonlocal runs
        runs += 1
        return Exit("boom")

    policy = attrs.evolve(POLICY, intensity=3, period_s=1000)
    outcome = await supervise(crash, policy, on_retry=lambda e, r: retries.append(r))
    assert outcome == GaveUp(Exit("boom"))
    assert runs == 4  # the first run and three restarts
    assert [r.restarts for r in retries] == [1, 2, 3]


async def test_backoff_grows_then_resets_after_a_healthy_run(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ran_for = iter([0, 0, 0, 0, 100, 0])
    ceilings = []

    async def run() -> Exit:
        value = next(ran_for, None)
        if value is None:
            return Exit("done", abnormal=False)
        return Exit("crash", ran_for=value)

    policy = attrs.evolve(
        POLICY, restart="transient", intensity=100, healthy_after_s=60, backoff_max_s=100
    )

    class Ceiling(random.Random):
        def uniform(self, a: float, b: float) -> float:
            ceilings.append(b)
            return b

    outcome = await supervise(run, policy, on_retry=lambda e, r: None, rng=Ceiling())
    assert outcome == Ended(Exit("done", abnormal=False))
    assert ceilings == [0.5, 1.0, 2.0, 4.0, 0.5, 1.0]


async def test_temporary_never_restarts(autojump_clock: trio.testing.MockClock) -> None:
    runs = 0

    async def run() -> Exit:
        nonlocal runs
        runs += 1
        return Exit("crash")

    outcome = await supervise(
        run, attrs.evolve(POLICY, restart="temporary"), on_retry=lambda e, r: None
    )
    assert (runs, outcome) == (1, Ended(Exit("crash")))


async def test_restarts_outside_the_period_do_not_count(
    autojump_clock: trio.testing.MockClock,
) -> None:
    runs = 0

    async def run() -> Exit:
        nonlocal runs
        runs += 1
        if runs > 10:
            return Exit("enough", abnormal=False)
        await trio.sleep(30)  # each run lasts longer than the period
        return Exit("crash", ran_for=30)

    policy = attrs.evolve(POLICY, restart="transient", intensity=1, period_s=20)
    outcome = await supervise(run, policy, on_retry=lambda e, r: None)
    assert outcome == Ended(Exit("enough", abnormal=False))
    assert runs == 11
