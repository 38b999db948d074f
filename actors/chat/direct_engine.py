"""The `direct` agent engine: no model, works offline. `/tools` lists what a model would
see, `/call <public-name> <json>` calls one tool, anything else gets a short help text. It exists
so that the whole chat path can be used, and tested, on a fresh machine."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from actors.arguments import ArgumentError, parse_arguments
from actors.chat.agent import call_tool
from actors.chat.bridge import ToolBridge
from actors.chat.turns import (
    Emit,
    Message,
    TextPiece,
    ToolFinished,
    ToolStarted,
    UserTurn,
    tool_message,
)
from supervisor.model import jsonout

HELP = (
    "This chat runs the direct engine, which has no model. It understands two commands:\n"
    "  /tools                         list the tools of the running apps\n"
    "  /call <tool> <json-arguments>  call one, e.g. /call grocery.get_stores {}\n"
    'Set [agent] engine = "openai" in config.toml to chat with a model.'
)


class DirectEngine:
    name = "direct"

    def __init__(self, bridge: ToolBridge) -> None:
        self._bridge = bridge

    async def run_turn(
        self, history: Sequence[Message], turn: UserTurn, emit: Emit
    ) -> list[Message]:
        text = turn.text.strip()
        command, _, rest = text.partition(" ")
        if command == "/call" and rest.strip():
            return await self._call(rest.strip(), emit)
        if command == "/tools" and not rest.strip():
            answer = await self._tools()
        elif not text and turn.app_events:
            count = len(turn.app_events)
            answer = f"Noted {count} thing{'s' if count != 1 else ''} you did in the app."
        elif not text and turn.model_context:
            apps = ", ".join(sorted({str(item.get("app")) for item in turn.model_context}))
            answer = f"Noted the context attached by {apps}."
        elif not text and turn.mentions:
            names = ", ".join(str(link.get("name")) for link in turn.mentions)
            answer = f"Noted what you mentioned: {names}."
        else:
            answer = HELP
        emit(TextPiece(answer))
        return [{"role": "assistant", "content": answer}]

    async def _tools(self) -> str:
        table = await self._bridge.tools()
        if not table.tools:
            return "No tools: no app is running."
        return "\n".join(
            f"{tool.public_name}: {tool.description}" if tool.description else tool.public_name
            for tool in table.tools
        )

    async def _call(self, command: str, emit: Emit) -> list[Message]:
        name, _, raw = command.partition(" ")
        try:
            shown = parse_arguments(raw)
        except ArgumentError:
            shown = {}  # the call reports the bad arguments as its result
        table = await self._bridge.tools()
        tool = table.find(name)
        public_name = tool.public_name if tool is not None else name
        call_id = f"call-{uuid.uuid4().hex[:12]}"
        emit(ToolStarted(call_id, public_name, shown))
        outcome = await call_tool(self._bridge, name, raw)
        emit(ToolFinished(call_id, outcome.text, outcome.is_error, outcome.view))
        request = {
            "id": call_id,
            "type": "function",
            "function": {"name": public_name, "arguments": jsonout.dumps(shown)},
        }
        return [
            {"role": "assistant", "content": None, "tool_calls": [request]},
            tool_message(call_id, outcome.text, outcome.is_error),
        ]
