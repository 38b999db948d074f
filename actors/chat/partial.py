"""A tool call's arguments while the model is still writing them: the JSON so far, read as far
as it goes, for the view of a tool with a UI (`tool-input-partial`). Pure. The parsing is
pydantic-core's partial JSON mode (the SDK's own JSON library), with a string cut short kept as
far as it was written."""

from __future__ import annotations

from typing import Any

import pydantic_core

# Arguments longer than this are not re-read at every fragment (each read is of the whole
# text); the view gets them whole with `tool-input` once the call starts.
PARTIAL_MAX = 64 * 1024


def partial_arguments(text: str) -> dict[str, Any] | None:
    """The object the arguments so far describe, or None when they do not yet describe one
    (nothing yet, not an object, not JSON, or too long to re-read)."""
    if not text.strip() or len(text) > PARTIAL_MAX:
        return None
    try:
        value = pydantic_core.from_json(text, allow_partial="trailing-strings")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
