"""Which discovered apps may run: allow/deny globs and per-app switches (SPEC §3)."""

from __future__ import annotations

from fnmatch import fnmatchcase

from supervisor.config import AppsConfig


def glob_match(pattern: str, app_id: str) -> bool:
    """Shell-style match (`*`, `?`, `[abc]`, `[!abc]`) of a whole id, ignoring case."""
    return fnmatchcase(app_id.lower(), pattern.lower())


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
