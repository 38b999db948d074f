"""Which discovered apps may run: allow/deny globs and per-app switches."""

from __future__ import annotations

import re
from fnmatch import translate
from functools import lru_cache

from supervisor.model.config import AppsConfig


def glob_match(pattern: str, app_id: str) -> bool:
    """Shell-style match (`*`, `?`, `[abc]`, `[!abc]`, `[a-z]`) of a whole id, ignoring case."""
    return _compiled(pattern).match(app_id) is not None


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    # Ignoring case in the regex, not by lower-casing both sides, keeps ranges such as [Z-a]
    # meaning what they say.
    return re.compile(translate(pattern), re.IGNORECASE)


def disabled_reason(app_id: str, apps: AppsConfig) -> str | None:
    """Why the app must not run, or None when it may; the first failing check wins."""
    entry = apps.entries.get(app_id)
    if entry is not None and not entry.enabled:
        return "disabled in config entries"
    for pattern in apps.deny:
        if glob_match(pattern, app_id):
            return f"matches deny pattern '{pattern}'"
    if apps.allow:
        if not any(glob_match(pattern, app_id) for pattern in apps.allow):
            return "not in the allowlist"
    elif apps.allowlist_semantics == "strict":
        return "not in the allowlist (apps.allowlist_semantics is 'strict' and apps.allow is empty)"
    return None
