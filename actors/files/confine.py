"""Confinement: a path a client names becomes a file or folder inside the workspace root, or a
`FileRefused` that says why. Nothing outside the root is ever opened.

Three steps, each closing a hole the one before leaves open:

1. `parts` (pure): the name as given. `..` is refused outright (never "normalised away": a
   path that climbs is a mistake or an attack, and either way worth saying), an absolute path
   must lie under the root, and a NUL byte or an empty name is refused.
2. `resolve`: symlinks followed (`realpath`), and the result must still lie under the real
   root. A symlink inside the workspace to a file inside it is fine; one to `/etc` is refused.
3. `open_folder` / `open_file`: the resolved path is opened again from the root, one folder
   at a time with `O_NOFOLLOW`, so a folder swapped for a symlink between steps 2 and 3 is
   refused instead of followed. The last name is `lstat`ed before it is opened: a FIFO, a
   device or a socket is refused without ever being opened (opening a FIFO for reading
   blocks until a writer comes; a device may do anything). The file is then opened with
   `O_NOFOLLOW | O_NONBLOCK` and checked again with `fstat` against what `lstat` saw, so a
   name swapped in between is refused too.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from supervisor.model.errors import Refusal


class FileRefused(Refusal):
    """The workspace will not serve this path or file; the message says why, for a person."""


class OutsideWorkspace(FileRefused):
    """The path leads out of the workspace root (`..`, an absolute path elsewhere, a symlink)."""


class NoSuchFile(FileRefused):
    """Nothing by that name in the workspace."""


class NotAFile(FileRefused):
    """A folder where a file was wanted, or a FIFO, device or socket: never opened."""


class NotAFolder(FileRefused):
    """A file (or anything else) where a folder was wanted."""


class FileTooLarge(FileRefused):
    """Bigger than `[workspace] max_read_bytes`: refused before a byte of it is read."""

    def __init__(self, message: str, size: int, limit: int) -> None:
        super().__init__(message)
        self.size = size
        self.limit = limit


def parts(root: Path, given: str) -> tuple[str, ...]:
    """The names leading from `root` to `given` (empty: the root itself), checked without
    touching the disk. `root` is absolute; `given` is relative to it, or absolute under it."""
    if "\x00" in given:
        raise FileRefused("a path cannot contain a NUL character")
    path = PurePosixPath(given)
    if path.is_absolute():
        if not path.is_relative_to(root):
            raise OutsideWorkspace(f"'{given}' is outside the workspace ({root})")
        path = path.relative_to(root)
    names = tuple(p for p in path.parts if p not in ("", "."))
    if ".." in names:
        raise OutsideWorkspace(f"'{given}' climbs out with '..': name a path inside the workspace")
    return names


def inside(root: Path, path: Path) -> bool:
    """Whether `path` is `root` or under it (both absolute and already resolved)."""
    return path == root or path.is_relative_to(root)


def resolve(root: Path, given: str) -> Path:
    """`given` with every symlink followed; it must stay under `root` (a real path)."""
    names = parts(root, given)
    real = Path(os.path.realpath(root.joinpath(*names)))
    if not inside(root, real):
        raise OutsideWorkspace(
            f"'{given}' is a symlink (or inside one) that leads out of the workspace"
        )
    return real


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@contextlib.contextmanager
def open_folder(root: Path, real: Path) -> Iterator[int]:
    """A descriptor of the folder `real` (a resolved path under `root`), reached from `root`
    one name at a time without following a symlink."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in real.relative_to(root).parts:
            try:
                inner = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                raise NoSuchFile(f"'{_shown(root, real)}' does not exist") from None
            except OSError as error:
                if _is_symlink(name, fd):
                    # The path was resolved without it: it appeared since (ELOOP, or ENOTDIR
                    # with O_DIRECTORY), and is not followed.
                    raise FileRefused(
                        f"'{_shown(root, real)}' changed while it was opened (a symlink"
                        " appeared in its path): try again"
                    ) from None
                if isinstance(error, NotADirectoryError):
                    raise NotAFolder(f"'{_shown(root, real)}' is not a folder") from None
                raise FileRefused(
                    f"cannot open '{_shown(root, real)}' ({error.strerror})"
                ) from None
            os.close(fd)
            fd = inner
        yield fd
    finally:
        os.close(fd)


def _is_symlink(name: str, folder: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        return False


def check_regular(st: os.stat_result, shown: str) -> None:
    """Refuse anything but a regular file, naming what it is."""
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise NotAFile(f"'{shown}' is a folder, not a file")
    kind = (
        "a FIFO (named pipe)"
        if stat.S_ISFIFO(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a symlink"
        if stat.S_ISLNK(mode)
        else "not a regular file"
    )
    raise NotAFile(f"'{shown}' is {kind}: only regular files can be opened")


@contextlib.contextmanager
def open_file(root: Path, real: Path, limit: int | None = None) -> Iterator[tuple[int, int]]:
    """A read-only descriptor of the regular file `real` and its size. With `limit`, a file
    bigger than it is refused before it is opened."""
    shown = _shown(root, real)
    with open_folder(root, real.parent) as folder:
        try:
            seen = os.stat(real.name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            raise NoSuchFile(f"'{shown}' does not exist") from None
        check_regular(seen, shown)
        if limit is not None and seen.st_size > limit:
            raise too_large(shown, seen.st_size, limit)
        try:
            fd = os.open(
                real.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder
            )
        except OSError as error:
            raise FileRefused(f"cannot open '{shown}' ({error.strerror})") from None
    try:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (seen.st_dev, seen.st_ino):
            raise FileRefused(f"'{shown}' was replaced while it was opened: try again")
        check_regular(now, shown)
        yield fd, now.st_size
    finally:
        os.close(fd)


def too_large(shown: str, size: int, limit: int) -> FileTooLarge:
    return FileTooLarge(
        f"'{shown}' is {size} bytes, more than [workspace] max_read_bytes ({limit}):"
        " it is not read",
        size,
        limit,
    )


def _shown(root: Path, real: Path) -> str:
    """A path as the messages name it: relative to the root."""
    return str(real.relative_to(root)) if inside(root, real) and real != root else "."
