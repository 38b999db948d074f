"""`[apps] watch = true`: reload when config.toml or a file under a discovery path changes.

The watching is `watchfiles` (inotify on Linux, through its Rust core), whose `awatch` runs on
anyio and so on Trio. Changes are debounced: an editor's save (write a temporary file, rename
it, touch the folder) or a `git pull` that rewrites many manifests at once is one batch, and
one batch is one reload.
"""

from __future__ import annotations

import logging
import os.path
from pathlib import Path

import anyio
import trio
import watchfiles

from supervisor.model.config import Config
from supervisor.model.reload import ReloadRefused
from supervisor.process.reloader import Reloader

logger = logging.getLogger("mcpapps.supervisor")

QUIET_MS = 300  # a batch ends once no change has come for this long...
DEBOUNCE_MS = 2000  # ...or after this long, if changes keep coming


def watched_paths(config: Config) -> tuple[list[Path], list[Path]]:
    """The folders to watch (the config's folder and every discovery path that exists), and
    the files and folders whose changes count: the config file and the discovery paths."""
    relevant = [config.path, *config.apps.discovery_paths]
    folders = [config.folder, *(p for p in config.apps.discovery_paths if p.is_dir())]
    return _outermost(folders), relevant


def _outermost(folders: list[Path]) -> list[Path]:
    """The folders not inside another one of the list (each is watched recursively)."""
    kept: list[Path] = []
    for folder in sorted(set(folders), key=lambda p: len(p.parts)):
        if not any(folder.is_relative_to(k) for k in kept):
            kept.append(folder)
    return kept


def counts(path: str, relevant: list[Path], state_dir: Path) -> bool:
    """Whether a change of `path` should reload: the config file, or anything under a discovery
    path, but nothing of the state dir (the session database changes all the time)."""
    changed = Path(os.path.normpath(path))
    if changed.is_relative_to(state_dir):
        return False
    return any(changed == p or changed.is_relative_to(p) for p in relevant)


async def watch_and_reload(config: Config, reloader: Reloader) -> None:
    """Reload once per batch of relevant changes, until cancelled."""
    folders, relevant = watched_paths(config)
    stop = anyio.Event()

    def keep(change: watchfiles.Change, path: str) -> bool:
        return counts(path, relevant, config.state.dir)

    async def watch() -> None:
        async for changes in watchfiles.awatch(
            *folders, watch_filter=keep, debounce=DEBOUNCE_MS, step=QUIET_MS, stop_event=stop
        ):
            names = sorted({path for _, path in changes})
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            try:
                await reloader.reload(f"changed: {shown}")
            except ReloadRefused:
                return
            except Exception:
                logger.exception("the reload after a file change failed; the apps run on")

    async def stop_on_cancel() -> None:
        # The watcher waits in a worker thread that a cancellation cannot interrupt; the stop
        # event ends that wait within a step, so shutdown is not held up.
        try:
            await trio.sleep_forever()
        finally:
            stop.set()

    logger.info("watching %s for changes", ", ".join(map(str, folders)))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(stop_on_cancel)
        await watch()
        nursery.cancel_scope.cancel()
