"""Which saved chat sessions `[state]` no longer keeps (pure): those whose last turn is older
than `chat_sessions_max_age_days`, and those beyond the newest `chat_sessions_max_count`.

The chat hub asks this at start and then every `RETENTION_EVERY_S`: one sweep for every
session, never a timer per session. A session with a turn running or waiting is never chosen
(it is about to be newer), but it counts towards the number kept.
"""

from __future__ import annotations

from collections.abc import Container, Sequence

import attrs

from actors.chat.chatstore import SessionSummary

DAY_S = 86_400.0
RETENTION_EVERY_S = 600.0


@attrs.frozen
class Retention:
    max_age_s: float | None = None  # None: no session is too old
    max_count: int | None = None  # None: no session is one too many

    @classmethod
    def of(cls, max_age_days: float | None, max_count: int | None) -> Retention:
        return cls(None if max_age_days is None else max_age_days * DAY_S, max_count)

    @property
    def keeps_everything(self) -> bool:
        return self.max_age_s is None and self.max_count is None


KEEP_EVERYTHING = Retention()  # the default: sessions are kept until deleted by hand


def expired(
    sessions: Sequence[SessionSummary], now: float, retention: Retention, busy: Container[str]
) -> list[str]:
    """The ids of the sessions to delete, given every saved session and the time now (Unix
    seconds)."""
    doomed: list[str] = []
    kept = 0
    for session in sorted(sessions, key=lambda s: (-s.updated_at, s.id)):
        too_old = retention.max_age_s is not None and now - session.updated_at > retention.max_age_s
        too_many = retention.max_count is not None and kept >= retention.max_count
        if session.id not in busy and (too_old or too_many):
            doomed.append(session.id)
        else:
            kept += 1
    return doomed
