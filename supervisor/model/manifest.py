"""The app manifest (`openclaw.mcpapp.json`): its model, its parsing and its rules.

Everything here is a pure function over values; reading files and walking folders is discovery's
job. A manifest goes through three steps, each collecting every problem it finds:

1. `parse_manifest_text`: JSON with comments and trailing commas (JSON5) into a dict;
2. `structure_manifest`: the dict into a `Manifest`, checking each field's type and range;
3. `manifest_problems`: the rules that span fields (required command or url, id syntax, ...),
   run on the *effective* manifest, after the config entry's overrides are applied.
"""

from __future__ import annotations

import json
import os.path
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any

import attrs
from cattrs.errors import ClassValidationError
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from supervisor.model import envrefs, jsontext
from supervisor.model.era import EraSetting
from supervisor.model.errors import McpappsError
from supervisor.model.policy import SupervisionPolicy
from supervisor.model.structuring import Between, KeyPath, did_you_mean, make_converter, problems
from supervisor.model.transports import (
    DEFAULT,
    TRANSPORTS,
    TransportName,
    TransportSpec,
    find_transport,
    normalize_transport,
    transport_problems,
)

StartupTimeout = Annotated[int, Between(1, 600)]
RequestTimeout = Annotated[int, Between(1, 3600)]

ID_RULE = "1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_TOOL_NAME_CHARS = re.compile(r"[A-Za-z0-9_.-]*")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# semver.org's own expression for a version string.
_SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?"
)
MAX_PREFIX_LENGTH = 64


@attrs.frozen(kw_only=True)
class Manifest:
    """An app's manifest with every field typed. Attribute names are the snake_case spelling of
    the manifest's camelCase keys (`has_ui` is `hasUi`); unknown keys are kept in `metadata`."""

    id: str | None = None
    name: str | None = None
    description: str = ""
    version: str = "0.1.0"
    protocol_version: str = "2025-03-26"
    transport: str = DEFAULT
    command: str | None = None
    arguments: tuple[str, ...] = ()
    working_directory: str | None = None
    url: str | None = None
    headers: dict[str, str] = attrs.Factory(dict)
    # `auth = "oauth"`: an http app whose server asks for the MCP authorization flow; a person
    # signs in once (the app waits in NeedsSignIn), the SDK's client keeps the token fresh.
    auth: str = "none"
    scopes: tuple[str, ...] = ()  # the scopes to ask for (default: those the server names)
    client_id: str | None = None  # for a server without dynamic client registration
    client_secret: str | None = None  # with client_id; ${env:NAME} is expanded at start
    environment: dict[str, str] = attrs.Factory(dict)
    has_ui: bool = False
    ui_resource_uri: str | None = None
    tool_name_prefix: str | None = None
    startup_timeout_seconds: StartupTimeout = 15
    request_timeout_seconds: RequestTimeout = 60
    tags: tuple[str, ...] = ()
    category: str | None = None
    capabilities: tuple[str, ...] = ("tools",)
    icon_url: str | None = None
    author: str | None = None
    license: str | None = None
    homepage_url: str | None = None
    # A setup skill packaged with the app (a Markdown file, relative to the manifest's folder):
    # the control page's "Set up" starts a chat whose first turn carries it. Never run unasked.
    onboarding_skill: str | None = None
    metadata: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen(kw_only=True)
class AppDefinition:
    """Everything needed to run one app: its effective manifest (overrides applied, transport
    normalised, name and prefix defaulted, working directory absolute), how to talk to it, and
    how to supervise it."""

    manifest: Manifest
    protocol: EraSetting
    supervision: SupervisionPolicy
    # `sampling = true` in [apps.entries.<id>]: the app may ask the chat agent's model.
    sampling: bool = False

    @property
    def id(self) -> str:
        assert self.manifest.id is not None  # a definition is only made from a valid manifest
        return self.manifest.id

    @property
    def transport_spec(self) -> TransportSpec:
        # `make_definition` wrote the transport's own name, from a manifest that named one.
        return TRANSPORTS[self.manifest.transport]

    @property
    def transport(self) -> TransportName:
        return self.transport_spec.name

    @property
    def signs_in(self) -> bool:
        """Whether a person signs in for the app (`auth = "oauth"`)."""
        return self.manifest.auth == "oauth"


class ManifestSyntaxError(McpappsError, ValueError):
    """The manifest text is not JSON (JSON5): one sentence with line and column."""


def camel(name: str) -> str:
    """`startup_timeout_seconds` -> `startupTimeoutSeconds`."""
    first, *rest = name.split("_")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


_FIELDS = tuple(a.name for a in attrs.fields(Manifest) if a.name != "metadata")
_KEYS = {camel(f): f for f in _FIELDS}

_converter = make_converter()
# JSON keys are mapped to attribute names before structuring, so one function serves both
# spellings; `metadata` holds unknown keys and is never read from the input.
_structure = make_dict_structure_fn(
    Manifest, _converter, _cattrs_forbid_extra_keys=True, metadata=override(omit=True)
)
_to_json = make_dict_unstructure_fn(
    Manifest,
    _converter,
    metadata=override(omit=True),
    **{f: override(rename=camel(f)) for f in _FIELDS},  # type: ignore[arg-type]  # cattrs' stubs
)


def parse_manifest_text(text: str) -> dict[str, Any]:
    """Parse manifest text as JSON5: JSON plus comments and trailing commas (last duplicate
    key wins, as in JavaScript)."""
    if not text.strip():
        raise ManifestSyntaxError("is empty: write a JSON object with at least an 'id'")
    try:
        data = jsontext.parse(text)
    except jsontext.JSONTextError as error:
        raise ManifestSyntaxError(f"is not valid JSON: {error}") from None
    if not isinstance(data, dict):
        raise ManifestSyntaxError(f"must hold one JSON object {{...}}, not {_json_kind(data)}")
    return data


KeyProblem = tuple[KeyPath, str]
"""A key and what is wrong with it, to be read after its name:
`(("startup_timeout_seconds",), "must be an integer ...")`. The first step is the attribute
(or, for an unknown key, the key as written)."""

RuleProblem = tuple[KeyPath, str]
"""A broken rule: the key it is about and a whole sentence:
`(("headers", "X-Key"), "'headers' \"X-Key\" is not a valid HTTP header name")`."""


def structure_manifest(
    data: dict[str, Any], *, inline: bool = False
) -> tuple[Manifest, list[KeyProblem]]:
    """Type-check every field of a parsed manifest at once.

    Returns the manifest (fields with problems left at their defaults, so that the rules can
    still look at the rest) and the problems. `inline=True` reads the snake_case keys of an inline
    app in config.toml, where unknown keys are errors; in a JSON manifest they are kept in
    `metadata`.
    """
    if inline:
        known, unknown = dict(data), {}
    else:
        known = {_KEYS[k]: v for k, v in data.items() if k in _KEYS}
        unknown = {k: v for k, v in data.items() if k not in _KEYS}
    # A null is "not given", as the source's nullable fields read it.
    known = {k: v for k, v in known.items() if v is not None}
    try:
        return attrs.evolve(_structure(known, Manifest), metadata=unknown), []
    except ClassValidationError as error:
        found = list(problems(error))
        bad = {path[0] for path, _ in found if path}
        manifest = _structure({k: v for k, v in known.items() if k not in bad}, Manifest)
        return attrs.evolve(manifest, metadata=unknown), found


def _json_kind(value: Any) -> str:
    kinds = {list: "a list", str: "a string", bool: "true or false", int: "a number"}
    return kinds.get(type(value), "a number" if isinstance(value, float) else "null")


def json_key(step: str) -> str:
    """How a manifest attribute is spelt in JSON (unknown keys stay as written)."""
    return camel(step) if step in _FIELDS else step


def unknown_key_warnings(manifest: Manifest) -> list[KeyProblem]:
    """Unknown keys that look like a misspelt field (`Command`, `startupTimeout`)."""
    found: list[KeyProblem] = []
    for key in manifest.metadata:
        hint = did_you_mean(key, list(_KEYS))
        if hint:
            found.append(((key,), f"is not a manifest field and is ignored{hint}"))
    return found


def manifest_to_json(manifest: Manifest) -> dict[str, Any]:
    """The manifest as JSON data with its own camelCase keys (unknown keys included)."""
    return {**_to_json(manifest), **manifest.metadata}


def id_problem(app_id: str) -> str | None:
    """Why `app_id` is not a valid app id, or None."""
    if _ID.fullmatch(app_id):
        return None
    return f"id {json.dumps(app_id)} is not valid: use {ID_RULE}"


def manifest_problems(
    manifest: Manifest,
    environ: Mapping[str, str],
    quote: Callable[[str], str] = lambda f: f"'{camel(f)}'",
    skip: Collection[str] = (),
) -> tuple[list[RuleProblem], list[RuleProblem]]:
    """The rules that a typed manifest must follow: `(errors, warnings)`.

    Sentences name their fields through `quote`, so the same rules speak of `'command'` in a
    manifest and `'apps.inline.x.command'` in config. Rules that read an attribute in `skip`
    (one whose value was of the wrong type) are not run.
    """
    errors = [p for p in _rule_problems(manifest, environ, quote) if not rule_reads(p[0]) & {*skip}]
    warnings = [p for p in _rule_warnings(manifest, quote) if not rule_reads(p[0]) & {*skip}]
    return errors, warnings


def rule_reads(key: KeyPath) -> set[str]:
    """The attributes that the rule reporting on `key` reads."""
    field = str(key[0])
    if field in ("command", "url", "auth"):
        return {"transport", field}
    if field in ("scopes", "client_id", "client_secret"):
        return {"auth", field}
    return {field}


def _rule_warnings(m: Manifest, quote: Callable[[str], str]) -> Iterator[RuleProblem]:
    if not _SEMVER.fullmatch(m.version):
        yield (
            ("version",),
            f"{quote('version')} {json.dumps(m.version)} is not a semantic version (such as 1.2.0)",
        )
    for field in ("command", "arguments", "url", "working_directory", "client_id"):
        value = getattr(m, field)
        if value is not None and "${env:" in json.dumps(value):
            yield (
                (field,),
                f"{quote(field)} contains ${{env:...}}, which is expanded only in header and"
                " environment values; here it stays as written",
            )


def _rule_problems(
    m: Manifest, environ: Mapping[str, str], quote: Callable[[str], str]
) -> Iterator[RuleProblem]:
    if m.id is None:
        yield ("id",), f"{quote('id')} is required: give the app an id of {ID_RULE}"
    elif problem := id_problem(m.id):
        yield ("id",), problem

    yield from transport_problems(m, quote)

    yield from _auth_problems(m, environ, quote)

    seen_headers: dict[str, str] = {}
    for header, value in m.headers.items():
        where = f"{quote('headers')} {json.dumps(header)}"
        if not _HEADER_NAME.fullmatch(header):
            yield ("headers", header), f"{where} is not a valid HTTP header name"
        if header.lower() in seen_headers:
            yield (
                ("headers", header),
                f"{where} repeats {json.dumps(seen_headers[header.lower()])}:"
                " header names are case-insensitive, keep one",
            )
        seen_headers.setdefault(header.lower(), header)
        if any(c in value for c in "\r\n\0"):
            yield ("headers", header), f"{where} has a line break or NUL in its value"
        yield from (
            (("headers", header), f"{where} {p}")
            for p in envrefs.reference_problems(value, environ)
        )

    for variable, value in m.environment.items():
        where = f"{quote('environment')} {json.dumps(variable)}"
        if not variable or "=" in variable or "\0" in variable:
            yield ("environment", variable), f"{where} is not a valid variable name"
        if "\0" in value:
            yield ("environment", variable), f"{where} has a NUL character in its value"
        yield from (
            (("environment", variable), f"{where} {p}")
            for p in envrefs.reference_problems(value, environ)
        )

    if m.ui_resource_uri is not None and not m.ui_resource_uri.startswith("ui://"):
        yield (
            ("ui_resource_uri",),
            f"{quote('ui_resource_uri')} {json.dumps(m.ui_resource_uri)} must start with ui://",
        )

    prefix = m.tool_name_prefix or ""
    if not _TOOL_NAME_CHARS.fullmatch(prefix) or len(prefix) > MAX_PREFIX_LENGTH:
        yield (
            ("tool_name_prefix",),
            f"{quote('tool_name_prefix')} {json.dumps(prefix)} must be at most"
            f" {MAX_PREFIX_LENGTH} letters, digits, '_', '.' or '-' (MCP tool-name rules)",
        )

    if m.onboarding_skill is not None and (problem := skill_path_problem(m.onboarding_skill)):
        yield ("onboarding_skill",), f"{quote('onboarding_skill')} {problem}"

    directory = m.working_directory or ""
    if directory.startswith("~"):
        yield (
            ("working_directory",),
            f"{quote('working_directory')} {json.dumps(directory)} starts with '~', which is not"
            " expanded: write an absolute path, or one relative to the manifest's folder",
        )


SKILL_MAX_BYTES = 64 * 1024  # a skill is a page of instructions, not a document


def skill_path_problem(path: str) -> str | None:
    """Why `path` is not a skill file inside the app's own folder, or None: it names a file
    relative to the manifest, and may not climb out of its folder (a manifest must not make
    the control page show any other file)."""
    shown = json.dumps(path)
    if not path.strip() or "\0" in path:
        return f"{shown} is not a path: name the skill's file, such as './skills/setup/SKILL.md'"
    if path.startswith(("/", "~")) or re.match(r"[A-Za-z]:", path):
        return f"{shown} must be relative to the manifest's folder, such as './skills/SKILL.md'"
    if ".." in re.split(r"[/\\]", path):
        return f"{shown} climbs out of the manifest's folder ('..'): keep the skill in the app"
    return None


AUTH_CHOICES = ("none", "oauth")
_SCOPE = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")  # RFC 6749's scope-token characters


def _auth_problems(
    m: Manifest, environ: Mapping[str, str], quote: Callable[[str], str]
) -> Iterator[RuleProblem]:
    """`auth`, and the keys that only mean something with `auth = "oauth"`."""
    if m.auth not in AUTH_CHOICES:
        yield (
            ("auth",),
            f"{quote('auth')} {json.dumps(m.auth)} is not supported: use 'oauth' (a person signs"
            " in to the app's authorization server) or 'none'",
        )
        return
    if m.auth != "oauth":
        for field in ("scopes", "client_id", "client_secret"):
            if getattr(m, field):
                yield (
                    (field,),
                    f"{quote(field)} is given but {quote('auth')} is not 'oauth': set"
                    f" {quote('auth')} to 'oauth' or remove {quote(field)}",
                )
        return
    if not ((spec := find_transport(m.transport)) and spec.can_sign_in):
        yield (
            ("auth",),
            f"{quote('auth')} is 'oauth' but the transport is {json.dumps(m.transport)}: signing"
            " in is for http apps (a stdio app gets its secrets through 'environment')",
        )
    for scope in m.scopes:
        if not _SCOPE.fullmatch(scope):
            yield (
                ("scopes",),
                f"{quote('scopes')} item {json.dumps(scope)} is not one OAuth scope: write each"
                " scope as its own item, without spaces or quotes",
            )
    if m.client_id is not None and not m.client_id.strip():
        yield ("client_id",), f"{quote('client_id')} is empty: give the client id or remove it"
    if m.client_secret is not None:
        if m.client_id is None:
            yield (
                ("client_secret",),
                f"{quote('client_secret')} is given without {quote('client_id')}: give both"
                " (a client registered with the authorization server), or neither",
            )
        yield from (
            (("client_secret",), f"{quote('client_secret')} {p}")
            for p in envrefs.reference_problems(m.client_secret, environ)
        )
    for header in m.headers:
        if header.lower() == "authorization":
            yield (
                ("headers", header),
                f"{quote('headers')} {json.dumps(header)} would replace the token of the"
                f" sign-in ({quote('auth')} is 'oauth'): remove the header",
            )


def make_definition(
    manifest: Manifest, *, folder: Path, protocol: EraSetting, supervision: SupervisionPolicy
) -> AppDefinition:
    """The definition of a manifest that passed every rule; relative paths resolve in `folder`."""
    working_directory = folder / (manifest.working_directory or ".")
    effective = attrs.evolve(
        manifest,
        name=manifest.name or manifest.id,
        transport=normalize_transport(manifest.transport) or manifest.transport,
        working_directory=os.path.normpath(working_directory),
        tool_name_prefix=manifest.tool_name_prefix or "",
        onboarding_skill=(
            os.path.normpath(folder / manifest.onboarding_skill)
            if manifest.onboarding_skill is not None
            else None
        ),
    )
    return AppDefinition(manifest=effective, protocol=protocol, supervision=supervision)
