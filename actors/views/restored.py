"""What a restored view may still ask, pure. A view rebuilt from a saved chat (after a page
reload or a supervisor restart) shows the result the chat saved; the person has not asked it to
do anything in this page, so it calls no tool and reads no resource until they press Run, which
opens a fresh view whose opening call is theirs. The page still needs to draw it: it lists the
app's tools and resources and reads the one UI resource of the tool the view renders, which the
view may read too (it is its own HTML, nothing of the person's)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from actors.catalog import Wire
from actors.tooltable import ui_resource_uri
from actors.views.refusals import Inactive

# Listing changes nothing at the app and is what the page reads to render the view.
STILL_ASKED = frozenset({"tools/list", "resources/list", "resources/templates/list"})

RUN_AGAIN = "the person must press Run to use it again (a fresh call)"


def refusal(
    method: str,
    params: Mapping[str, Any],
    tool_call: Mapping[str, Any] | None,
    tools: Iterable[Wire],
) -> Inactive | None:
    """Why a restored view may not ask `method` (None: it may). `tools` is its app's catalog;
    the UI resource the view renders is the one its tool's `_meta.ui` names there, not one the
    page names, so a page cannot widen what a restored view reads."""
    if method in STILL_ASKED:
        return None
    if method == "resources/read":
        name = (tool_call or {}).get("toolName")
        own = next((ui_resource_uri(t) for t in tools if t.get("name") == name), None)
        if own is not None and params.get("uri") == own:
            return None
        what = f"read '{params.get('uri')}'"
    elif method == "tools/call":
        what = f"call '{params.get('name')}'"
    else:
        what = f"ask '{method}'"
    return Inactive(
        f"this view was restored from the saved chat and is inactive, so it may not {what}:"
        f" {RUN_AGAIN}"
    )
