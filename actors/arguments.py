"""Tool arguments as a JSON object (missing means `{}`, anything else that is not an
object is refused). Pure and light: the command line uses it without loading the actors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from supervisor.model import jsonin
from supervisor.model.errors import McpappsError


class ArgumentError(McpappsError, ValueError):
    pass


def parse_arguments(raw: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """Arguments as a JSON object: given as text (JSON) or already parsed; missing means {}."""
    if raw is None:
        return {}
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        try:
            raw = jsonin.parse(raw)
        except jsonin.JSONInputError as error:
            raise ArgumentError(f"not valid JSON: {error}") from None
        except RecursionError:
            raise ArgumentError(jsonin.too_deep("the arguments object")) from None
    if not isinstance(raw, Mapping):
        raise ArgumentError(f"arguments must be a JSON object, got {_json_kind(raw)}")
    if jsonin.depth(raw) > jsonin.MAX_DEPTH:
        raise ArgumentError(jsonin.too_deep("the arguments object"))
    return dict(raw)


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__
