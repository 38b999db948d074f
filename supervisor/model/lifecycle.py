"""The states of an app: the source's six, plus Disabled."""

from __future__ import annotations

import enum


class AppState(enum.StrEnum):
    DISCOVERED = "Discovered"  # manifest found (and, while it stays here, not valid)
    VALIDATED = "Validated"  # passed validation, may run
    DISABLED = "Disabled"  # filtered out by config, with the reason
    LOADED = "Loaded"  # connecting: process spawned or HTTP client opened
    RUNNING = "Running"  # handshake done, catalog enumerated
    STOPPED = "Stopped"  # stopped on purpose; never restarted by itself
    FAILED = "Failed"  # died or failed to start; see last_error
