"""Discovery: from config and folders of manifests to a list of apps with their states.

`discover()` reads folders and files but starts nothing. Each app comes out Validated, Disabled,
or Discovered with the errors that keep it from being valid; a problem with one manifest or one
folder never hides the others.
"""

from __future__ import annotations

import logging
import os
import os.path
import stat
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from supervisor.model.config import AppEntry, Config, effective_policy
from supervisor.model.filters import disabled_reason, glob_match
from supervisor.model.lifecycle import AppState
from supervisor.model.manifest import (
    AppDefinition,
    KeyProblem,
    Manifest,
    ManifestSyntaxError,
    json_key,
    make_definition,
    manifest_problems,
    normalize_transport,
    parse_manifest_text,
    rule_reads,
    structure_manifest,
    unknown_key_warnings,
)
from supervisor.model.problems import Problem, display_path
from supervisor.model.structuring import KeyPath, did_you_mean, dotted

MAX_MANIFEST_BYTES = 1024 * 1024
logger = logging.getLogger("mcpapps.discovery")


@attrs.frozen(kw_only=True)
class DiscoveredApp:
    """One app as discovery leaves it: the input of the supervisor.

    `definition` is set when the effective manifest is valid (state Validated, or Disabled);
    an app whose manifest has errors stays Discovered, with `errors` saying why (and, when a
    filter would also keep it from running, `disabled_reason`).
    """

    id: str | None
    source: Path  # the manifest file, or config.toml for an inline app
    state: AppState
    transport: str | None = None
    definition: AppDefinition | None = None
    errors: tuple[Problem, ...] = ()
    warnings: tuple[Problem, ...] = ()
    disabled_reason: str | None = None
    inline: bool = False
    duplicate_of: Path | None = None  # the manifest that holds this app's id, when another does

    @property
    def valid(self) -> bool:
        return not self.errors


@attrs.frozen
class Discovery:
    apps: tuple[DiscoveredApp, ...]
    warnings: tuple[Problem, ...]  # about folders and config, not about one app


def find_manifests(roots: Iterable[Path], name: str) -> tuple[list[Path], list[Problem]]:
    """Every file called `name` under `roots`, recursively, in a fixed order.

    Each folder's own manifest comes before its sub-folders, which are visited in name order.
    Links to folders are followed, but every real folder is scanned once (loop-safe); whatever
    cannot be read is skipped with a warning, without losing its siblings.
    """
    found: list[Path] = []
    warnings: list[Problem] = []
    scanned: dict[tuple[int, int], Path] = {}  # real folder -> the path it was scanned at
    for root in roots:
        if problem := _root_problem(root):
            warnings.append(problem)
            continue
        stack = [root]
        while stack:
            folder = stack.pop()
            try:
                identity = os.stat(folder)
                key = (identity.st_dev, identity.st_ino)
                if key in scanned:
                    warnings.append(_already_scanned(folder, scanned[key], is_root=folder is root))
                    continue
                scanned[key] = folder
                with os.scandir(folder) as listing:
                    entries = sorted(listing, key=lambda e: e.name)
            except OSError as error:
                warnings.append(
                    Problem(
                        folder,
                        f"cannot read this folder ({error.strerror or error}); skipped it and"
                        " everything under it; fix its permissions to discover its apps",
                    )
                )
                continue
            subfolders = []
            for entry in entries:
                try:
                    if entry.name == name and entry.is_file():
                        found.append(Path(entry.path))
                        continue
                    if entry.name == name:
                        warnings.append(
                            Problem(
                                Path(entry.path),
                                "is not a regular file (a folder, a broken link or a device),"
                                " so it is not read as a manifest",
                            )
                        )
                    if entry.is_dir():
                        subfolders.append(Path(entry.path))
                except OSError as error:
                    warnings.append(
                        Problem(Path(entry.path), f"cannot be examined ({error.strerror}); skipped")
                    )
            stack.extend(reversed(subfolders))
    return found, warnings


def _root_problem(root: Path) -> Problem | None:
    try:
        is_folder = stat.S_ISDIR(os.stat(root).st_mode)
    except FileNotFoundError:
        return Problem(
            root,
            "discovery path does not exist; create it or remove it from apps.discovery_paths"
            " in the config",
        )
    except OSError as error:
        return Problem(
            root, f"cannot read this discovery path ({error.strerror}); fix its permissions"
        )
    return None if is_folder else Problem(root, "discovery path is not a folder; nothing found")


def _already_scanned(folder: Path, first: Path, *, is_root: bool) -> Problem:
    if is_root:
        why = "discovery path is already scanned (listed twice, or inside another one)"
    elif os.path.islink(folder):
        why = f"skipped: this link leads to {first}, which is already scanned"
    else:
        why = "skipped: already scanned as a discovery path of its own"
    return Problem(folder, why)


def discover(
    config: Config, environ: Mapping[str, str], held: Mapping[str, Path] | None = None
) -> Discovery:
    """Find, check and filter every app that config.toml points at.

    Two manifests with one id: the first in scan order has it and the others are invalid
    duplicates, except that an id in `held` (a reload: the apps that run now, by id, with the
    manifest each came from) stays with that manifest as long as it is still there and names
    no other id, wherever it is in the scan order: a newcomer never takes a running app's id.
    """
    if not config.apps.enabled:
        return Discovery(
            apps=(),
            warnings=(Problem(config.path, "apps.enabled is false: no app is discovered"),),
        )
    files, warnings = find_manifests(config.apps.discovery_paths, config.apps.manifest_name)
    drafts = [_read_manifest(path) for path in files]
    drafts += [_read_inline(app_id, table, config) for app_id, table in config.apps.inline.items()]

    apps: list[DiscoveredApp] = []
    claimed = _still_held(held or {}, drafts)
    running = frozenset(claimed)
    for draft in drafts:
        app = _judge(draft, config, environ, claimed, running)
        if app.id is not None:
            claimed.setdefault(app.id, app.source)
        apps.append(app)

    warnings += _config_warnings(config, list(claimed), found_any=bool(apps))
    return Discovery(apps=tuple(apps), warnings=tuple(warnings))


def _still_held(held: Mapping[str, Path], drafts: Iterable[_Draft]) -> dict[str, Path]:
    """The ids of `held` whose manifest is still found and still says that id (or no usable id
    at all: a half-saved file, which a reload refuses while its app runs on)."""
    still: dict[str, Path] = {}
    for draft in drafts:
        said = draft.manifest.id if draft.manifest is not None else None
        for app_id, source in held.items():
            if draft.source != source:
                continue
            # Inline apps share config.toml as their source: only their id tells them apart.
            if said == app_id or (said is None and draft.inline_path is None):
                still[app_id] = source
    return still


def _config_warnings(config: Config, ids: list[str], *, found_any: bool) -> Iterator[Problem]:
    """Settings that name apps which are not there: most likely typos, which would otherwise
    silently disable (allow) or fail to disable (deny, entries) an app."""
    if not found_any:
        yield Problem(
            config.path, "no app found: check apps.discovery_paths and apps.manifest_name"
        )
    for app_id in config.apps.entries:
        if app_id not in ids:
            entry = dotted(("apps", "entries", app_id))
            yield Problem(
                config.path, f"{entry} names no discovered app{did_you_mean(app_id, ids)}"
            )
    for key in ("allow", "deny"):
        for pattern in getattr(config.apps, key):
            if ids and not any(glob_match(pattern, app_id) for app_id in ids):
                hint = did_you_mean(pattern, ids)
                yield Problem(
                    config.path, f"apps.{key} pattern '{pattern}' matches no discovered app{hint}"
                )


@attrs.frozen
class _Draft:
    """A manifest read and typed, before config and the rules are applied."""

    source: Path
    folder: Path  # where relative paths in it resolve
    manifest: Manifest | None  # None when the text could not be read or parsed
    problems: tuple[KeyProblem, ...]
    warnings: tuple[KeyProblem, ...]
    inline_path: KeyPath | None = None  # ("apps", "inline", id) for an app in config.toml

    def label(self, path: KeyPath) -> str:
        """A field as the file spells it: `startupTimeoutSeconds`, `apps.inline.x.command`."""
        if self.inline_path is not None:
            return dotted((*self.inline_path, *path))
        return dotted(path, json_key)


def _read_manifest(path: Path) -> _Draft:
    def unusable(why: str) -> _Draft:
        return _Draft(path, path.parent, None, (((), why),), ())

    try:
        with path.open("rb") as file:
            data = file.read(MAX_MANIFEST_BYTES + 1)
        if len(data) > MAX_MANIFEST_BYTES:
            return unusable(f"is larger than {MAX_MANIFEST_BYTES // 1024} KiB; is it a manifest?")
        text = data.decode("utf-8-sig")
    except OSError as error:
        return unusable(f"cannot be read ({error.strerror or error}); check its permissions")
    except UnicodeDecodeError as error:
        return unusable(f"is not UTF-8 text ({error.reason} at byte offset {error.start})")
    try:
        parsed = parse_manifest_text(text)
    except ManifestSyntaxError as error:
        return unusable(str(error))
    manifest, found = structure_manifest(parsed)
    return _Draft(path, path.parent, manifest, tuple(found), tuple(unknown_key_warnings(manifest)))


def _read_inline(app_id: str, table: dict[str, Any], config: Config) -> _Draft:
    # Keys that only an entry has (restart, protocol, startup_timeout_s...) belong in
    # [apps.entries.<id>], which applies to inline apps as to any other.
    misplaced = [k for k in table if k in _ENTRY_ONLY_KEYS]
    manifest, found = structure_manifest(
        {k: v for k, v in table.items() if k != "id" and k not in misplaced}, inline=True
    )
    entry = dotted(("apps", "entries", app_id))
    found += [((k,), f"is not a manifest field: set it in [{entry}]") for k in misplaced]
    if "id" in table:
        found.append((("id",), f"is not needed: the table name '{app_id}' is the app's id"))
    return _Draft(
        config.path,
        config.folder,
        attrs.evolve(manifest, id=app_id),
        tuple(found),
        (),
        inline_path=("apps", "inline", app_id),
    )


_ENTRY_ONLY_KEYS = {a.name for a in attrs.fields(AppEntry)} - {
    a.name for a in attrs.fields(Manifest)
}


# Entry keys that replace a manifest field, by the attribute they replace; headers
# and environment are merged instead.
_REPLACED_BY_ENTRY = {
    "transport": "transport",
    "command": "command",
    "arguments": "arguments",
    "url": "url",
    "tool_name_prefix": "tool_name_prefix",
    "auth": "auth",
    "scopes": "scopes",
    "client_id": "client_id",
    "client_secret": "client_secret",
    "startup_timeout_seconds": "startup_timeout_s",
    "request_timeout_seconds": "request_timeout_s",
}


@attrs.frozen
class Overrides:
    """What an entry changed in a manifest: replaced attributes (-> the entry key that replaced
    them) and, per merged map, the keys it brought (header names in lower case)."""

    replaced: dict[str, str] = attrs.Factory(dict)
    merged: dict[str, frozenset[str]] = attrs.Factory(dict)

    def caused(self, key: KeyPath) -> list[str]:
        """The entry keys behind the problem reported on `key` (none if the entry is not
        involved)."""
        field = str(key[0])
        if field in self.merged and len(key) > 1:
            name = str(key[1]).lower() if field == "headers" else str(key[1])
            return [field] if name in self.merged[field] else []
        return [self.replaced[f] for f in sorted(rule_reads(key)) if f in self.replaced]


def apply_entry(manifest: Manifest, entry: AppEntry | None) -> tuple[Manifest, Overrides]:
    """The manifest with the entry's overrides applied, and what they changed."""
    if entry is None:
        return manifest, Overrides()
    replaced = {
        field: key for field, key in _REPLACED_BY_ENTRY.items() if getattr(entry, key) is not None
    }
    changes: dict[str, Any] = {field: getattr(entry, key) for field, key in replaced.items()}
    merged: dict[str, frozenset[str]] = {}
    if entry.headers:
        # Header names are case-insensitive: the entry's spelling replaces the manifest's.
        names = frozenset(name.lower() for name in entry.headers)
        kept = {k: v for k, v in manifest.headers.items() if k.lower() not in names}
        changes["headers"] = {**kept, **entry.headers}
        merged["headers"] = names
    if entry.environment:
        changes["environment"] = {**manifest.environment, **entry.environment}
        merged["environment"] = frozenset(entry.environment)
    return attrs.evolve(manifest, **changes), Overrides(replaced, merged)


def _judge(
    draft: _Draft,
    config: Config,
    environ: Mapping[str, str],
    claimed: Mapping[str, Path],
    running: frozenset[str] = frozenset(),
) -> DiscoveredApp:
    """Apply the entry, the rules, the duplicate check and the filters to one manifest."""
    folder = config.folder

    def typed(path: KeyPath, why: str) -> Problem:
        return Problem(draft.source, f"{draft.label(path)} {why}" if path else why)

    manifest = draft.manifest
    if manifest is None:
        return DiscoveredApp(
            id=None,
            source=draft.source,
            state=AppState.DISCOVERED,
            errors=tuple(typed(path, why) for path, why in draft.problems),
        )

    app_id = manifest.id
    entry = config.apps.entries.get(app_id) if app_id is not None else None
    effective, overrides = apply_entry(manifest, entry)
    # A field the entry replaces is validated as the entry gives it (an override can fix it).
    errors = [
        typed(path, why)
        for path, why in draft.problems
        if not path or path[0] not in overrides.replaced
    ]
    warnings = [typed(path, why) for path, why in draft.warnings]

    def quote(field: str) -> str:
        return f"'{draft.label((field,))}'"

    def said(key: KeyPath, why: str) -> Problem:
        if entry_keys := overrides.caused(key):
            keys = " and ".join(dotted(("apps", "entries", str(app_id), k)) for k in entry_keys)
            why += f" (set by {keys} in {config.path.name})"
        return Problem(draft.source, why)

    # Rules skip the fields whose type is wrong: they were already reported, and checking the
    # default left in their place would only add false problems.
    mistyped = {str(path[0]) for path, _ in draft.problems if path} - set(overrides.replaced)
    rule_errors, rule_warnings = manifest_problems(effective, environ, quote, skip=mistyped)
    errors += [said(key, why) for key, why in rule_errors]
    warnings += [said(key, why) for key, why in rule_warnings]
    duplicate_of = None
    if app_id is not None and claimed.get(app_id, draft.source) != draft.source:
        duplicate_of = claimed[app_id]
        where = display_path(duplicate_of, folder)
        why = f"duplicate id '{app_id}', already defined by {where}"
        if app_id in running:
            why += (
                ", whose app is running: a reload never gives a running app's id to another"
                " manifest; give this one another id"
            )
        errors.append(Problem(draft.source, why))

    reason = disabled_reason(app_id, config.apps) if app_id is not None else None
    definition = None
    if not errors:
        definition = make_definition(
            effective,
            folder=draft.folder,
            protocol=(entry.protocol if entry and entry.protocol else config.apps.protocol),
            supervision=effective_policy(config.supervision, entry),
        )
        definition = attrs.evolve(definition, sampling=bool(entry and entry.sampling))
    # Disabled is reached only from Validated: an invalid app stays Discovered, and
    # its disabled reason is kept only to say that it would not run anyway.
    if errors:
        state = AppState.DISCOVERED
    else:
        state = AppState.DISABLED if reason is not None else AppState.VALIDATED
    return DiscoveredApp(
        id=app_id,
        source=draft.source,
        state=state,
        transport=normalize_transport(effective.transport) or effective.transport,
        definition=definition,
        errors=tuple(errors),
        warnings=tuple(warnings),
        disabled_reason=reason,
        inline=draft.inline_path is not None,
        duplicate_of=duplicate_of,
    )


def log_discovery(discovery: Discovery) -> None:
    """One log line per app found (where, and how it was judged: Validated, Disabled or
    refused), then each problem of a refused app on its own line, and the folder warnings."""
    for warning in discovery.warnings:
        logger.warning("%s", warning)
    for app in discovery.apps:
        name = app.id or str(app.source)
        where = "config.toml" if app.inline else str(app.source)
        if app.state is AppState.VALIDATED:
            logger.info("app %s: found in %s: Validated (%s)", name, where, app.transport)
        elif app.state is AppState.DISABLED:
            logger.info("app %s: found in %s: Disabled (%s)", name, where, app.disabled_reason)
        else:
            logger.error(
                "app %s: found in %s: refused, %d problem(s)", name, where, len(app.errors)
            )
            for error in app.errors:
                logger.error("app %s is invalid: %s", name, error)
