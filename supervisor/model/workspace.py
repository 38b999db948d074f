"""`[workspace]`: the one folder whose files the control page lists and app views may open,
read and save (through opaque `host-resource://` URIs, never raw paths), as plain data.

Absent, there is no workspace: nothing is listed and no file can be opened.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import attrs

from supervisor.model.structuring import Between

# A file is read whole into one answer and a save arrives as one request body, so both are
# bounded; a gibibyte is far past anything a view can show and still fits an int everywhere.
Bytes = Annotated[int, Between(1, 1024**3)]


@attrs.frozen(kw_only=True)
class WorkspaceConfig:
    """After loading, `root` is absolute (resolved against the config file's folder); a
    `[workspace]` table without it is a config error (`None` only so that the rule can say so
    in its own words)."""

    root: Path | None = None
    max_read_bytes: Bytes = 8 * 1024 * 1024  # a bigger file is refused before it is read
    max_write_bytes: Bytes = 2 * 1024 * 1024  # a bigger save is answered `too-large`
    writable: bool = True  # false: every file is read-only, every save refused
