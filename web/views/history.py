"""The views a chat opened, read back from its saved messages, so that the page can open them
again after a reload (pure)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def opened_views(messages: Any, table: Any) -> list[dict[str, Any]]:
    """The views a chat opened, from its saved tool calls: each a small descriptor (app, tool,
    resource URI, arguments, tool call id). No result is kept: a relaunched view runs its tool
    again."""
    found = []
    for message in messages:
        if not isinstance(message, Mapping) or message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            tool = table.find(function.get("name") or "")
            if tool is None or tool.ui_resource_uri is None:
                continue
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except ValueError:
                arguments = {}
            found.append(
                {
                    "appId": tool.app_id,
                    "tool": tool.name,
                    "publicName": tool.public_name,
                    "resourceUri": tool.ui_resource_uri,
                    "arguments": arguments if isinstance(arguments, dict) else {},
                    "toolCallId": call.get("id"),
                }
            )
    return found
