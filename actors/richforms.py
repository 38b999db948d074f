"""Rich forms: the OpenAI form elicitation, as the host reads it (pure).

An app asks for a rich form two ways, by protocol era: a handshake-era app sends
`openai/elicitation/create` (the params of `elicitation/create`, with a schema that may use the
extension's keywords); a 2026-07-28 app answers `input_required` with an ordinary
`elicitation/create` whose own schema is empty and whose real one is in
`_meta["openai/elicitation"].requestedSchema`. Either way the question becomes one `Form`.

What a rich form may hold is what the extension's own protocol package defines
(`openai_mcp_form_protocol.FormSchema`, shipped with the `openai-mcp-extensions` SDK): pattern,
option descriptions, thumbnails, suggested values, resource selection. A form that holds
anything else, an input type we do not know above all, is `FormUnsupported`: it is answered so,
never shown in part (a form with a field left out would send an answer the person did not
give). A thumbnail must be an https: address or a `data:image/…;base64` one; anything else is a
form the app was not allowed to send, and is refused the same way.

An accepted answer is checked against the schema by `actors/asking.check_answer` (jsonschema:
pattern, choices, lengths, items); `selection_problems` adds what jsonschema cannot know: a
resource field's values must be among the options the app supplied (the page offers no
uploads, so nothing else can be chosen).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import attrs
import mcp_types as types
from pydantic import ValidationError

from actors.apps.upstream import FORMS_EXTENSION, FORMS_METHOD, ServerRequestRefused
from actors.catalog import Wire

EXTENSION = FORMS_EXTENSION
METHOD = FORMS_METHOD  # the handshake era's request for a rich form
INPUT = "x-openai-input"
INPUT_TYPES = ("resource", "file")  # "file" is the deprecated spelling of "resource"
_DATA_IMAGE = re.compile(r"data:image/[a-zA-Z0-9.+-]+;base64,[a-zA-Z0-9+/]+={0,2}")


class FormUnsupported(ServerRequestRefused):
    """A rich form the host cannot show whole (or that breaks the extension's rules); the
    text says which field and why. The app gets it as the answer (a JSON-RPC error, invalid
    params, to a handshake-era request), and nothing is shown."""

    rpc_code = types.INVALID_PARAMS


@attrs.frozen
class Form:
    """A question as the person gets it: its text, and its schema (a form) or its URL."""

    message: str
    schema: Wire | None
    url: str | None = None
    rich: bool = False


def is_rich(method: str, params: Mapping[str, Any]) -> bool:
    """Whether a question asks with a rich form."""
    return method == METHOD or _meta_schema(params) is not None


def form_of(method: str, params: Mapping[str, Any]) -> Form:
    """The question an app's `elicitation/create` or `openai/elicitation/create` asks, or
    `FormUnsupported` for a rich form that cannot be shown whole."""
    message = str(params.get("message", ""))
    if method == METHOD:
        if params.get("mode", "form") != "form":
            raise FormUnsupported(f"{METHOD} asks only with forms, not {params.get('mode')!r}")
        return _rich(message, params.get("requestedSchema"))
    if params.get("mode") == "url":
        return Form(message, None, url=str(params.get("url", "")))
    meta = params.get("_meta")
    if isinstance(meta, Mapping) and EXTENSION in meta:
        return _rich(message, _meta_schema(params))
    return Form(message, params.get("requestedSchema") or {})


def _meta_schema(params: Mapping[str, Any]) -> Any:
    meta = params.get("_meta")
    extension = meta.get(EXTENSION) if isinstance(meta, Mapping) else None
    return extension.get("requestedSchema") if isinstance(extension, Mapping) else None


def _rich(message: str, schema: Any) -> Form:
    if not isinstance(schema, Mapping):
        raise FormUnsupported("the rich form has no requestedSchema object")
    why = unsupported(schema)
    if why is not None:
        raise FormUnsupported(f"this host cannot show the form: {why}")
    return Form(message, dict(schema), rich=True)


def unsupported(schema: Mapping[str, Any]) -> str | None:
    """Why a rich form's schema cannot be shown whole, or None when it can."""
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for name, field in properties.items():
            if not isinstance(field, Mapping):
                continue
            for holder in (field, field.get("items")):
                given = holder.get(INPUT) if isinstance(holder, Mapping) else None
                if isinstance(given, Mapping) and given.get("type") not in INPUT_TYPES:
                    return (
                        f"field '{name}' asks for input type {given.get('type')!r}, which is not"
                        f" supported (only {' and '.join(map(repr, INPUT_TYPES))})"
                    )
            for where, src in _thumbnails(field):
                if (why := thumbnail_problem(src)) is not None:
                    return f"field '{name}': the thumbnail of {where} {why}"
    # Imported at the first rich form, not at start-up: the package loads email-validator and
    # its DNS resolver (about 0.2 s), which a supervisor whose apps never ask does not need.
    from openai_mcp_form_protocol import FormField, FormSchema

    try:
        FormSchema[FormField].model_validate(dict(schema))
    except ValidationError as error:
        return _worded(error)
    return None


def thumbnail_problem(src: Any) -> str | None:
    """Why a thumbnail's address is not shown (None when it is): only https: and base64
    `data:image/` addresses are, as the extension requires; http:, javascript: and the rest
    never reach the page."""
    if not isinstance(src, str):
        return "has no src"
    url = urlsplit(src)
    if (url.scheme == "https" and url.netloc) or _DATA_IMAGE.fullmatch(src):
        return None
    scheme = f"{url.scheme}:" if url.scheme else "a relative address"
    return f"is at {scheme} (only https: and data:image addresses are shown)"


def _thumbnails(field: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """Every thumbnail a field shows: its options' and suggestions' (`x-openai-thumbnail`,
    and the deprecated `x-openai-preview`), and its resource options' (`_meta`)."""
    items = field.get("items")
    for holder in (field, items if isinstance(items, Mapping) else {}):
        for key in ("oneOf", "anyOf", "x-openai-suggestions"):
            for option in _list(holder.get(key)):
                for icon_key in ("x-openai-thumbnail", "x-openai-preview"):
                    icon = option.get(icon_key)
                    if icon is not None:
                        src = icon.get("src") if isinstance(icon, Mapping) else None
                        yield f"option {option.get('const')!r}", src
        given = holder.get(INPUT)
        if isinstance(given, Mapping):
            for option in _list(given.get("options")):
                meta = option.get("_meta")
                icon = meta.get("openai/thumbnail") if isinstance(meta, Mapping) else None
                if icon is not None:
                    src = icon.get("src") if isinstance(icon, Mapping) else None
                    yield f"resource {option.get('uri')!r}", src


def _list(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _worded(error: ValidationError) -> str:
    """The first problem pydantic found, with the field it is in."""
    first = error.errors()[0]
    where = [str(part) for part in first["loc"]]
    message = first["msg"].removeprefix("Value error, ")
    if len(where) >= 2 and where[0] == "properties":
        rest = ".".join(where[2:])
        return f"field '{where[1]}'{f' ({rest})' if rest else ''}: {message}"
    return f"{'.'.join(where) or 'the schema'}: {message}"


def selection_problems(schema: Mapping[str, Any] | None, content: Mapping[str, Any]) -> list[str]:
    """What is wrong with the resources an answer chose: each must be one the app offered."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping):
        return []
    problems = []
    for name, field in properties.items():
        given = field.get(INPUT) if isinstance(field, Mapping) else None
        if not isinstance(given, Mapping) or name not in content:
            continue
        offered = {option.get("uri") for option in _list(given.get("options"))}
        value = content[name]
        chosen = value if isinstance(value, list) else [value]
        strangers = [uri for uri in chosen if uri not in offered]
        if strangers:
            problems.append(f"{name}: {strangers[0]!r} is not one of the resources offered")
    return problems
