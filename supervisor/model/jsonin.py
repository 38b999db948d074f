"""JSON that comes from outside (a request body, tool arguments typed by a person or a model):
strict UTF-8 and a nesting limit, with errors a person understands.

One nesting limit holds everywhere a JSON value enters: every route's request body and every
tool call's arguments. It is far below what any app's parser accepts (pydantic's reads about
200 levels, Python's json module about 1000 before its stack runs out), so nothing that passes
here is refused by the app without an answer, and nothing can exhaust our own stack.
"""

from __future__ import annotations

import json
from typing import Any

from supervisor.model.errors import McpappsError

MAX_DEPTH = 64  # nesting levels of objects and arrays: `{}` is 1, `{"a": []}` is 2


class JSONInputError(McpappsError, ValueError):
    """The input is not JSON we take; the message says why, for a person."""


def decode_utf8(data: bytes) -> str:
    """The body as text: UTF-8 only (JSON over HTTP is UTF-8), without a byte-order mark."""
    if data.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        raise JSONInputError("the body starts with a byte-order mark: send UTF-8 without one")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise JSONInputError(
            f"the body is not UTF-8 text (byte {error.start} is {data[error.start]:#04x})"
        ) from None


def loads(text: str | bytes) -> Any:
    """Parse JSON that came from outside; `JSONInputError` says what is wrong with it."""
    if isinstance(text, bytes):
        text = decode_utf8(text)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise JSONInputError(
            f"the body is not valid JSON: {error.msg} at line {error.lineno} column {error.colno}"
        ) from None
    except RecursionError:
        raise JSONInputError(too_deep()) from None
    if depth(value) > MAX_DEPTH:
        raise JSONInputError(too_deep())
    return value


def too_deep(what: str = "the JSON") -> str:
    return f"{what} nests more than {MAX_DEPTH} levels of objects and arrays"


def depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How many levels of objects and arrays `value` nests (without recursion, so any depth
    can be measured); counting stops a level past `limit`."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > limit:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


def may_nest_too_deep(body: bytes) -> bool:
    """A cheap first look: a body with no more brackets than the limit cannot nest deeper, and
    needs no parse to know it."""
    return body.count(b"{") + body.count(b"[") > MAX_DEPTH
