"""Strict cattrs structuring shared by config.toml and the manifests, with errors for people.

cattrs' defaults are lenient in ways that hide typos: `int("15")` turns a string into a number,
`list("abc")` turns a string into three letters, `True` passes as the integer 1. The hooks here
accept only the JSON/TOML type that was meant, check ranges declared on the model with
`Annotated[int, Between(1, 600)]`, and `problems()` flattens cattrs' exception groups into
`(key path, sentence)` pairs such as `(("server", "port"), "must be an integer from 1 to 65535,
got 70000")`.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

import attrs
import cattrs
from cattrs.cols import (
    homogenous_tuple_structure_factory,
    is_mapping,
    is_sequence,
    mapping_structure_factory,
)
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError, IterableValidationError

from supervisor.model.errors import McpappsError

KeyPath = tuple[str | int, ...]


@attrs.frozen
class Between:
    """Inclusive bounds for a number, declared as `Annotated[int, Between(1, 600)]`."""

    low: float | None = None
    high: float | None = None
    low_exclusive: bool = False

    def admits(self, value: float) -> bool:
        if self.low is not None:
            if self.low_exclusive and not value > self.low:
                return False
            if not self.low_exclusive and value < self.low:
                return False
        return self.high is None or value <= self.high

    def describe(self) -> str:
        if self.low is not None and self.high is not None:
            return f"from {_number(self.low)} to {_number(self.high)}"
        if self.low is not None:
            return (
                f"greater than {_number(self.low)}"
                if self.low_exclusive
                else (f"of at least {_number(self.low)}")
            )
        return f"of at most {_number(self.high)}" if self.high is not None else ""


class Invalid(McpappsError, ValueError):
    """A value of the wrong type or out of range; `expected` completes "must be ..."."""

    def __init__(self, expected: str, value: Any) -> None:
        super().__init__(f"must be {expected}, got {show(value)}")
        self.expected = expected
        self.value = value


def show(value: Any, limit: int = 60) -> str:
    """A value as the user wrote it (JSON spelling), shortened to stay on one line."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except ValueError:  # NaN and friends
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _number(n: float) -> str:
    return str(int(n)) if float(n).is_integer() else str(n)


def _structure_str(value: Any, _: type) -> str:
    if not isinstance(value, str):
        raise Invalid("a string", value)
    if "\x00" in value:
        # No path, command, argument or environment value can hold one: the OS cuts the
        # string there or refuses it, far from this file.
        raise Invalid("a string without a NUL character", value)
    return value


def _structure_bool(value: Any, _: type) -> bool:
    if not isinstance(value, bool):
        raise Invalid("true or false", value)
    return value


def _structure_int(value: Any, _: type) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise Invalid("an integer", value)
    return value


def _structure_float(value: Any, _: type) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise Invalid("a number", value)
    return float(value)


def _structure_path(value: Any, _: type) -> Path:
    if not isinstance(value, str) or not value:
        raise Invalid("a path", value)
    if "\x00" in value:
        raise Invalid("a path without a NUL character", value)
    if value.startswith("~"):
        raise Invalid(
            "an absolute path or one relative to the config file ('~' is not expanded)", value
        )
    return Path(value)


def _structure_any(value: Any, _: type) -> Any:
    return value


def _is_ranged(t: Any) -> bool:
    return get_origin(t) is Annotated and any(isinstance(m, Between) for m in t.__metadata__)


def _is_literal(t: Any) -> bool:
    return get_origin(t) is Literal


def _is_attrs_class(t: Any) -> bool:
    return isinstance(t, type) and attrs.has(t)


def make_converter() -> cattrs.Converter:
    """A converter that structures only exact JSON/TOML types and reports every problem at once."""
    converter = cattrs.Converter(detailed_validation=True, forbid_extra_keys=True)
    converter.register_structure_hook(str, _structure_str)
    converter.register_structure_hook(bool, _structure_bool)
    converter.register_structure_hook(int, _structure_int)
    converter.register_structure_hook(float, _structure_float)
    converter.register_structure_hook(Path, _structure_path)
    converter.register_structure_hook(Any, _structure_any)

    def ranged(t: Any) -> Callable[[Any, Any], Any]:
        base = get_args(t)[0]
        bounds = next(m for m in t.__metadata__ if isinstance(m, Between))
        inner = converter.get_structure_hook(base)
        kind = "an integer" if base is int else "a number"

        expected = f"{kind} {bounds.describe()}"

        def structure(value: Any, _: Any) -> Any:
            try:
                number = inner(value, base)
            except Invalid:
                raise Invalid(expected, value) from None
            if not bounds.admits(number):
                raise Invalid(expected, value)
            return number

        return structure

    def literal(t: Any) -> Callable[[Any, Any], Any]:
        choices = get_args(t)
        expected = "one of " + ", ".join(f"'{c}'" for c in choices)

        def structure(value: Any, _: Any) -> Any:
            if not any(value == c and type(value) is type(c) for c in choices):
                raise Invalid(expected, value)
            return value

        return structure

    # Shape checks run before cattrs' own collection hooks, which would happily iterate a string.
    def shaped(build: Callable[[Any], Any], shape: type, expected: str) -> Callable[[Any], Any]:
        def factory(t: Any) -> Callable[[Any, Any], Any]:
            inner = build(t)

            def structure(value: Any, t2: Any) -> Any:
                if not isinstance(value, shape):
                    raise Invalid(expected, value)
                return inner(value, t2)

            return structure

        return factory

    converter.register_structure_hook_factory(_is_ranged, ranged)
    converter.register_structure_hook_factory(_is_literal, literal)
    converter.register_structure_hook_factory(
        is_sequence,
        shaped(lambda t: homogenous_tuple_structure_factory(t, converter), list, "a list"),
    )
    converter.register_structure_hook_factory(
        is_mapping, shaped(lambda t: mapping_structure_factory(t, converter), dict, "a table")
    )
    converter.register_structure_hook_factory(
        _is_attrs_class,
        shaped(lambda t: cattrs.gen.make_dict_structure_fn(t, converter), dict, "a table"),
    )
    return converter


def problems(error: BaseException, path: KeyPath = ()) -> Iterator[tuple[KeyPath, str]]:
    """Every leaf problem inside a cattrs error, each with the key path that leads to it."""
    if isinstance(error, ClassValidationError | IterableValidationError):
        with_notes, without_notes = error.group_exceptions()
        for inner, note in with_notes:
            step = note.name if hasattr(note, "name") else note.index
            yield from problems(inner, (*path, step))
        for inner in without_notes:
            yield from problems(inner, path)
    elif isinstance(error, ForbiddenExtraKeysError):
        known = [a.name for a in attrs.fields(error.cl)] if attrs.has(error.cl) else []
        for key in sorted(error.extra_fields):
            others = [
                name for name in known if name != key
            ]  # e.g. `path`: a model field, not a key
            yield (*path, key), "is not a known key" + did_you_mean(key, others)
    elif isinstance(error, Invalid):
        yield path, str(error)
    else:  # a hook we did not write raised: still say where
        yield path, f"is not valid: {error}"


def did_you_mean(word: str, choices: list[str]) -> str:
    """` (did you mean 'port'?)` when a close match exists, else an empty string."""
    by_lower = {c.lower(): c for c in choices}
    close = difflib.get_close_matches(word.lower(), list(by_lower), n=1, cutoff=0.75)
    return f" (did you mean '{by_lower[close[0]]}'?)" if close else ""


def dotted(path: KeyPath, name: Callable[[str], str] = str) -> str:
    """`apps.entries.x.port`, `arguments[2]`, `headers."X Key"`: a key path as a person reads it.

    `name` spells the first step (the model's attribute) the way the file spells it.
    """
    text = ""
    for i, step in enumerate(path):
        if isinstance(step, int):
            text += f"[{step}]"
            continue
        key = name(step) if i == 0 else step
        bare = key.replace("-", "").replace("_", "").isalnum()
        text += ("." if text else "") + (key if bare else json.dumps(key))
    return text
