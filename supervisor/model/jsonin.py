"""JSON that comes from outside (a request body, tool arguments typed by a person or a model):
strict UTF-8, a nesting limit, and only what JSON itself can say, with errors a person
understands.

Python's json module takes more than JSON: `NaN`, `Infinity` and `-Infinity`, a number too large
for a float (`1e400` becomes Infinity), and a `\\u` escape that is half of a surrogate pair
(a string with no UTF-8 form). None of them can be sent on as JSON (what we send out would not
parse, or could not be encoded), so each is refused here, naming the value. An integer of more
digits than Python converts (4300 by default) is refused too: json raises a bare ValueError for
it, which is not a parse error a client can read.

One nesting limit holds everywhere a JSON value enters: every route's request body and every
tool call's arguments. It is far below what any app's parser accepts (pydantic's reads about
200 levels, Python's json module about 1000 before its stack runs out), so nothing that passes
here is refused by the app without an answer, and nothing can exhaust our own stack.
"""

from __future__ import annotations

import json
import math
import re
import sys
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
        value = parse(text)
    except JSONInputError as error:
        raise JSONInputError(f"the body is not valid JSON: {error}") from None
    except RecursionError:
        raise JSONInputError(too_deep()) from None
    if depth(value) > MAX_DEPTH:
        raise JSONInputError(too_deep())
    return value


def parse(text: str) -> Any:
    """The JSON value of `text`, or `JSONInputError` whose message is why not, without a
    subject ("Expecting value at line 1 column 7", "NaN is not a JSON number ..."), for the
    caller to say what was not valid. Nesting is the caller's to check (a RecursionError
    passes through)."""
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except _NotJSON as error:
        raise JSONInputError(str(error)) from None
    except json.JSONDecodeError as error:
        raise JSONInputError(f"{error.msg} at line {error.lineno} column {error.colno}") from None
    except ValueError as error:
        # json raises a bare ValueError (not a JSONDecodeError) when an integer has more digits
        # than int() converts, with a message that tells a client to change our interpreter.
        if "integer string conversion" not in str(error):
            raise
        raise JSONInputError(
            f"a number has more than {sys.get_int_max_str_digits()} digits,"
            " more than this server reads: send it as a string"
        ) from None
    if _SURROGATE_ESCAPE.search(text) and (lone := _lone_surrogate(value)) is not None:
        raise JSONInputError(
            f"the string {_shown(lone)} has a \\u escape that is half of a surrogate pair,"
            " which is no character: send the character, or both halves of the pair"
        )
    return value


class _NotJSON(Exception):
    """Raised inside json.loads by a hook, for `parse` to turn into a `JSONInputError`."""


def _no_constant(name: str) -> Any:
    raise _NotJSON(f"{name} is not a JSON number (JSON has no NaN or Infinity)")


def _finite_float(literal: str) -> float:
    value = float(literal)
    if math.isinf(value):
        shown = literal if len(literal) <= 24 else f"{literal[:12]}… ({len(literal)} characters)"
        raise _NotJSON(f"the number {shown} is too large for a JSON number (it would be Infinity)")
    return value


# A `\uD800`..`\uDFFF` escape: only where one occurs can a string hold a lone surrogate (the
# text itself is UTF-8, which has none).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _lone_surrogate(value: Any) -> str | None:
    """The first string (key or value) in `value` that holds a lone surrogate."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            strings: Any = (item,)
        elif isinstance(item, dict):
            strings = item.keys()
            stack.extend(item.values())
        elif isinstance(item, list):
            strings = ()
            stack.extend(item)
        else:
            continue
        for string in strings:
            try:
                string.encode("utf-8")
            except UnicodeEncodeError:
                return string
    return None


def _shown(string: str) -> str:
    """A string as JSON would escape it, shortened."""
    text = json.dumps(string)
    return text if len(text) <= 40 else text[:36] + '…"'


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
