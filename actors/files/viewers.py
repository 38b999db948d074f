"""Which app views open which files (pure): the UI tools whose
`_meta["openai/ui"].entrypoints` hold `{"type": "file", "extensions": [".csv", …]}`.

Extensions are in the file-extension form of HTML's `accept` attribute: a string that starts
with "." (".csv", ".tar.gz"), compared without regard to letter case; a file is accepted when its
name ends with one of them (and is more than that ending: ".csv" alone is a hidden file, not a
CSV). Anything else in the list (a MIME type, "image/*") is not a file extension and is ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from actors.catalog import Wire
from actors.tooltable import ui_resource_uri


@attrs.frozen
class FileViewer:
    app_id: str
    tool: str  # the public name (the app's prefix and the tool's own name)
    title: str  # what a person is shown: the tool's title, else its annotations', else its name
    extensions: tuple[str, ...]  # lower-cased
    name: str = ""  # the tool's own name in its app (what the app is called with)

    def accepts(self, name: str) -> bool:
        lowered = name.lower()
        return any(lowered.endswith(e) and len(lowered) > len(e) for e in self.extensions)

    def json(self) -> dict[str, Any]:
        return {"app": self.app_id, "tool": self.tool, "title": self.title}


def file_extensions(tool: Mapping[str, Any]) -> tuple[str, ...]:
    """The extensions of the tool's file entry points, lower-cased, in order, once each."""
    meta = tool.get("_meta")
    ui = meta.get("openai/ui") if isinstance(meta, Mapping) else None
    entrypoints = ui.get("entrypoints") if isinstance(ui, Mapping) else None
    found: list[str] = []
    for entry in entrypoints if isinstance(entrypoints, list) else ():
        if not isinstance(entry, Mapping) or entry.get("type") != "file":
            continue
        extensions = entry.get("extensions")
        for extension in extensions if isinstance(extensions, list) else ():
            is_extension = isinstance(extension, str) and extension.startswith(".")
            if is_extension and len(extension) > 1 and extension.lower() not in found:
                found.append(extension.lower())
    return tuple(found)


def _title(tool: Mapping[str, Any], name: str) -> str:
    annotations = tool.get("annotations")
    for title in (
        tool.get("title"),
        annotations.get("title") if isinstance(annotations, Mapping) else None,
    ):
        if isinstance(title, str) and title.strip():
            return title
    return name


def file_viewers(tools: Iterable[tuple[str, str, Wire]]) -> tuple[FileViewer, ...]:
    """The file viewers among the tools of the Running apps, each given as `(app id, public
    name, the tool as the app lists it)`, in their order: those that have a UI and at least
    one file extension."""
    viewers: list[FileViewer] = []
    for app_id, public_name, tool in tools:
        name = tool.get("name")
        if not isinstance(name, str) or ui_resource_uri(tool) is None:
            continue
        if extensions := file_extensions(tool):
            viewers.append(FileViewer(app_id, public_name, _title(tool, name), extensions, name))
    return tuple(viewers)


def viewers_of(viewers: Iterable[FileViewer], name: str) -> list[FileViewer]:
    return [v for v in viewers if v.accepts(name)]
