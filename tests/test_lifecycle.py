"""The lifecycle as data: the transitions an app actor may make."""

from __future__ import annotations

from supervisor.model.lifecycle import TRANSITIONS, AppState, may_move


def test_every_state_has_its_moves() -> None:
    assert set(TRANSITIONS) == set(AppState)


def test_an_app_runs_only_after_it_was_loaded() -> None:
    assert [s for s in AppState if may_move(s, AppState.RUNNING)] == [AppState.LOADED]


def test_apps_without_an_actor_never_move() -> None:
    assert not TRANSITIONS[AppState.DISCOVERED]
    assert not TRANSITIONS[AppState.DISABLED]


def test_a_stopped_or_failed_app_is_started_again_through_loaded() -> None:
    for state in (AppState.STOPPED, AppState.FAILED):
        assert may_move(state, AppState.LOADED)
        assert not may_move(state, AppState.RUNNING)
