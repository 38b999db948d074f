"""Whether an app has a UI, from what its catalog shows (pure).

An app "has a UI" when its catalog shows one: a tool whose `_meta.ui.resourceUri` names a
`ui://` resource listed with the MCP Apps HTML type, not merely because its manifest says
`hasUi` (a manifest can claim a UI its app does not serve).
"""

from __future__ import annotations

from typing import Any

from actors.catalog import Catalog
from actors.tooltable import ui_resource_uri

UI_MIME = "text/html;profile=mcp-app"


def is_ui_mime(mime: Any) -> bool:
    """Exactly `text/html;profile=mcp-app`, in any letter case (no spaces, no other
    parameters: a view is rendered only for the type apps are told to use)."""
    return isinstance(mime, str) and mime.lower() == UI_MIME


def ui_resources(catalog: Catalog) -> frozenset[str]:
    """The `ui://` resources the app lists with the MCP Apps HTML type."""
    return frozenset(
        r["uri"]
        for r in catalog.resources
        if isinstance(r.get("uri"), str)
        and r["uri"].startswith("ui://")
        and is_ui_mime(r.get("mimeType"))
    )


def catalog_has_ui(catalog: Catalog) -> bool:
    served = ui_resources(catalog)
    return any(ui_resource_uri(tool) in served for tool in catalog.tools)
