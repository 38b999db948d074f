"""What the front door knows of each app's state without asking: the registry's published
`StateChanged` facts, kept as they arrive (by the task that relays the registry's facts, the
only writer).

It lets a request to an app that is down be refused at once. Asking the registry would put it
in the registry's mailbox behind the messages of every call in flight, and under load a refusal
would take as long as a call. It is only ever used to refuse: a request to an app that looks
Running still goes to the app's actor, which has the last word.
"""

from __future__ import annotations

from actors.messages import AppStatus


class AppStates:
    def __init__(self) -> None:
        self._latest: dict[str, AppStatus] = {}

    def record(self, status: AppStatus) -> None:
        self._latest[status.id] = status

    def get(self, app_id: str) -> AppStatus | None:
        return self._latest.get(app_id)
