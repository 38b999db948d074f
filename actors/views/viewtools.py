"""The tools a view registers (the App SDK's `registerTool`), as the view hub keeps them: while a
view a chat opened is open, that chat's model is offered them under `view.<appId>.<name>`; a
call of the model goes to the page that shows the view (which waits for it with
`NextViewToolCall`), and the view's answer comes back to the turn, or a refusal after
`CALL_TIMEOUT_S`. They go with the view: when its lease ends, its tools are no longer offered
and a call still waiting is answered with why. They never reach another chat session: they
are offered to, and callable by, the session that opened the view only (a view opened from the
app list has none), and never for a view restored from a saved chat.

Held by the hub's state; changed only by its mailbox and its tasks."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable, Mapping
from typing import Any

import attrs
import trio

from actors.catalog import Wire
from actors.runtime import Reply
from actors.tooltable import MCP_NAME, schema_problem
from actors.views.leases import Lease
from actors.views.messages import ViewTool, ViewToolCall
from actors.views.refusals import BadParams, Limited, NotAllowed, NotRun, UnknownCall, UnknownView

PREFIX = "view."
TOOLS_MAX = 20  # tools one view may register
DESCRIPTION_MAX = 1_000  # characters of a tool's description kept
SCHEMA_MAX = 16 * 1024  # bytes of a tool's input schema as JSON
RESULT_MAX = 256 * 1024  # bytes of a view's answer as JSON
CALLS_WAITING = 8  # calls of the model queued for one view's page
CALL_TIMEOUT_S = 30.0  # the view answers within this, or the model is told it did not


def public_name(app_id: str, name: str) -> str:
    return f"{PREFIX}{app_id}.{name}"


def view_tools(lease: Lease, raw: Any) -> tuple[ViewTool, ...]:
    """The tools of a view's `tools/list` answer, checked (else `BadParams`, naming the
    tool): a name MCP allows, an object input schema of bounded size, a description cut."""
    if not isinstance(raw, list) or len(raw) > TOOLS_MAX:
        raise BadParams(f"'tools' must be a list of at most {TOOLS_MAX} tools")
    tools: dict[str, ViewTool] = {}
    for tool in raw:
        name = tool.get("name") if isinstance(tool, Mapping) else None
        if not isinstance(name, str) or not MCP_NAME.fullmatch(name):
            raise BadParams(
                f"a view's tool needs a name of letters, digits, '_', '-', '.': {name!r}"
            )
        schema = tool.get("inputSchema") or {"type": "object"}
        problem = schema_problem(schema)
        if problem is None and len(json.dumps(schema)) > SCHEMA_MAX:
            problem = f"its input schema is over {SCHEMA_MAX} bytes"
        if problem is not None:
            raise BadParams(f"the view's tool '{name}': {problem}")
        description = tool.get("description") or tool.get("title") or ""
        description = str(description)[:DESCRIPTION_MAX]
        public = public_name(lease.app_id, name)
        said = f"[A tool of the open view of app '{lease.app_id}'; gone once it closes.]"
        tools[name] = ViewTool(
            lease.id, lease.app_id, name, public, f"{said} {description}".strip(), dict(schema)
        )
    return tuple(tools.values())


@attrs.define
class _Open:
    """One view's registered tools and the calls of the model on their way to it."""

    lease: Lease
    tools: tuple[ViewTool, ...] = ()
    waiting: dict[str, Reply[Wire]] = attrs.Factory(dict)
    queue: tuple[trio.MemorySendChannel[ViewToolCall], trio.MemoryReceiveChannel[ViewToolCall]] = (
        attrs.Factory(lambda: trio.open_memory_channel[ViewToolCall](CALLS_WAITING))
    )


class ViewTools:
    def __init__(self) -> None:
        self._views: dict[str, _Open] = {}

    def set(self, lease: Lease, raw: Any) -> int:
        """The view's tools replace the ones it had: how many its chat is offered."""
        tools = view_tools(lease, raw)
        self._views.setdefault(lease.id, _Open(lease)).tools = tools
        return len(tools) if lease.chat_session and not lease.restored else 0

    def of_session(self, leases: Iterable[Lease]) -> tuple[ViewTool, ...]:
        """The tools of a chat session's open views; of two views offering the same name, the
        one opened last."""
        offered: dict[str, ViewTool] = {}
        for lease in sorted(leases, key=lambda lease: lease.created):
            view = self._views.get(lease.id)
            if view is None or lease.restored or not lease.chat_session:
                continue
            offered.update((tool.public_name, tool) for tool in view.tools)
        return tuple(offered.values())

    def find(self, leases: Iterable[Lease], name: str) -> ViewTool:
        for tool in self.of_session(leases):
            if tool.public_name == name:
                return tool
        raise NotAllowed(
            f"no view this chat has open offers a tool '{name}' (a view's tools are gone once"
            " it closes)"
        )

    async def call(self, tool: ViewTool, arguments: Wire) -> Wire:
        """The call handed to the view's page, and its answer; a refusal when the view is
        gone, has too many calls waiting, or does not answer within `CALL_TIMEOUT_S`."""
        view = self._views.get(tool.view_id)
        if view is None:
            raise UnknownView(f"the view that offered '{tool.public_name}' has closed")
        call = ViewToolCall(secrets.token_urlsafe(12), tool.name, arguments)
        answer: Reply[Wire] = Reply()
        try:
            view.queue[0].send_nowait(call)
        except trio.WouldBlock:
            raise Limited(
                f"the view of app '{tool.app_id}' already has {CALLS_WAITING} calls of its"
                " tools waiting: wait for them",
                {"limit": CALLS_WAITING, "kind": "view-tool-calls"},
            ) from None
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise UnknownView(f"the view that offered '{tool.public_name}' has closed") from None
        view.waiting[call.call_id] = answer
        try:
            with trio.move_on_after(CALL_TIMEOUT_S):
                return await answer.wait()
        finally:
            view.waiting.pop(call.call_id, None)
        raise NotRun(
            f"the view of app '{tool.app_id}' did not answer the call of '{tool.name}' within"
            f" {CALL_TIMEOUT_S:g} s (is its page still open?)"
        )

    async def next_call(self, lease: Lease, wait_s: float) -> ViewToolCall | None:
        """The next call of the model to this view's tools, or None after `wait_s`."""
        view = self._views.setdefault(lease.id, _Open(lease))
        with trio.move_on_after(wait_s):
            try:
                return await view.queue[1].receive()
            except (trio.EndOfChannel, trio.ClosedResourceError):
                raise UnknownView("the view has closed") from None
        return None

    def answer(self, view_id: str, call_id: str, result: Any) -> None:
        view = self._views.get(view_id)
        answer = view.waiting.get(call_id) if view is not None else None
        if answer is None:
            raise UnknownCall(f"no call of this view's tools waits under the id '{call_id}'")
        if not isinstance(result, Mapping) or not isinstance(result.get("content", []), list):
            answer.fail(BadParams("the view answered with something that is not a tool result"))
        elif len(json.dumps(result)) > RESULT_MAX:
            answer.fail(BadParams(f"the view's answer is over {RESULT_MAX} bytes"))
        else:
            answer.send(dict(result))

    def end(self, view_id: str, why: str) -> None:
        """The view's lease ended: its tools are gone, and a call waiting is told why."""
        view = self._views.pop(view_id, None)
        if view is None:
            return
        for answer in view.waiting.values():
            answer.fail(UnknownView(f"the view closed before it answered ({why})"))
        view.queue[0].close()
        view.queue[1].close()
