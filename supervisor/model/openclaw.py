"""`mcpapps import-openclaw`: an OpenClaw.NET `appsettings.json` (its `McpApps` section) turned
into our config.toml. Pure: data in, TOML text and the list of what could not be mapped out.

The section's shape, as OpenClaw.NET documents it: `Enabled` (default false), `DiscoveryPaths`,
`AllowlistSemantics`, `Allow`, `Deny`, and `Entries` keyed by app id, each with `Enabled`,
`Transport`, `Command`, `Url`, `ToolNamePrefix`, `StartupTimeoutSeconds`,
`RequestTimeoutSeconds` and `Environment`. The gateway's compatibility switch
(`OpenClaw:McpCompatibility`) becomes `[apps] protocol`. .NET's configuration binder matches
keys case-insensitively, so this does too. Nothing is dropped in silence: every key that is
not mapped is reported with the reason, and written into the TOML as a comment.
"""

from __future__ import annotations

import os.path
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

import attrs

from supervisor.model.config import ConfigError, config_from_data
from supervisor.model.errors import McpappsError
from supervisor.model.structuring import dotted, show
from supervisor.model.tomltext import toml_key, toml_value


@attrs.frozen
class Unmapped:
    key: str  # as written, dotted: McpApps.Entries.weather.Retries
    why: str

    def __str__(self) -> str:
        return f"{self.key}: {self.why}"


@attrs.frozen
class Imported:
    toml: str
    unmapped: tuple[Unmapped, ...]


class OpenClawImportError(McpappsError, ValueError):
    """The file holds no `McpApps` section to import; the message says what to do."""


# Entry keys (lower case) → (our key in [apps.entries.<id>], the expected kind).
_ENTRY_KEYS: dict[str, tuple[str, str]] = {
    "enabled": ("enabled", "bool"),
    "transport": ("transport", "str"),
    "command": ("command", "str"),
    "arguments": ("arguments", "list"),
    "url": ("url", "str"),
    "headers": ("headers", "map"),
    "toolnameprefix": ("tool_name_prefix", "str"),
    "startuptimeoutseconds": ("startup_timeout_s", "int"),
    "requesttimeoutseconds": ("request_timeout_s", "int"),
    "environment": ("environment", "map"),
}
# McpCompatibility values → [apps] protocol. The source documents name the switch but not its
# values, so the spellings of our own three modes (and the source's "legacy") are understood.
_PROTOCOLS = {
    "auto": "auto",
    "discover-first": "auto",
    "handshake": "handshake",
    "legacy": "handshake",
    "stateless": "stateless",
}
_PROTOCOL_KEYS = ("mode", "protocol", "transportmode")


def import_openclaw(data: Any, *, source: Path, out_folder: Path) -> Imported:
    """Our config for the `McpApps` section of `data` (the parsed appsettings.json read from
    `source`); relative discovery paths are rebased from `source`'s folder to `out_folder`,
    where the config will live. Raises OpenClawImportError when there is no such section."""
    if not isinstance(data, dict):
        raise OpenClawImportError(f"{source}: must hold one JSON object, not {show(data)}")
    unmapped: list[Unmapped] = []
    root = _get(data, "OpenClaw")
    section, where = _get(data, "McpApps"), "McpApps"
    if section is None and isinstance(root, dict):
        section, where = _get(root, "McpApps"), "OpenClaw.McpApps"
    if not isinstance(section, dict):
        raise OpenClawImportError(
            f"{source}: has no McpApps object (at the top level or under OpenClaw); is this"
            " OpenClaw.NET's appsettings.json?"
        )
    for key in data:
        if key.lower() not in ("mcpapps", "openclaw"):
            unmapped.append(Unmapped(key, "outside the McpApps section: not imported"))
    if isinstance(root, dict):
        for key in root:
            if key.lower() not in ("mcpapps", "mcpcompatibility"):
                unmapped.append(Unmapped(f"OpenClaw.{key}", "not about MCP Apps: not imported"))

    apps: dict[str, Any] = {}
    entries: dict[str, dict[str, Any]] = {}
    names: dict[str, str] = {}  # our dotted key → the appsettings key it came from
    for key, value in section.items():
        name = f"{where}.{key}"
        match key.lower():
            case "enabled":
                _take(apps, "enabled", value, "bool", name, unmapped)
                names["apps.enabled"] = name
            case "discoverypaths":
                paths = _kind(value, "list")
                if paths is None:
                    unmapped.append(Unmapped(name, f"must be a list of paths, got {show(value)}"))
                else:
                    apps["discovery_paths"] = [_rebase(p, source.parent, out_folder) for p in paths]
            case "allowlistsemantics":
                if isinstance(value, str) and value.lower() in ("legacy", "strict"):
                    apps["allowlist_semantics"] = value.lower()
                else:
                    unmapped.append(
                        Unmapped(name, f"must be 'legacy' or 'strict', got {show(value)}")
                    )
            case "allow" | "deny":
                _take(apps, key.lower(), value, "list", name, unmapped)
                names[f"apps.{key.lower()}"] = name
            case "entries":
                if not isinstance(value, dict):
                    unmapped.append(Unmapped(name, f"must be an object, got {show(value)}"))
                    continue
                for app_id, entry in value.items():
                    entries[app_id] = _entry(entry, f"{name}.{app_id}", unmapped)
                    for ours, theirs in _entry_names(entry).items():
                        names[dotted(("apps", "entries", app_id, ours))] = (
                            f"{name}.{app_id}.{theirs}"
                        )
            case "mcpcompatibility":
                _compatibility(value, name, apps, unmapped)
            case _:
                unmapped.append(Unmapped(name, "not a known McpApps setting"))
    compatibility = _get(root, "McpCompatibility") if isinstance(root, dict) else None
    if compatibility is not None:
        _compatibility(compatibility, "OpenClaw.McpCompatibility", apps, unmapped)
    if "enabled" not in apps:
        # OpenClaw.NET runs no app unless McpApps.Enabled is true: keep that meaning.
        apps["enabled"] = False
        unmapped.append(
            Unmapped(
                f"{where}.Enabled",
                "is not set, and OpenClaw.NET's default is false: written as"
                " apps.enabled = false; set it to true to run the apps",
            )
        )
    _drop_what_mcpapps_refuses(apps, entries, out_folder, names, unmapped)
    return Imported(_toml(source, apps, entries, unmapped), tuple(unmapped))


def _drop_what_mcpapps_refuses(
    apps: dict[str, Any],
    entries: dict[str, dict[str, Any]],
    out_folder: Path,
    names: Mapping[str, str],
    out: list[Unmapped],
) -> None:
    """Load the result as `mcpapps run` would; a value it refuses (a timeout out of range) is
    taken out and reported, so that the file written always loads. An unknown transport is
    not a config error but an app's: it is kept, and `mcpapps validate` refuses that app
    (taken out, the manifest's transport, stdio perhaps, would run in its place)."""
    written: dict[str, tuple[dict[str, Any], str]] = {
        dotted(("apps", key)): (apps, key) for key in apps
    }
    for app_id, entry in entries.items():
        for key in entry:
            written[dotted(("apps", "entries", app_id, key))] = (entry, key)
    data = {"apps": {**apps, "entries": entries}}
    try:
        config_from_data(data, out_folder / "config.toml", {})
    except ConfigError as error:
        for problem in error.problems:
            for name, (table, key) in written.items():
                if problem.message.startswith(f"{name} ") and key in table:
                    del table[key]
                    why = f"mcpapps refuses it: {problem.message}"
                    out.append(Unmapped(names.get(name, name), why))


def _get(table: Mapping[str, Any], key: str) -> Any:
    """A key as .NET's configuration binder finds it: case-insensitively."""
    return next((v for k, v in table.items() if k.lower() == key.lower()), None)


def _kind(value: Any, kind: str) -> Any:
    """`value` as our config wants it, or None when it is not of that kind."""
    match kind:
        case "bool":
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.lower() in ("true", "false"):
                return value.lower() == "true"  # .NET binds "true" strings to bools
        case "str":
            return value if isinstance(value, str) else None
        case "int":
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            if isinstance(value, str) and re.fullmatch(r"[0-9]+", value):
                return int(value)
        case "list":
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                return list(value)
        case "map":
            if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
                return dict(value)
    return None


_KINDS = {
    "bool": "true or false",
    "str": "a string",
    "int": "a whole number",
    "list": "a list of strings",
    "map": "an object of strings",
}


def _take(
    table: dict[str, Any], key: str, value: Any, kind: str, name: str, out: list[Unmapped]
) -> None:
    converted = _kind(value, kind)
    if converted is None:
        out.append(Unmapped(name, f"must be {_KINDS[kind]}, got {show(value)}: not imported"))
    else:
        table[key] = converted


def _entry(entry: Any, name: str, out: list[Unmapped]) -> dict[str, Any]:
    if not isinstance(entry, dict):
        out.append(Unmapped(name, f"must be an object, got {show(entry)}"))
        return {}
    ours: dict[str, Any] = {}
    for key, value in entry.items():
        known = _ENTRY_KEYS.get(key.lower())
        if known is None:
            out.append(Unmapped(f"{name}.{key}", "not an entry setting mcpapps has"))
        else:
            _take(ours, known[0], value, known[1], f"{name}.{key}", out)
    return ours


def _entry_names(entry: Any) -> dict[str, str]:
    """Our entry keys → the entry's own spelling of them."""
    if not isinstance(entry, dict):
        return {}
    return {_ENTRY_KEYS[k.lower()][0]: k for k in entry if k.lower() in _ENTRY_KEYS}


def _compatibility(value: Any, name: str, apps: dict[str, Any], out: list[Unmapped]) -> None:
    """The gateway's MCP compatibility switch → `[apps] protocol`, when it names a mode."""
    modes = ", ".join(sorted(_PROTOCOLS))
    if isinstance(value, str):
        if value.lower() in _PROTOCOLS:
            apps["protocol"] = _PROTOCOLS[value.lower()]
        else:
            out.append(Unmapped(name, f"'{value}' is not a mode mcpapps knows ({modes})"))
        return
    if not isinstance(value, dict):
        out.append(Unmapped(name, f"must be a mode or an object, got {show(value)}"))
        return
    for key, inner in value.items():
        if key.lower() in _PROTOCOL_KEYS and isinstance(inner, str):
            _compatibility(inner, f"{name}.{key}", apps, out)
        else:
            out.append(
                Unmapped(
                    f"{name}.{key}",
                    "no mcpapps setting matches it; [apps] protocol (auto, handshake,"
                    " stateless) is the compatibility switch here: set it by hand if needed",
                )
            )


def _rebase(path: str, source_folder: Path, out_folder: Path) -> str:
    """A relative path of appsettings.json (relative to its folder, the gateway's content root)
    as seen from the folder config.toml will be in; Windows separators made POSIX."""
    if "\\" in path and not PurePosixPath(path).is_absolute():
        path = PureWindowsPath(path).as_posix()
    if os.path.isabs(path) or re.match(r"[A-Za-z]:/", path):
        return path
    absolute = os.path.normpath(source_folder.absolute() / path)
    return os.path.relpath(absolute, out_folder.absolute())


# ---- writing TOML -------------------------------------------------------------------------------


def _toml(
    source: Path, apps: dict[str, Any], entries: dict[str, dict[str, Any]], out: list[Unmapped]
) -> str:
    lines = [
        f"# Imported from {source} by `mcpapps import-openclaw`.",
        "# Every other key keeps its default (see the bundled config.toml).",
    ]
    if out:
        lines.append("# Not imported:")
        lines += [f"#   {problem}" for problem in out]
    lines += ["", "[apps]"]
    lines += [f"{key} = {toml_value(value)}" for key, value in apps.items()]
    for app_id, entry in entries.items():
        lines += ["", f"[apps.entries.{toml_key(app_id)}]"]
        lines += [f"{key} = {toml_value(value)}" for key, value in entry.items()]
    return "\n".join(lines) + "\n"
