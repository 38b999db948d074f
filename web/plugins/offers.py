"""What an app offers of the plugin extensions, read from its catalog (pure).

A server advertises an extension by name in its capabilities: under `extensions` (both eras)
or, on a handshake-era connection, under the legacy `experimental`. An offer names tools of
the app's own; each has rules the host checks before it calls one, since the host calls them
on the person's behalf without asking (a settings page read on open, a search per keystroke):
the read and search tools must say they are read-only, and the search tool must be one a view
may call. An offer that breaks a rule is reported with the reason, never used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from actors.catalog import Catalog, Wire
from actors.views.gate import is_read_only, is_visible_to_app

SETTINGS = "openai/settings"
MENTIONS = "openai/mentions"
# The deprecated marker of a search tool, honoured when the capability is absent.
MENTIONS_MARK = ("openai/extensions", "mentions/search")


def extension(catalog: Catalog, name: str) -> Wire | None:
    """The app's declaration of extension `name`: `extensions` first, then `experimental`."""
    for place in ("extensions", "experimental"):
        declared = catalog.capabilities.get(place)
        if isinstance(declared, Mapping) and isinstance(declared.get(name), Mapping):
            return dict(declared[name])
    return None


def tool_named(catalog: Catalog, name: Any) -> Wire | None:
    return next((t for t in catalog.tools if t.get("name") == name), None)


def tool_title(tool: Mapping[str, Any]) -> str:
    """A tool's display name: `title`, then `annotations.title`, then `name`."""
    annotations = tool.get("annotations")
    for title in (
        tool.get("title"),
        annotations.get("title") if isinstance(annotations, Mapping) else None,
    ):
        if isinstance(title, str) and title.strip():
            return title
    return str(tool.get("name"))


def has_view(tool: Mapping[str, Any]) -> bool:
    ui = (tool.get("_meta") or {}).get("ui")
    return isinstance(ui, Mapping) and isinstance(ui.get("resourceUri"), str)


@attrs.frozen
class SettingsOffer:
    read_tool: str
    update_tool: str
    problem: str | None = None  # why it is not used; None: it may be used


@attrs.frozen
class MentionsOffer:
    search_tool: str
    problem: str | None = None


def settings_offer(app_id: str, catalog: Catalog) -> SettingsOffer | None:
    """The app's settings offer, checked; None when it offers none."""
    declared = extension(catalog, SETTINGS)
    if declared is None:
        return None
    read, update = declared.get("readTool"), declared.get("updateTool")
    offer = SettingsOffer(str(read), str(update))
    where = f"app '{app_id}' offers settings ({SETTINGS})"
    if not _non_blank(read) or not _non_blank(update):
        return attrs.evolve(offer, problem=f"{where} without a readTool and an updateTool name")
    read_tool, update_tool = tool_named(catalog, read), tool_named(catalog, update)
    for name, tool in ((read, read_tool), (update, update_tool)):
        if tool is None:
            return attrs.evolve(offer, problem=f"{where}, but it has no tool '{name}'")
    assert read_tool is not None
    if not is_read_only(read_tool):
        return attrs.evolve(
            offer,
            problem=f"{where}, but its read tool '{read}' is not marked read-only"
            " (annotations.readOnlyHint): it is not called, since opening a settings page must"
            " change nothing",
        )
    if not isinstance(read_tool.get("outputSchema"), Mapping):
        return attrs.evolve(
            offer,
            problem=f"{where}, but its read tool '{read}' declares no outputSchema: its answer"
            " is not trusted to be settings",
        )
    return offer


def mentions_offer(app_id: str, catalog: Catalog) -> MentionsOffer | None:
    """The app's @-mention search, checked; None when it offers none. The capability names
    the tool; without it, a tool carrying the deprecated marker is taken."""
    declared = extension(catalog, MENTIONS)
    if declared is not None:
        searched = declared.get("searchTool")
        where = f"app '{app_id}' offers @-mentions ({MENTIONS})"
        if not isinstance(searched, str) or not searched.strip():
            return MentionsOffer(str(searched), f"{where} without a searchTool name")
        name = searched
        tool = tool_named(catalog, name)
        if tool is None:
            return MentionsOffer(name, f"{where}, but it has no tool '{name}'")
    else:
        tool = next((t for t in catalog.tools if _marked(t)), None)
        if tool is None:
            return None
        name = str(tool.get("name"))
        where = f"app '{app_id}' marks tool '{name}' as its @-mention search"
    if not is_read_only(tool):
        return MentionsOffer(
            name,
            f"{where}, but '{name}' is not marked read-only (annotations.readOnlyHint): it is"
            " not used, since it would run at every keystroke",
        )
    if not is_visible_to_app(tool):
        return MentionsOffer(
            name,
            f"{where}, but '{name}' is for the model only (its _meta.ui.visibility does not"
            ' include "app"): it is not used',
        )
    return MentionsOffer(name)


def _marked(tool: Mapping[str, Any]) -> bool:
    meta = tool.get("_meta")
    marks = meta.get(MENTIONS_MARK[0]) if isinstance(meta, Mapping) else None
    return isinstance(marks, Mapping) and MENTIONS_MARK[1] in marks


def _non_blank(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def result_text(result: Wire) -> str:
    """The text blocks of a tool's result, joined."""
    return "\n".join(
        block["text"]
        for block in result.get("content") or ()
        if isinstance(block, Mapping) and isinstance(block.get("text"), str)
    )
