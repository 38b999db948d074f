"""The tool bridge: what an agent calls and what it reads back.

`format_result` is pure (and `parse_arguments`, from `actors.arguments`); `ToolBridge` asks the
registry, which routes the call to the app actor that owns the tool. Everything the agent reads
is text: a failure is text starting with `Error:` that names the app and the cause, never an
exception.
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Mapping
from typing import Any

import trio

from actors.asking import answer_input_required, current_caller
from actors.catalog import Wire
from actors.chat.viewtools import call_view_tool, is_view_tool, with_view_tools
from actors.messages import CallPublicTool, GetToolTable, RegistryMessage
from actors.runtime import Abandonment, AskTimeout, Mailbox, ask
from actors.tooltable import PublicTool, ToolTable
from actors.views.messages import ViewMessage
from supervisor.model import jsonout


def _compact(value: Any) -> str:
    return jsonout.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _block_text(block: Any) -> str:
    if isinstance(block, Mapping):
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            return block["text"]
        resource = block.get("resource")
        if (
            block.get("type") == "resource"
            and isinstance(resource, Mapping)
            and isinstance(resource.get("text"), str)
        ):
            return resource["text"]
    return _compact(block)


def format_result(result: Wire, *, app_id: str, tool: str, has_ui: bool) -> str:
    """A `CallToolResult` as the model reads it: text as text, other blocks as compact JSON,
    `structuredContent` appended as JSON unless the tool has a UI (the browser gets that), parts
    joined by a blank line. An `isError` result becomes an `Error:` text."""
    parts = [_block_text(block) for block in result.get("content") or ()]
    structured = result.get("structuredContent")
    if structured is not None and not has_ui:
        parts.append(_compact(structured))
    text = "\n\n".join(part for part in parts if part)
    if result.get("isError"):
        return f"Error: tool '{tool}' of app '{app_id}' failed: {text or 'no details given'}"
    return text


# The chat session whose turn is running in this task: every tool call the agent makes for it
# carries it as `_meta.sessionId`, as the calls of the views that session opened do, so an app
# can key its state by session. A context variable, so that no engine has to pass it along.
CHAT_SESSION: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "chat_session", default=None
)


class ToolBridge:
    """Calls tools by public name through the registry, and lists what the model may see:
    the apps' tools, and in a chat turn the tools its open views registered (`views`, the
    view hub, set once it runs: actors/chat/viewtools.py)."""

    def __init__(self, registry: Mailbox[RegistryMessage], *, timeout: float = math.inf) -> None:
        self._registry = registry
        self._timeout = timeout
        self.views: Mailbox[ViewMessage] | None = None

    async def tools(self) -> ToolTable:
        table: ToolTable = await ask(self._registry, GetToolTable, self._timeout)
        return await with_view_tools(table, self.views, CHAT_SESSION.get())

    async def call_raw(
        self, public_name: str, arguments: dict[str, Any]
    ) -> tuple[PublicTool, Wire]:
        """The raw result, or an `AppError`. A caller that gives up (cancelled, or out of
        time) cancels the call at the app, which then frees its call slot."""
        if is_view_tool(public_name):
            return await call_view_tool(self.views, CHAT_SESSION.get(), public_name, arguments)
        caller = current_caller()  # in a chat turn: the app's questions go to its person
        tool, result = await self._send(public_name, arguments, caller)
        if caller is not None and result.get("resultType") == "input_required":
            result = await answer_input_required(
                caller,
                tool,
                result,
                lambda resumed: self._send(public_name, arguments, caller, resumed),
            )
        return tool, result

    async def _send(
        self, public_name: str, arguments: dict[str, Any], caller: Any, resumed: Wire | None = None
    ) -> tuple[PublicTool, Wire]:
        abandoned = Abandonment()
        session_id = CHAT_SESSION.get()
        meta = {"sessionId": session_id} if session_id else None
        try:
            return await ask(
                self._registry,
                lambda r: CallPublicTool(
                    public_name, arguments, r, meta, caller, abandoned, resumed=resumed
                ),
                self._timeout,
            )
        except (trio.Cancelled, AskTimeout):
            abandoned.set()
            raise
