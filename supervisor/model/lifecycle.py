"""The states of an app: the source's six, plus Disabled and NeedsSignIn."""

from __future__ import annotations

import enum
from collections.abc import Mapping


class AppState(enum.StrEnum):
    DISCOVERED = "Discovered"  # manifest found (and, while it stays here, not valid)
    VALIDATED = "Validated"  # passed validation, may run
    DISABLED = "Disabled"  # filtered out by config, with the reason
    LOADED = "Loaded"  # connecting: process spawned or HTTP client opened
    RUNNING = "Running"  # handshake done, catalog enumerated
    # Waits for a person to sign in to the app's authorization server (`auth = "oauth"`): not a
    # failure, so no restart and no backoff; it goes on (Loaded) once the sign-in comes back.
    NEEDS_SIGN_IN = "NeedsSignIn"
    STOPPED = "Stopped"  # stopped on purpose; never restarted by itself
    FAILED = "Failed"  # died or failed to start; see last_error


_S = AppState
# The moves an app actor may make, from each state. Discovered and Disabled apps have no actor.
# Loaded again from Loaded or Running is a restart asked for while connecting or running;
# Stopped again from Stopped is a stop during the backoff after a clean exit. NeedsSignIn is
# entered while connecting (Loaded) and left for Loaded when the person's sign-in arrives;
# Running → Loaded again is also a sign-in lost while running (a new connection asks again).
TRANSITIONS: Mapping[AppState, frozenset[AppState]] = {
    _S.DISCOVERED: frozenset(),
    _S.DISABLED: frozenset(),
    _S.VALIDATED: frozenset({_S.LOADED, _S.STOPPED}),
    _S.LOADED: frozenset({_S.LOADED, _S.RUNNING, _S.FAILED, _S.STOPPED, _S.NEEDS_SIGN_IN}),
    _S.NEEDS_SIGN_IN: frozenset({_S.LOADED, _S.FAILED, _S.STOPPED}),
    _S.RUNNING: frozenset({_S.LOADED, _S.FAILED, _S.STOPPED}),
    _S.FAILED: frozenset({_S.LOADED, _S.STOPPED}),
    _S.STOPPED: frozenset({_S.LOADED, _S.STOPPED}),
}


def may_move(source: AppState, target: AppState) -> bool:
    return target in TRANSITIONS[source]
