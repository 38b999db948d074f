"""Which app offers each public tool name, as the front door learns it from the registry's
published tool tables, so that a call to a tool of an app that is down is refused at once on
`/mcp` and `/admin/call`, as `/apps/mcp/<appId>` refuses a request to such an app
(web/appstates.py says why: the registry's mailbox holds the messages of every call in flight,
and under load a refusal would take as long as a call).

An app that goes down leaves the tool table, so its tools are remembered from the tables seen
before. The refusal is the registry's own (the same `AppUnavailable` and text): a name the
current table offers, a name no table ever had, or a name whose app has no prefix (then the
registry cannot tell whose it is either) still goes to the registry, which has the last word.
"""

from __future__ import annotations

from actors.messages import AppUnavailable
from actors.tooltable import ToolTable
from supervisor.model.lifecycle import AppState
from web.appstates import AppStates


class ToolOwners:
    def __init__(self, states: AppStates) -> None:
        self._states = states
        self._offered: frozenset[str] = frozenset()  # public names (and aliases) offered now
        self._owners: dict[str, tuple[str, str]] = {}  # public name → (app id, its prefix)

    def record(self, table: ToolTable) -> None:
        """A table the registry published (the one writer: the task relaying its facts)."""
        offered: set[str] = set()
        for tool in table.tools:
            offered.update((tool.public_name, tool.alias))
            prefix = tool.public_name[: len(tool.public_name) - len(tool.name)]
            if prefix and tool.public_name.endswith(tool.name):
                self._owners[tool.public_name] = (tool.app_id, prefix)
        self._offered = frozenset(offered)

    def refusal(self, public_name: str) -> AppUnavailable | None:
        """The registry's answer to a call of `public_name`, if it is known without asking:
        its app is known to be down."""
        if public_name in self._offered:
            return None
        owner = self._owners.get(public_name)
        if owner is None:
            return None
        app_id, prefix = owner
        status = self._states.get(app_id)
        if status is None or status.state is AppState.RUNNING or not public_name.startswith(prefix):
            return None
        why = f" ({status.last_error})" if status.last_error else ""
        return AppUnavailable(
            app_id,
            f"tool '{public_name}' is not available: app '{app_id}' that would offer it is"
            f" {status.state}{why}",
            retry_at=status.next_retry_at,
        )
