"""Telling a fault from its cancellation.

When an app dies, the calls and tasks talking to it fail (the connection is closed) at the very
moment the incarnation that owns them is cancelled; Trio then raises both together, as an
exception group holding `Cancelled` beside the fault. Such a group is the app's death seen from
inside, already handled where the death is declared, not an error of its own.
"""

from __future__ import annotations

import trio


def split_cancelled(error: BaseException) -> tuple[bool, BaseException | None]:
    """Whether `error` holds a cancellation, and what it holds besides (None if nothing)."""
    if isinstance(error, trio.Cancelled):
        return True, None
    if isinstance(error, BaseExceptionGroup):
        cancelled, rest = error.split(trio.Cancelled)
        return cancelled is not None, rest
    return False, error
