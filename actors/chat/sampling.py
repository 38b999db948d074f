"""An app's `sampling/createMessage` request as a chat-completions request, and the model's
answer as the app's `CreateMessageResult` (pure functions; the openai engine sends it).

What maps: the messages (text, and images as data URLs), the system prompt, `maxTokens`,
`stopSequences` and `temperature`. The model is always the one `[agent]` configures: the app's
`modelPreferences` are a hint that a host with one model can only note. `includeContext` asks
for context from other servers' conversations, which mcpapps never hands an app, and tools in a
sampling request are not offered to the model (the agent's tools are the person's, not the
app's).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from actors.apps.upstream import ServerRequestRefused
from actors.catalog import Wire

_STOP_REASONS = {"length": "maxTokens", "stop": "endTurn", "tool_calls": "endTurn"}


def sampling_body(params: Wire, model: str) -> dict[str, Any]:
    """The chat-completions request (streamed) for one sampling request."""
    messages: list[dict[str, Any]] = []
    system = params.get("systemPrompt")
    if isinstance(system, str) and system:
        messages.append({"role": "system", "content": system})
    for index, message in enumerate(params.get("messages") or ()):
        if not isinstance(message, Mapping) or message.get("role") not in ("user", "assistant"):
            raise ServerRequestRefused(f"messages[{index}] needs a role of user or assistant")
        messages.append({"role": message["role"], "content": _content(message.get("content"))})
    if not messages or messages[-1]["role"] == "system":
        raise ServerRequestRefused("the sampling request has no messages")
    body: dict[str, Any] = {"model": model, "stream": True, "messages": messages}
    if isinstance(params.get("maxTokens"), int):
        body["max_tokens"] = params["maxTokens"]
    if params.get("stopSequences"):
        body["stop"] = list(params["stopSequences"])
    if isinstance(params.get("temperature"), int | float):
        body["temperature"] = params["temperature"]
    return body


def sampling_result(text: str, model: str, finish_reason: str | None) -> Wire:
    return {
        "role": "assistant",
        "content": {"type": "text", "text": text},
        "model": model,
        "stopReason": _STOP_REASONS.get(finish_reason or "stop", "endTurn"),
    }


def _content(content: Any) -> str | list[dict[str, Any]]:
    blocks = content if isinstance(content, list) else [content]
    if len(blocks) == 1 and _is_text(blocks[0]):
        return blocks[0]["text"]
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if _is_text(block):
            parts.append({"type": "text", "text": block["text"]})
        elif isinstance(block, Mapping) and block.get("type") == "image":
            url = f"data:{block.get('mimeType', 'image/png')};base64,{block.get('data', '')}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
        else:
            kind = block.get("type") if isinstance(block, Mapping) else type(block).__name__
            raise ServerRequestRefused(
                f"the agent's model is sent text and images only, not {kind} content"
            )
    return parts


def _is_text(block: Any) -> bool:
    return (
        isinstance(block, Mapping)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    )
