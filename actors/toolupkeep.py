"""The upkeep of the model-visible tool table: the catalogs of the apps, their order in the
latest discovery, the table built from the Running ones and the warnings it has logged.

The registry owns a `ToolUpkeep` (no actor of its own, no task: it changes only when the
registry calls it) and tells it what it hears: a catalog, an app gone, a new discovery; after
each change it asks for the table again and publishes it if it changed. Which apps run is the
registry's to know; it hands them in as `Offerer`s.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs

from actors.catalog import Catalog
from actors.toolreport import ToolRow, tool_report
from actors.tooltable import AppTools, ToolTable, build_tool_table
from supervisor.model.discovery import DiscoveredApp

logger = logging.getLogger("mcpapps.registry")


@attrs.frozen
class Offerer:
    """A Running app as the table needs it: its id, its tools' prefix, and the manifest (or
    config) it runs from, which places it when its id has no place in the discovery."""

    app_id: str
    prefix: str
    source: Path | None


class ToolUpkeep:
    def __init__(self, apps: Sequence[DiscoveredApp]) -> None:
        self.table = ToolTable()
        self.catalogs: dict[str, Catalog] = {}
        self._order = DiscoveryOrder(apps)
        self._warned: set[str] = set()

    def rediscovered(self, apps: Sequence[DiscoveredApp]) -> None:
        """A reload's discovery: the apps' places from now on."""
        self._order = DiscoveryOrder(apps)

    def place(self, app_id: str, source: Path | None) -> int:
        """The app's place in the latest discovery (the app found first keeps a public name
        another app also offers, so the owner of a name is the same after a reload as after a
        restart with the same files)."""
        return self._order.place(app_id, source)

    def running_tools(self, offerers: Iterable[Offerer]) -> list[AppTools]:
        """What the Running apps offer, in discovery order (not the order they started in)."""
        return [
            AppTools(
                app.app_id,
                app.prefix,
                catalog.tools,
                catalog.prompts,
                catalog.resources,
                catalog.resource_templates,
            )
            for app in sorted(offerers, key=lambda app: self.place(app.app_id, app.source))
            if (catalog := self.catalogs.get(app.app_id)) is not None
        ]

    def rebuild(self, offerers: Iterable[Offerer]) -> ToolTable | None:
        """The table of what `offerers` offer now, if it is not the table there was (to be
        published); each warning of the table logged once."""
        table = build_tool_table(self.running_tools(offerers))
        changed = table != self.table
        self.table = table
        for warnings in table.warnings.values():
            for warning in warnings:
                if warning not in self._warned:
                    self._warned.add(warning)
                    logger.warning("%s", warning)
        return table if changed else None

    def report(self, offerers: Iterable[Offerer]) -> tuple[ToolRow, ...]:
        """The table as operators read it."""
        return tool_report(self.table, self.running_tools(offerers))


class DiscoveryOrder:
    """Each app's place in the latest discovery: by its id, where its manifest holds it (not
    a duplicate), else by the manifest it runs from (a reload kept it while refusing a
    manifest that has no usable id left)."""

    def __init__(self, apps: Sequence[DiscoveredApp]) -> None:
        self._by_id: dict[str, int] = {}
        self._by_source: dict[Path, int] = {}
        for place, app in enumerate(apps):
            if app.id is not None and app.duplicate_of is None:
                self._by_id.setdefault(app.id, place)
            if not app.inline:
                self._by_source.setdefault(app.source, place)
        self._end = len(apps)

    def place(self, app_id: str, source: Path | None) -> int:
        if app_id in self._by_id:
            return self._by_id[app_id]
        return self._by_source.get(source, self._end) if source is not None else self._end
