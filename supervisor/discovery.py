"""Discovery (SPEC §3): from config and folders of manifests to a list of apps with their states.

`discover()` reads folders and files but starts nothing. Each app comes out Validated, Disabled,
or Discovered with the errors that keep it from being valid; a problem with one manifest or one
folder never hides the others.
"""

from __future__ import annotations

import os
import os.path
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from supervisor.config import AppEntry, Config, effective_policy
from supervisor.filters import disabled_reason
from supervisor.lifecycle import AppState
from supervisor.manifest import (
    AppDefinition,
    Manifest,
    ManifestSyntaxError,
    TypeProblem,
    json_key,
    make_definition,
    manifest_problems,
    normalize_transport,
    parse_manifest_text,
    structure_manifest,
    unknown_key_warnings,
)
from supervisor.structuring import KeyPath, did_you_mean, dotted

MAX_MANIFEST_BYTES = 1024 * 1024


@attrs.frozen
class Problem:
    """One sentence about one file (or folder): `source: message`."""

    source: Path
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"

    def shown(self, base: Path) -> str:
        """The sentence with the path relative to `base` when it lies under it."""
        return f"{display_path(self.source, base)}: {self.message}"


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

    @property
    def valid(self) -> bool:
        return not self.errors


@attrs.frozen
class Discovery:
    apps: tuple[DiscoveredApp, ...]
    warnings: tuple[Problem, ...]  # about folders and config, not about one app


def display_path(path: Path, base: Path) -> str:
    """`path` relative to `base` when it lies under it, else as it is."""
    try:
        return str(path.relative_to(base))
    except ValueError:
        return str(path)


def find_manifests(roots: Iterable[Path], name: str) -> tuple[list[Path], list[Problem]]:
    """Every file called `name` under `roots`, recursively, in a fixed order.

    Each folder's own manifest comes before its sub-folders, which are visited in name order.
    Links to folders are followed, but every real folder is scanned once (loop-safe); whatever
    cannot be read is skipped with a warning, without losing its siblings.
    """
    found: list[Path] = []
    warnings: list[Problem] = []
    scanned: set[tuple[int, int]] = set()
    for root in roots:
        if problem := _root_problem(root):
            warnings.append(problem)
            continue
        stack = [root]
        while stack:
            folder = stack.pop()
            try:
                identity = os.stat(folder)
                if (identity.st_dev, identity.st_ino) in scanned:
                    warnings.append(_already_scanned(folder, is_root=folder is root))
                    continue
                scanned.add((identity.st_dev, identity.st_ino))
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


def _already_scanned(folder: Path, *, is_root: bool) -> Problem:
    if is_root:
        return Problem(
            folder,
            "discovery path is already scanned (listed twice, or inside another discovery path)",
        )
    return Problem(
        folder,
        f"skipped: it leads to {os.path.realpath(folder)}, which is already scanned"
        " (a symbolic link loop or a second link to one folder)",
    )


def discover(config: Config, environ: Mapping[str, str]) -> Discovery:
    """Find, check and filter every app that config.toml points at."""
    if not config.apps.enabled:
        return Discovery(
            apps=(),
            warnings=(Problem(config.path, "apps.enabled is false: no app is discovered"),),
        )
    files, warnings = find_manifests(config.apps.discovery_paths, config.apps.manifest_name)
    drafts = [_read_manifest(path) for path in files]
    drafts += [_read_inline(app_id, table, config) for app_id, table in config.apps.inline.items()]

    apps: list[DiscoveredApp] = []
    claimed: dict[str, Path] = {}
    for draft in drafts:
        app = _judge(draft, config, environ, claimed)
        if app.id is not None:
            claimed.setdefault(app.id, app.source)
        apps.append(app)

    for app_id in config.apps.entries:
        if app_id not in claimed:
            hint = did_you_mean(app_id, list(claimed))
            warnings.append(
                Problem(
                    config.path,
                    f"{dotted(('apps', 'entries', app_id))} names no discovered app{hint}",
                )
            )
    return Discovery(apps=tuple(apps), warnings=tuple(warnings))


@attrs.frozen
class _Draft:
    """A manifest read and typed, before config and the rules are applied."""

    source: Path
    folder: Path  # where relative paths in it resolve
    manifest: Manifest | None  # None when the text could not be read or parsed
    problems: tuple[TypeProblem, ...]
    warnings: tuple[TypeProblem, ...]
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
    manifest, found = structure_manifest({k: v for k, v in table.items() if k != "id"}, toml=True)
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


# Entry keys that replace a manifest field (SPEC §3); headers and environment are merged.
_REPLACED_BY_ENTRY = {
    "transport": "transport",
    "command": "command",
    "arguments": "arguments",
    "url": "url",
    "tool_name_prefix": "tool_name_prefix",
    "startup_timeout_s": "startup_timeout_seconds",
    "request_timeout_s": "request_timeout_seconds",
}


def apply_entry(manifest: Manifest, entry: AppEntry | None) -> tuple[Manifest, dict[str, str]]:
    """The manifest with the entry's overrides applied, and which fields they touched
    (manifest attribute -> entry key)."""
    if entry is None:
        return manifest, {}
    changes: dict[str, Any] = {}
    touched: dict[str, str] = {}
    for entry_key, field in _REPLACED_BY_ENTRY.items():
        value = getattr(entry, entry_key)
        if value is not None:
            changes[field] = value
            touched[field] = entry_key
    if entry.headers:
        # Header names are case-insensitive: the entry's spelling replaces the manifest's.
        replaced = {name.lower() for name in entry.headers}
        kept = {k: v for k, v in manifest.headers.items() if k.lower() not in replaced}
        changes["headers"] = {**kept, **entry.headers}
        touched["headers"] = "headers"
    if entry.environment:
        changes["environment"] = {**manifest.environment, **entry.environment}
        touched["environment"] = "environment"
    return attrs.evolve(manifest, **changes), touched


def _judge(
    draft: _Draft, config: Config, environ: Mapping[str, str], claimed: Mapping[str, Path]
) -> DiscoveredApp:
    """Apply the entry, the rules, the duplicate check and the filters to one manifest."""
    folder = config.folder

    def typed(path: KeyPath, why: str) -> Problem:
        return Problem(draft.source, f"{draft.label(path)} {why}" if path else why)

    manifest = draft.manifest
    if manifest is None:
        errors = tuple(typed(path, why) for path, why in draft.problems)
        return DiscoveredApp(id=None, source=draft.source, state=AppState.DISCOVERED, errors=errors)

    app_id = manifest.id
    entry = config.apps.entries.get(app_id) if app_id is not None else None
    effective, touched = apply_entry(manifest, entry)
    # A field the entry replaces is validated as the entry gives it (an override can fix it).
    replaced = {f for f in touched if f not in ("headers", "environment")}
    errors = [
        typed(path, why) for path, why in draft.problems if not path or path[0] not in replaced
    ]
    warnings = [typed(path, why) for path, why in draft.warnings]

    def quote(field: str) -> str:
        return f"'{draft.label((field,))}'"

    def said(field: str, why: str) -> Problem:
        if field in touched:
            key = touched[field]
            verb = "merged with" if field in ("headers", "environment") else "set by"
            why += f" ({verb} {dotted(('apps', 'entries', app_id, key))} in {config.path.name})"
        return Problem(draft.source, why)

    # Rules skip the fields whose type is wrong: they were already reported, and checking the
    # default left in their place would only add false problems.
    mistyped = {str(path[0]) for path, _ in draft.problems if path} - replaced
    rule_errors, rule_warnings = manifest_problems(effective, environ, quote, skip=mistyped)
    errors += [said(field, why) for field, why in rule_errors]
    warnings += [said(field, why) for field, why in rule_warnings]
    if app_id is not None and app_id in claimed:
        where = display_path(claimed[app_id], folder)
        errors.append(Problem(draft.source, f"duplicate id '{app_id}', already defined by {where}"))

    reason = disabled_reason(app_id, config.apps) if app_id is not None else None
    definition = None
    if not errors:
        definition = make_definition(
            effective,
            folder=draft.folder,
            protocol=(entry.protocol if entry and entry.protocol else config.apps.protocol),
            supervision=effective_policy(config.supervision, entry),
        )
    # Disabled is reached only from Validated (SPEC §4): an invalid app stays Discovered, and
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
    )
