"""`Problem`: one sentence about one file or folder, the shape of every error and warning."""

from __future__ import annotations

from pathlib import Path

import attrs


@attrs.frozen
class Problem:
    """`source: message`. The source is absolute; `shown` makes it relative for display."""

    source: Path
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"

    def shown(self, base: Path) -> str:
        """The sentence with the source relative to `base` when it lies under it."""
        return f"{display_path(self.source, base)}: {self.message}"


def display_path(path: Path, base: Path) -> str:
    """`path` relative to `base` when it lies under it, else as it is."""
    try:
        return str(path.relative_to(base))
    except ValueError:
        return str(path)
