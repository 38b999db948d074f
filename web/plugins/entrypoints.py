"""An app's entry points (`_meta["openai/ui"].entrypoints` on a UI tool) and the deep links into
them, read from its catalog (pure).

A *global* entry point is listed in the control page's launcher and opens fullscreen; a *thread*
entry point is a tab beside a chat, one instance per chat session. Either opens by calling its
tool with `{}`, whatever the tool's `_meta.ui.visibility` says (the spec: visibility is for the
model and views, not for the person who opens an app). File entry points are the workspace's
(a file's viewer), not listed here.

Each entry point has a title (the tool's `title`, then `annotations.title`, then its `name`)
and an icon: the tool's `icons`, then the server's, then none (the page draws its own). Only an
icon the control page can show is taken: a `data:` image, since the page's CSP loads images
from nowhere else (an app's https icon would make every visit to the page a request to the
app's host).

A deep link is an app-relative URL (`/parts?tag=bolt`), given to the view as
`hostContext["openai/deepLink"] = {"url": …}`: it must start with `/`, name no other host
(`//…`) and carry no fragment; none means `/`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import attrs

from actors.catalog import Catalog, Wire
from supervisor.model.errors import BadRequest
from web.plugins.offers import has_view, tool_title

Kind = Literal["global", "thread"]
IconSource = Literal["tool", "server", "fallback"]
KINDS: tuple[Kind, ...] = ("global", "thread")
DEEP_LINK = "openai/deepLink"
DEEP_LINK_MAX = 2_048  # characters of an app-relative URL
ICON_MAX = 64 * 1024  # characters of a data: icon's URI
_ICON_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml")


class BadDeepLink(BadRequest):
    """A deep link's path that is not an app-relative URL the spec allows."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="bad_deep_link")


@attrs.frozen
class EntryPoint:
    app_id: str
    tool: str  # the app's own name of the tool
    public_name: str  # the name in links: `/?entry=<public name>`
    kind: Kind
    title: str
    resource_uri: str
    icon: Wire | None = None  # {src, mimeType?}: a data: image, or None for the page's own
    icon_from: IconSource = "fallback"

    def json(self) -> dict[str, Any]:
        return {
            "app": self.app_id,
            "tool": self.tool,
            "publicName": self.public_name,
            "type": self.kind,
            "title": self.title,
            "resourceUri": self.resource_uri,
            "icon": self.icon,
            "iconFrom": self.icon_from,
        }


def declared_kinds(tool: Mapping[str, Any]) -> tuple[Kind, ...]:
    """The global and thread entry points a tool declares, each once, in the spec's order."""
    meta = tool.get("_meta")
    openai = meta.get("openai/ui") if isinstance(meta, Mapping) else None
    listed = openai.get("entrypoints") if isinstance(openai, Mapping) else None
    if not isinstance(listed, list):
        return ()
    seen = {e.get("type") for e in listed if isinstance(e, Mapping)}
    return tuple(kind for kind in KINDS if kind in seen)


def usable_icon(icons: Any) -> Wire | None:
    """The first icon of an MCP `icons` list that the page can show: a `data:` URI of an image
    type (its `mimeType`, else the URI's own), not too large."""
    if not isinstance(icons, list):
        return None
    for icon in icons:
        src = icon.get("src") if isinstance(icon, Mapping) else None
        if not isinstance(src, str) or len(src) > ICON_MAX or not src.startswith("data:"):
            continue
        declared = src[5:].split(",", 1)[0].split(";", 1)[0].lower()
        if declared in _ICON_TYPES:
            return {"src": src, "mimeType": declared}
    return None


def entry_points(
    app_id: str, catalog: Catalog, public_names: Mapping[str, str]
) -> tuple[EntryPoint, ...]:
    """The app's global and thread entry points, in its tools' order. `public_names` maps the
    app's tool names to their public names (a tool without one has no link, and is left out)."""
    server_icon = usable_icon(catalog.server_info.get("icons"))
    found: list[EntryPoint] = []
    for tool in catalog.tools:
        name = tool.get("name")
        if not isinstance(name, str) or name not in public_names or not has_view(tool):
            continue
        icon, source = _icon(usable_icon(tool.get("icons")), server_icon)
        for kind in declared_kinds(tool):
            found.append(
                EntryPoint(
                    app_id=app_id,
                    tool=name,
                    public_name=public_names[name],
                    kind=kind,
                    title=tool_title(tool),
                    resource_uri=tool["_meta"]["ui"]["resourceUri"],
                    icon=icon,
                    icon_from=source,
                )
            )
    return tuple(found)


def _icon(tool_icon: Wire | None, server_icon: Wire | None) -> tuple[Wire | None, IconSource]:
    if tool_icon is not None:
        return tool_icon, "tool"
    if server_icon is not None:
        return server_icon, "server"
    return None, "fallback"


def deep_link(path: str | None) -> str:
    """The app-relative URL a deep link's `path` names ("/" when none is given), or
    `BadDeepLink` saying what is wrong with it."""
    if path is None or path == "":
        return "/"
    shown = path if len(path) <= 80 else path[:80] + "…"
    if len(path) > DEEP_LINK_MAX:
        raise BadDeepLink(
            f"the deep link's path is {len(path)} characters long: at most {DEEP_LINK_MAX}"
        )
    if not path.startswith("/"):
        raise BadDeepLink(
            f"the deep link's path '{shown}' does not start with '/': it must be a URL relative"
            " to the app, such as /parts?tag=bolt"
        )
    if path.startswith("//"):
        raise BadDeepLink(
            f"the deep link's path '{shown}' starts with '//', which names another host: it"
            " must be a path of the app itself, such as /parts?tag=bolt"
        )
    if "#" in path:
        raise BadDeepLink(
            f"the deep link's path '{shown}' has a fragment ('#{path.split('#', 1)[1][:40]}'):"
            " a deep link is an app-relative URL without one; leave out the '#' and what"
            " follows it"
        )
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
        raise BadDeepLink(f"the deep link's path {shown!r} has a control character")
    return path
