"""One incarnation's death, without a process: the first cause wins and is acted on once; each
cause says why in words and whether the death was abnormal."""

from __future__ import annotations

import trio

from actors.apps.death import (
    ConnectionFailed,
    Exited,
    Hung,
    InternalError,
    SessionEnded,
    SpawnFailed,
    StartupTimeout,
    StdoutClosed,
)
from actors.apps.incarnation import Incarnation


async def test_the_first_cause_of_death_wins() -> None:
    incarnation = Incarnation()
    assert not incarnation.died.is_set()
    assert incarnation.declare(Exited(0)) is True
    assert incarnation.declare(ConnectionFailed("the connection closed")) is False
    assert incarnation.died.is_set()
    exit = incarnation.exit()
    assert exit.reason == Exited(0).reason
    assert exit.abnormal is False


async def test_a_death_is_mourned_once_and_ends_the_service() -> None:
    incarnation = Incarnation()
    async with trio.open_nursery() as nursery:
        incarnation.calls = nursery
        incarnation.declare(Hung(3, 1.0))
        assert incarnation.mourn() is True
        assert incarnation.mourn() is False
        assert incarnation.calls is None
        assert incarnation.upstream is None


async def test_an_incarnation_that_never_ran_ran_for_no_time() -> None:
    incarnation = Incarnation()
    assert not incarnation.running
    exit = incarnation.exit()
    assert exit.reason == SessionEnded().reason  # nothing said why
    assert exit.abnormal is True
    assert exit.ran_for == 0.0


def test_only_a_clean_exit_is_a_normal_death() -> None:
    assert not Exited(0).abnormal
    abnormal = [
        Exited(1),
        Exited(-9),
        StdoutClosed(),
        SpawnFailed("command not found: x"),
        StartupTimeout(5),
        ConnectionFailed("broken pipe"),
        Hung(3, 1.0),
        InternalError("bug"),
        SessionEnded(),
    ]
    assert all(cause.abnormal for cause in abnormal)


def test_a_reason_names_the_stage_and_ends_with_the_stderr_hint() -> None:
    hint = "; last stderr line: boom"
    assert ConnectionFailed("x", running=False).reason.startswith("start-up failed: x")
    assert ConnectionFailed("x", running=True).reason.startswith("the connection failed: x")
    for cause in (Exited(2, hint), StartupTimeout(5, hint), ConnectionFailed("x", True, hint)):
        assert cause.reason.endswith(hint)
    assert "startupTimeoutSeconds" in StartupTimeout(5).reason
    # A kill from outside is not explained by whatever the process last wrote; a crash may be.
    assert Exited(-9, hint).reason == "the process was killed by SIGKILL"
    assert Exited(-15, hint).reason == "the process was killed by SIGTERM"
    assert Exited(-6, hint).reason == f"the process was killed by SIGABRT{hint}"
    assert "3 pings" in Hung(3, 1.0).reason
