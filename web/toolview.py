"""What the control page shows of an app's tools and UI, from its catalog and the tool table.

Pure. Each tool of the app's own list is one of: model-visible (under its public name), app-only
(its `_meta.ui.visibility` leaves out the model: only the app's own UI may call it), or not
offered, with the reason the tool table gave (a name collision, a bad input schema, a name the
model cannot use). An app "has a UI" when its catalog shows one: a tool whose
`_meta.ui.resourceUri` names a `ui://` resource of the MCP Apps HTML type, not merely because
its manifest says `hasUi`.
"""

from __future__ import annotations

from typing import Any

from actors.tooltable import ToolTable, model_visible, ui_resource_uri
from actors.upstream import Catalog

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


def _not_offered_reason(app_id: str, name: str, table: ToolTable) -> tuple[str, str]:
    """(kind, sentence) for a model-visible tool the table left out."""
    for warning in table.warnings.get(app_id, ()):
        quoted = warning.split("'")[1] if warning.startswith("tool '") else ""
        if quoted == name or quoted.endswith(name):
            if "already offers" in warning:
                return "collision", warning
            if "inputSchema" in warning:
                return "schema", warning
            return "name", warning
    return "not_running", f"app '{app_id}' is not Running: its tools are offered once it is"


def app_tools(
    app_id: str, catalog: Catalog, table: ToolTable, *, manifest_has_ui: bool, running: bool
) -> dict[str, Any]:
    by_name = {t.name: t for t in table.tools if t.app_id == app_id}
    served = ui_resources(catalog)
    visible: list[dict[str, Any]] = []
    app_only: list[dict[str, Any]] = []
    not_offered: list[dict[str, Any]] = []
    for tool in catalog.tools:
        name = tool.get("name")
        if not isinstance(name, str):
            continue
        uri = ui_resource_uri(tool)
        entry: dict[str, Any] = {"name": name, "resourceUri": uri if uri in served else None}
        if not model_visible(tool):
            app_only.append(entry)
        elif (public := by_name.get(name)) is not None:
            visible.append({**entry, "publicName": public.public_name})
        else:
            kind, reason = _not_offered_reason(app_id, name, table)
            not_offered.append({**entry, "kind": kind, "reason": reason})
    has_ui = catalog_has_ui(catalog)
    warnings = []
    if manifest_has_ui and running and not has_ui:
        warnings.append(
            f"app '{app_id}' says hasUi in its manifest but serves no UI: no tool's"
            f" _meta.ui.resourceUri names a ui:// resource of type {UI_MIME}"
        )
    return {
        "appId": app_id,
        "hasUi": has_ui,
        "modelVisible": visible,
        "appOnly": app_only,
        "notOffered": not_offered,
        "warnings": warnings,
    }
