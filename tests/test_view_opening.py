"""The call that opens a view is the person's: a UI tool for the model only (`_meta.ui.visibility`
`["model"]`) opens from the page's "Open view", its opening call passing the view door once,
exactly as opened, while the view itself still may not call it. A real `mcpapps run`."""

from __future__ import annotations

from tests.support.frontdoor import http, write
from tests.support.helpers import Project
from tests.support.running import supervisor_running
from tests.support.views import call, open_view

NOT_ALLOWED = -32002  # a tool the view may not call (README, "Views on the server")
FX = ("fx", ("--app-only",))


async def test_a_model_only_tool_s_opening_call_is_the_person_s_once(project: Project) -> None:
    write(project, "", FX, grocery=False)  # approval "writes": these tools are not read-only
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        opening = {"toolName": "model_only_tool", "arguments": {}}
        view = await open_view(client, "fx", toolCall=opening, run=True)
        ran = await call(client, view, "model_only_tool")
        assert "error" not in ran, ran  # neither refused nor held for approval
        again = await call(client, view, "model_only_tool")
        assert again["error"]["code"] == NOT_ALLOWED
        assert "for the model only" in again["error"]["message"]

        # Another call than the one opened, or a view opened without `run`, is the view's.
        other = await open_view(client, "fx", toolCall=opening, run=True)
        changed = await call(client, other, "model_only_tool", {"extra": 1})
        assert changed["error"]["code"] == NOT_ALLOWED
        shown = await open_view(client, "fx", toolCall=opening)
        assert (await call(client, shown, "model_only_tool"))["error"]["code"] == (NOT_ALLOWED)
