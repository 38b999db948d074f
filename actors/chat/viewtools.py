"""The tools a chat's open views registered, as its model sees them: added to the apps' tool
table under `view.<appId>.<name>` (a name that says they belong to that open view, never one an
app's tool already has), and called through the view hub, which hands the call to the page
showing the view and brings its answer back (actors/views/viewtools.py). Only the turn's own
session is ever asked about, so a view's tools never reach another chat."""

from __future__ import annotations

import attrs

from actors.catalog import Wire
from actors.runtime import ASK_TIMEOUT_S, AskTimeout, Mailbox, ask
from actors.tooltable import PublicTool, ToolTable, model_alias
from actors.views.messages import CallViewTool, ListViewTools, ViewMessage, ViewTool
from actors.views.refusals import ViewRefusal
from actors.views.viewtools import CALL_TIMEOUT_S, PREFIX


def is_view_tool(name: str) -> bool:
    return name.startswith(PREFIX)


def public_tool(tool: ViewTool) -> PublicTool:
    return PublicTool(
        tool.public_name,
        model_alias(tool.public_name),
        tool.app_id,
        tool.name,
        tool.description,
        tool.input_schema,
        None,
    )


def merged(table: ToolTable, tools: tuple[ViewTool, ...]) -> ToolTable:
    """The table with the view tools added, each whose public name and alias are free."""
    added = []
    for tool in map(public_tool, tools):
        if table.find(tool.public_name) is None and table.find(tool.alias) is None:
            added.append(tool)
    if not added:
        return table
    return attrs.evolve(
        table,
        tools=(*table.tools, *added),
        by_public={**table._by_public, **{t.public_name: t for t in added}},
        by_alias={**table._by_alias, **{t.alias: t for t in added}},
    )


async def with_view_tools(
    table: ToolTable, views: Mailbox[ViewMessage] | None, chat_session: str | None
) -> ToolTable:
    """The apps' table, and in a chat turn the tools of the session's open views (the apps'
    alone if the view hub does not answer in time)."""
    if views is None or not chat_session:
        return table
    try:
        tools: tuple[ViewTool, ...] = await ask(
            views, lambda r: ListViewTools(chat_session, r), ASK_TIMEOUT_S
        )
    except AskTimeout:
        return table
    return merged(table, tools)


async def call_view_tool(
    views: Mailbox[ViewMessage] | None,
    chat_session: str | None,
    public_name: str,
    arguments: Wire,
) -> tuple[PublicTool, Wire]:
    """The view's answer, or why there is none as an error result the model reads."""
    view_tool: ViewTool | None = None
    try:
        if views is None or not chat_session:
            raise ViewRefusal(f"no view of this chat offers a tool '{public_name}'")
        answer: tuple[ViewTool, Wire] = await ask(
            views,
            lambda r: CallViewTool(chat_session, public_name, arguments, r),
            CALL_TIMEOUT_S + ASK_TIMEOUT_S,
        )
        view_tool, result = answer
    except (ViewRefusal, AskTimeout) as error:
        result = {"content": [{"type": "text", "text": str(error)}], "isError": True}
    if view_tool is None:
        app_id = public_name.removeprefix(PREFIX).partition(".")[0]
        unknown = PublicTool(
            public_name, model_alias(public_name), app_id, public_name, "", {}, None
        )
        return unknown, result
    return public_tool(view_tool), result
