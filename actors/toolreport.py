"""The tool table as an operator reads it (`GET /admin/tools`, `mcpapps tools`): every tool of
every Running app with its public name, model alias, visibility and UI link, and for each tool
the model is not offered, the reason. Pure: built from the table and the catalogs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from actors.tooltable import AppTools, ToolTable, model_visible, ui_resource_uri

DEFAULT_VISIBILITY = ("model", "app")  # an MCP Apps tool without `_meta.ui.visibility`


@attrs.frozen(kw_only=True)
class ToolRow:
    app_id: str
    name: str  # the app's own name
    public_name: str
    alias: str | None  # None when the model is not offered the tool
    visibility: tuple[str, ...]
    ui_resource_uri: str | None
    offered: bool
    reason: str | None = None  # why it is not offered
    taken_by: str | None = None  # a name collision: the app whose tool has the public name

    def json(self) -> dict[str, Any]:
        return {
            "app": self.app_id,
            "name": self.name,
            "publicName": self.public_name,
            "alias": self.alias,
            "visibility": list(self.visibility),
            "uiResourceUri": self.ui_resource_uri,
            "offered": self.offered,
            "reason": self.reason,
            "takenBy": self.taken_by,
        }


def visibility(tool: Mapping[str, Any]) -> tuple[str, ...]:
    meta = tool.get("_meta")
    ui = meta.get("ui") if isinstance(meta, Mapping) else None
    seen = ui.get("visibility") if isinstance(ui, Mapping) else None
    if isinstance(seen, list):
        return tuple(str(v) for v in seen)
    return DEFAULT_VISIBILITY


def tool_report(table: ToolTable, apps: Iterable[AppTools]) -> tuple[ToolRow, ...]:
    """One row per named tool of `apps` (the Running apps the table was built from), in their
    order."""
    offered = {(t.app_id, t.name): t for t in table.tools}
    refused = {(n.app_id, n.name): n for n in table.not_offered}
    rows: list[ToolRow] = []
    for app in apps:
        for raw in app.tools:
            name = raw.get("name")
            if not isinstance(name, str):
                continue
            row = ToolRow(
                app_id=app.app_id,
                name=name,
                public_name=app.prefix + name,
                alias=None,
                visibility=visibility(raw),
                ui_resource_uri=ui_resource_uri(raw),
                offered=False,
            )
            if (tool := offered.get((app.app_id, name))) is not None:
                row = attrs.evolve(row, alias=tool.alias, offered=True)
            elif not model_visible(raw):
                why = f"app-only: its visibility is {list(row.visibility)}, without 'model'"
                row = attrs.evolve(row, reason=why)
            elif (no := refused.get((app.app_id, name))) is not None:
                row = attrs.evolve(row, reason=no.reason, taken_by=no.taken_by)
            rows.append(row)
    return tuple(rows)
