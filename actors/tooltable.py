"""The model-visible tool table, computed from the catalogs of the Running apps.

Pure: the registry's `ToolUpkeep` (actors/toolupkeep.py) calls `build_tool_table` whenever an
app's state or catalog changes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from actors.catalog import Wire
from actors.offers import AppOffers, Offers, build_offers

MCP_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
MODEL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_MODEL_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
_HASH_LENGTH = 8


@attrs.frozen
class PublicTool:
    """A tool as the agent sees it: its public name (prefix + name), the alias for strict model
    back-ends, and where it really lives."""

    public_name: str
    alias: str
    app_id: str
    name: str
    description: str
    input_schema: Wire
    ui_resource_uri: str | None
    listing: Wire = attrs.Factory(dict)  # the tool as `/mcp` lists it: see `public_listing`

    @property
    def registration(self) -> str:
        return f"mcpapp:{self.app_id}"


@attrs.frozen
class AppTools:
    """The input for one app: its id, prefix and raw tools (and what else `/mcp` offers of it),
    in registration order."""

    app_id: str
    prefix: str
    tools: tuple[Wire, ...]
    prompts: tuple[Wire, ...] = ()
    resources: tuple[Wire, ...] = ()
    resource_templates: tuple[Wire, ...] = ()


@attrs.frozen
class NotOffered:
    """A model-visible tool of a Running app that the model is not offered, and why."""

    app_id: str
    name: str  # the app's own name for it
    public_name: str
    reason: str  # one sentence naming the tool and the app
    taken_by: str | None = None  # a name collision: the app that offers that public name


@attrs.frozen
class ToolTable:
    tools: tuple[PublicTool, ...] = ()
    warnings: dict[str, tuple[str, ...]] = attrs.Factory(dict)  # app id → warnings
    not_offered: tuple[NotOffered, ...] = ()
    _by_public: dict[str, PublicTool] = attrs.Factory(dict)
    _by_alias: dict[str, PublicTool] = attrs.Factory(dict)
    offers: Offers = attrs.Factory(Offers)  # the prompts, resources and templates `/mcp` offers

    def find(self, name: str) -> PublicTool | None:
        """By public name, else by alias."""
        return self._by_public.get(name) or self._by_alias.get(name)


def ui_resource_uri(tool: Wire) -> str | None:
    meta = tool.get("_meta")
    if not isinstance(meta, Mapping):
        return None
    ui = meta.get("ui")
    uri = ui.get("resourceUri") if isinstance(ui, Mapping) else None
    if uri is None:
        uri = meta.get("ui/resourceUri")
    return uri if isinstance(uri, str) and uri else None


def public_listing(tool: Wire, public_name: str) -> Wire:
    """The tool as `/mcp` lists it: as the app lists it (title, annotations, outputSchema,
    execution, icons: a client decides on approval by `readOnlyHint` and `destructiveHint`),
    under its public name, without the UI link (`/mcp` is not an MCP Apps host). A tool with a
    UI keeps its structuredContent from the model, so it has no outputSchema here either: a
    client would refuse a result without the structured content the schema promises."""
    listed = {**tool, "name": public_name}
    meta = listed.get("_meta")
    if isinstance(meta, Mapping):
        meta = {k: v for k, v in meta.items() if k not in ("ui", "ui/resourceUri")}
        if meta:
            listed["_meta"] = meta
        else:
            del listed["_meta"]
    if ui_resource_uri(tool) is not None:
        listed.pop("outputSchema", None)
    return listed


def model_visible(tool: Wire) -> bool:
    """False for app-only tools: `_meta.ui.visibility` is a list without "model"."""
    meta = tool.get("_meta")
    ui = meta.get("ui") if isinstance(meta, Mapping) else None
    visibility = ui.get("visibility") if isinstance(ui, Mapping) else None
    return not isinstance(visibility, list) or "model" in visibility


def schema_problem(schema: Any) -> str | None:
    if schema is None:
        return "it has no inputSchema"
    if not isinstance(schema, Mapping):
        return "its inputSchema is not a JSON object"
    if schema.get("type") != "object":
        return f"its inputSchema has type {schema.get('type')!r}, not 'object'"
    return None


def model_alias(public_name: str) -> str:
    """A stable name that strict model back-ends accept (`^[a-zA-Z0-9_-]{1,64}$`)."""
    safe = _MODEL_UNSAFE.sub("_", public_name)
    if MODEL_NAME.fullmatch(safe) and safe == public_name:
        return safe
    if len(safe) <= 64:
        return safe
    return f"{safe[: 64 - _HASH_LENGTH - 1]}_{_short_hash(public_name)}"


def _refusal(
    app_id: str, name: str, public: str, raw: Wire, offered: Mapping[str, PublicTool]
) -> tuple[str, str | None] | None:
    """Why a model-visible tool is not offered (and, for a name collision, the app that has
    the name), or None when it is."""
    if not MCP_NAME.fullmatch(public):
        return (
            f"tool '{name}' of app '{app_id}' is not offered to the model: its public"
            f" name '{public}' is not 1-128 characters of A-Z a-z 0-9 _ . -"
        ), None
    if problem := schema_problem(raw.get("inputSchema")):
        return f"tool '{name}' of app '{app_id}' is not offered to the model: {problem}", None
    if (owner := offered.get(public)) is not None:
        return (
            f"tool '{public}' of app '{app_id}' is not offered to the model: app"
            f" '{owner.app_id}' already offers a tool of that name and keeps it (the app"
            f" discovered first does); set tool_name_prefix in [apps.entries.{app_id}] to"
            " tell them apart"
        ), owner.app_id
    return None


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:_HASH_LENGTH]


def build_tool_table(apps: Iterable[AppTools]) -> ToolTable:
    """Every model-visible tool of `apps` (in discovery order: the first app to offer a public
    name keeps it, so the owner follows the config, not which app started first), and what
    else `/mcp` offers of them."""
    apps = tuple(apps)  # read twice: for the tools, and for the offers
    tools: list[PublicTool] = []
    by_public: dict[str, PublicTool] = {}
    by_alias: dict[str, PublicTool] = {}
    warnings: dict[str, list[str]] = {}
    not_offered: list[NotOffered] = []
    for app in apps:
        for raw in app.tools:
            name = raw.get("name")
            if not isinstance(name, str) or not model_visible(raw):
                continue
            public = app.prefix + name
            refused = _refusal(app.app_id, name, public, raw, by_public)
            if refused is not None:
                reason, taken_by = refused
                warnings.setdefault(app.app_id, []).append(reason)
                not_offered.append(NotOffered(app.app_id, name, public, reason, taken_by))
                continue
            tool = PublicTool(
                public_name=public,
                alias="",  # chosen below, once every public name is known
                app_id=app.app_id,
                name=name,
                description=str(raw.get("description") or ""),
                input_schema=raw["inputSchema"],
                ui_resource_uri=ui_resource_uri(raw),
                listing=public_listing(raw, public),
            )
            tools.append(tool)
            by_public[public] = tool
    # An alias must never be another tool's public name (or another alias): a model calling
    # `a_b` for the tool `a.b` must not reach a different tool that is really named `a_b`.
    for index, tool in enumerate(tools):
        alias = model_alias(tool.public_name)
        taken = by_public.get(alias)
        if alias in by_alias or (taken is not None and taken is not tool):
            alias = f"{alias[: 64 - _HASH_LENGTH - 1]}_{_short_hash(tool.public_name)}"
        tools[index] = attrs.evolve(tool, alias=alias)
        by_public[tool.public_name] = by_alias[alias] = tools[index]
    offers = build_offers(
        AppOffers(app.app_id, app.prefix, app.prompts, app.resources, app.resource_templates)
        for app in apps
    )
    for app_id, said in offers.warnings.items():
        warnings.setdefault(app_id, []).extend(said)
    return ToolTable(
        tools=tuple(tools),
        warnings={app: tuple(w) for app, w in warnings.items() if w},
        not_offered=tuple(not_offered),
        by_public=by_public,
        by_alias=by_alias,
        offers=offers,
    )
