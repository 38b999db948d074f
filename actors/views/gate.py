"""The rules of what a view may ask, pure: the methods it may ask, the tools it may call (its own
app's, visible to the app), which calls wait for the person's approval, and the call as the app
gets it. (What a view may attach to the chat is actors/views/modelcontext.py's.)"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from actors.catalog import Wire
from supervisor.model.viewsconfig import Approval

# What a view may ask besides tools/list and tools/call. Subscriptions are left out: a view's
# requests are one-shot HTTP, with no stream for the updates to come back on.
PASSED_ON = frozenset({"resources/read", "resources/list", "resources/templates/list"})
MODEL_CONTEXT = "ui/update-model-context"  # answered by the hub itself, never passed on
ASKED = frozenset({*PASSED_ON, "tools/list", "tools/call", MODEL_CONTEXT})

Decision = Literal["once", "while-open", "deny"]
DECISIONS: tuple[Decision, ...] = ("once", "while-open", "deny")


def is_visible_to_app(tool: Mapping[str, Any]) -> bool:
    """A tool a view may call: its `_meta.ui.visibility` includes "app"; absent means both."""
    ui = (tool.get("_meta") or {}).get("ui") or {}
    visibility = ui.get("visibility") if isinstance(ui, Mapping) else None
    return not isinstance(visibility, list) or "app" in visibility


def is_read_only(tool: Mapping[str, Any]) -> bool:
    annotations = tool.get("annotations") or {}
    return isinstance(annotations, Mapping) and annotations.get("readOnlyHint") is True


def needs_approval(approval: Approval, tool: Mapping[str, Any]) -> bool:
    """Whether a view's call of `tool` waits for the person: under "writes" (the default) a
    tool is a write unless its annotations say `readOnlyHint: true`."""
    if approval == "never":
        return False
    if approval == "always":
        return True
    return not is_read_only(tool)


def with_session(chat_session: str | None, params: Mapping[str, Any]) -> Wire:
    """The call as the app gets it: with the id of the chat session that opened the view as
    `_meta.sessionId`, the same the agent's calls for that session carry."""
    call: Wire = {"name": params.get("name"), "arguments": params.get("arguments") or {}}
    meta = dict(params.get("_meta") or {}) if isinstance(params.get("_meta"), Mapping) else {}
    meta.pop("sessionId", None)  # a view does not choose its session
    if chat_session:
        meta["sessionId"] = chat_session
    if meta:
        call["_meta"] = meta
    return call
