"""What every agent engine shares: the `Engine` interface and how a tool is called on the
agent's behalf. A turn's values (its events, `UserTurn`, `Message`) are in actors/chat/turns.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import attrs

from actors.arguments import ArgumentError, parse_arguments
from actors.chat.bridge import ToolBridge, format_result
from actors.chat.turns import Emit, Message, UserTurn
from actors.messages import AppError
from supervisor.model.errors import ActorUnavailable


class Engine(Protocol):
    name: str  # as in config.toml's agent.engine

    async def run_turn(
        self, history: Sequence[Message], turn: UserTurn, emit: Emit
    ) -> list[Message]:
        """Answer `turn`, given the conversation before it. Emit what happens as it happens,
        and return the messages the turn adds after `turn.message()` (assistant replies, tool
        results), also when it ends in an error: what was said and done is kept. A failure is a
        `TurnFailed` event, never an exception."""
        ...


@attrs.frozen
class ToolOutcome:
    public_name: str
    text: str  # what the model reads
    is_error: bool
    view: Mapping[str, Any] | None = None  # see ToolFinished.view


async def call_tool(bridge: ToolBridge, name: str, arguments: Any) -> ToolOutcome:
    """Call a tool by public name or alias; every failure is an `Error:` text, never raised."""
    public_name = name
    try:
        parsed = parse_arguments(arguments)
    except ArgumentError as error:
        return ToolOutcome(name, f"Error: invalid arguments for tool '{name}': {error}", True)
    try:
        tool, result = await bridge.call_raw(name, parsed)
    except AppError as error:
        return ToolOutcome(public_name, f"Error: {error.message}", True)
    except ActorUnavailable as error:
        return ToolOutcome(public_name, f"Error: tool '{name}' could not be called: {error}", True)
    text = format_result(
        result,
        app_id=tool.app_id,
        tool=tool.public_name,
        has_ui=tool.ui_resource_uri is not None,
    )
    view = None
    if tool.ui_resource_uri is not None:
        view = {
            "appId": tool.app_id,
            "tool": tool.name,
            "resourceUri": tool.ui_resource_uri,
            "result": result,
        }
    return ToolOutcome(tool.public_name, text, bool(result.get("isError")), view)
