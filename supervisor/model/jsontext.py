"""Reading manifest text: JSON5 (JSON plus comments and trailing commas) through pyjson5.

pyjson5 is compiled and as fast as the json module, but it places an error only "near" a
character offset, in its own vocabulary (`Expected b'colon' near 6, found U+0031`). `describe`
turns that into a sentence with line and column (`expected ':' but found '1' at line 1,
column 6`); an error it does not recognise is passed on as pyjson5 words it, still with its
line and column.
"""

from __future__ import annotations

import re
from typing import Any

import pyjson5

from supervisor.model.errors import McpappsError

MAX_DEPTH = 32  # nesting levels; deeper input is refused instead of exhausting the stack


class JSONTextError(McpappsError, ValueError):
    """The text is not JSON5; the message says what and where, for a person."""


def parse(text: str) -> Any:
    try:
        return pyjson5.decode(text, maxdepth=MAX_DEPTH)
    except pyjson5.Json5DecoderException as error:
        raise JSONTextError(describe(str(error.args[0]), text)) from None


_NEAR = re.compile(r" (?:starting )?near (\d+)")
_WORDS = {
    "colon": "':'",
    "comma": "','",
    "hexadecimal character": "a hexadecimal digit",
    "IdentifierStart": "a key",
    "IdentifierPart": "a key",
    "JSON5Value": "a value",
}
_UNCLOSED = {
    "object": "the object that starts with '{'",
    "array": "the list that starts with '['",
    "string": "the string",
    "comment": "the comment",
    "NumericLiteral": "the number",
    "literal": "the value",
}


def describe(message: str, text: str) -> str:
    """pyjson5's error message as a sentence with a line and column in `text`."""
    near = _NEAR.search(message)
    plain = _NEAR.sub("", message)
    offset = _offset(plain, int(near.group(1)), text) if near else 0
    where = _line_column(text, offset)

    if unclosed := re.fullmatch(r"Unclosed b'(\w+)'", plain):
        kind = unclosed.group(1)
        what = _UNCLOSED.get(kind, kind)
        if kind in ("NumericLiteral", "literal"):
            return f"{what} at {where} is incomplete"
        hint = (
            " (write a line break inside a string as \\n)"
            if kind == "string" and _broken_string(text, offset)
            else ""
        )
        return f"{what} at {where} is never closed{hint}"
    if plain.startswith("No JSON data found"):
        return "there is no JSON value, only blanks or comments"
    if plain == "Maximum nesting level exceeded":
        return f"it nests more than {MAX_DEPTH} levels deep at {where}"
    if extra := re.fullmatch(r"Extra data (U\+[0-9a-fA-F]+)", plain):
        return f"unexpected {_words(extra.group(1))} after the end of the JSON value at {where}"
    if stray := re.fullmatch(r"Stray (.+)", plain):
        return f"stray {_words(stray.group(1))} at {where}"
    if found := re.fullmatch(r"Expected (.+), found (U\+[0-9a-fA-F]+)", plain):
        expected, got = _words(found.group(1)), _words(found.group(2))
        return f"expected {expected} but found {got} at {where}"
    return f"{plain} at {where}" if near else plain


def _words(phrase: str) -> str:
    phrase = re.sub(r"b'([^']+)'", lambda m: _WORDS.get(m.group(1), m.group(1)), phrase)
    return re.sub(r"U\+([0-9a-fA-F]+)", lambda m: repr(chr(int(m.group(1), 16))), phrase)


def _offset(plain: str, near: int, text: str) -> int:
    """The index of the character an error is about. pyjson5's "near" is one past it in most
    messages and at it for extra data; where the message names the character found, or for a
    comment (whose "near" is inside its `/*`), look for it to be exact."""
    offset = near if plain.startswith("Extra data") else near - 1
    offset = min(max(offset, 0), len(text))
    if found := re.search(r"(?:found|Extra data) U\+([0-9a-fA-F]+)$", plain):
        at = text.find(chr(int(found.group(1), 16)), offset, offset + 4)
        return at if at != -1 else offset
    if plain == "Unclosed b'comment'":
        at = text.rfind("/*", 0, near + 1)
        return at if at != -1 else offset
    return offset


def _broken_string(text: str, start: int) -> bool:
    """Whether the string opened at `start` runs into a line break before its closing quote."""
    end = text.find("\n", start)
    return end != -1 and text[start : start + 1] not in text[start + 1 : end]


def _line_column(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return f"line {line}, column {column}"
