"""The workspace's files, read, saved and listed: blocking calls, each confined to the root
(`actors/files/confine.py`). The workspace actor runs them in worker threads, one save of a
file at a time.

**ETags** are a hash of the content (BLAKE2b, 128 bits), never the modification time: two saves
within one tick of the clock, or a file put back as it was, must read as what they are. The
same bytes give the same ETag, so a view that saved and a view that reads agree without asking.

**A save** is atomic: the new content goes to a temporary file in the same folder (hidden, so
no listing shows it), is flushed and `fsync`ed, and is renamed over the file; the folder is
then `fsync`ed so the rename itself survives a crash. A reader, or a process killed at any
moment, sees the old file or the new one, never a mix. The file keeps its permission bits.
With `if_match`, the save happens only if the file's current ETag is that one; the check and
the rename run under the actor's lock of that file, so two saves through the host never
interleave (a program writing the file behind the host's back can still race the last
microseconds: the host has no lock on it to take).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import mimetypes
import os
import secrets
import stat
from pathlib import Path
from typing import Literal

import attrs

from actors.catalog import Wire
from actors.files.confine import (
    FileRefused,
    NoSuchFile,
    NotAFolder,
    check_regular,
    inside,
    open_file,
    open_folder,
    resolve,
    too_large,
)
from supervisor.model.workspace import WorkspaceConfig

# The temporary files of saves in progress: hidden (a dot first), so neither the listing nor
# the change watcher shows them, and named so that one left by a crash is recognisable.
TEMP_PREFIX = ".mcpapps-save-"
_CHUNK = 1024 * 1024

Representation = Literal["text", "blob"]
# Where the OpenAI MCP extensions put a host resource's version and writability.
RESOURCE_META = "openai/resource"


class WriteRefused(FileRefused):
    """The save is not allowed (a read-only workspace or file, content that is not valid)."""


@attrs.frozen
class Located:
    """A file of the workspace: `path` is its real, absolute path; `relative` the path as the
    person named it from the root; `name` its last name (which a view is told)."""

    path: Path
    relative: str
    name: str


@attrs.frozen
class Content:
    data: bytes
    etag: str
    writable: bool


@attrs.frozen
class Saved:
    etag: str


@attrs.frozen
class ChangedSince:
    """Not saved: the file changed since the version the save was based on (the wire's
    `"conflict"` outcome; not the error family's `Conflict`, which refuses a request)."""

    etag: str | None  # the current version's; None when the file is gone


@attrs.frozen
class TooLarge:
    max_bytes: int


WriteOutcome = Saved | ChangedSince | TooLarge


@attrs.frozen
class Entry:
    name: str
    path: str  # relative to the root, '/'-separated
    kind: Literal["folder", "file"]
    size: int | None = None  # files only
    modified: float | None = None  # Unix seconds


@attrs.frozen
class Listing:
    path: str  # the folder, relative to the root ('' for the root)
    entries: tuple[Entry, ...]


def etag(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def mime_type(name: str) -> str | None:
    return mimetypes.guess_type(name, strict=False)[0]


class Workspace:
    """The root (its real path) and the limits of `[workspace]`."""

    def __init__(self, config: WorkspaceConfig) -> None:
        assert config.root is not None  # a config rule
        self.root = Path(os.path.realpath(config.root))
        self.config = config

    def _given(self, given: str) -> str:
        """An absolute path under the root as the config names it (which may itself be, or
        lie under, a symlink) made relative: `parts` knows only the real root."""
        named = self.config.root
        path = Path(given)
        if path.is_absolute() and named is not None and path.is_relative_to(named):
            return str(path.relative_to(named))
        return given

    def locate(self, given: str) -> Located:
        """The regular file `given` names, checked (not read)."""
        real = resolve(self.root, self._given(given))
        shown = given.strip("/") or "."
        try:
            seen = os.stat(real)
        except FileNotFoundError:
            raise NoSuchFile(f"'{shown}' does not exist in the workspace") from None
        check_regular(seen, shown)
        # Opened only to be read: a file no read could take is refused before a view opens.
        if seen.st_size > self.config.max_read_bytes:
            raise too_large(shown, seen.st_size, self.config.max_read_bytes)
        relative = str(real.relative_to(self.root)) if real != self.root else ""
        return Located(real, relative, real.name)

    def relative(self, path: Path) -> str:
        return str(path.relative_to(self.root))

    def writable(self, path: Path) -> bool:
        """Whether a save of `path` could succeed: the workspace allows saves, and the file and
        its folder (where the rename happens) are writable by this process."""
        gone = not os.path.lexists(path)  # a save puts it back
        return (
            self.config.writable
            and (gone or os.access(path, os.W_OK, follow_symlinks=False))
            and os.access(path.parent, os.W_OK)
        )

    def read(self, path: Path) -> Content:
        """The whole file, refused unread when bigger than `max_read_bytes`."""
        limit = self.config.max_read_bytes
        with open_file(self.root, path, limit) as (fd, _size):
            data = _read_at_most(fd, limit + 1)
        if len(data) > limit:  # it grew after the size was checked
            raise too_large(self.relative(path), len(data), limit)
        return Content(data, etag(data), self.writable(path))

    def current_etag(self, path: Path) -> str | None:
        """The ETag of the file as it is now (hashed as it is read, whatever its size), or
        None if it is gone."""
        try:
            with open_file(self.root, path) as (fd, _size):
                digest = hashlib.blake2b(digest_size=16)
                while chunk := os.read(fd, _CHUNK):
                    digest.update(chunk)
                return digest.hexdigest()
        except NoSuchFile:
            return None

    def write(self, path: Path, data: bytes, if_match: str | None) -> WriteOutcome:
        """Replace the file with `data`, atomically; with `if_match`, only if it is still that
        version. The caller holds the file's lock."""
        if len(data) > self.config.max_write_bytes:
            return TooLarge(self.config.max_write_bytes)
        if not self.writable(path):
            raise WriteRefused(self._read_only_why(path))
        if if_match is not None:
            current = self.current_etag(path)
            if current != if_match:
                return ChangedSince(current)
        shown = self.relative(path)
        with open_folder(self.root, path.parent) as folder:
            mode = 0o644
            with contextlib.suppress(FileNotFoundError):
                seen = os.stat(path.name, dir_fd=folder, follow_symlinks=False)
                check_regular(seen, shown)
                mode = stat.S_IMODE(seen.st_mode)
            temp = TEMP_PREFIX + secrets.token_hex(8)
            fd = os.open(
                temp,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o600,
                dir_fd=folder,
            )
            try:
                try:
                    os.fchmod(fd, mode)
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view) :]
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.rename(temp, path.name, src_dir_fd=folder, dst_dir_fd=folder)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=folder)
                raise
            os.fsync(folder)
        return Saved(etag(data))

    def _read_only_why(self, path: Path) -> str:
        if not self.config.writable:
            return "the workspace is read-only ([workspace] writable = false): nothing is saved"
        return f"'{self.relative(path)}' is read-only for the supervisor: nothing is saved"

    def list_folder(self, given: str) -> Listing:
        """The folder's folders, then its files, each sorted by name; hidden names (a dot
        first) are left out, and so is anything that is not a folder or a regular file, or
        that is a symlink leading out of the workspace (it could not be opened anyway)."""
        real = resolve(self.root, self._given(given))
        if not real.is_dir():
            if not real.exists():
                raise NoSuchFile(f"'{given}' does not exist in the workspace")
            raise NotAFolder(f"'{given}' is not a folder")
        folder_rel = str(real.relative_to(self.root)) if real != self.root else ""
        folders: list[Entry] = []
        files: list[Entry] = []
        with open_folder(self.root, real) as fd, os.scandir(fd) as found:
            for item in found:
                if item.name.startswith("."):
                    continue
                try:
                    if item.is_symlink() and not inside(
                        self.root, Path(os.path.realpath(real / item.name))
                    ):
                        continue
                    st = os.stat(item.name, dir_fd=fd)  # through a symlink, to what it names
                except OSError:
                    continue  # gone since the folder was read, or a dangling symlink
                rel = f"{folder_rel}/{item.name}" if folder_rel else item.name
                if stat.S_ISDIR(st.st_mode):
                    folders.append(Entry(item.name, rel, "folder", modified=st.st_mtime))
                elif stat.S_ISREG(st.st_mode):
                    files.append(Entry(item.name, rel, "file", st.st_size, st.st_mtime))

        def by_name(e: Entry) -> tuple[str, str]:
            return (e.name.casefold(), e.name)

        return Listing(folder_rel, (*sorted(folders, key=by_name), *sorted(files, key=by_name)))


def _read_at_most(fd: int, n: int) -> bytes:
    chunks: list[bytes] = []
    left = n
    while left > 0:
        try:
            chunk = os.read(fd, min(left, _CHUNK))
        except BlockingIOError:  # O_NONBLOCK on a regular file never blocks; say so if it does
            raise FileRefused("the file could not be read without waiting") from None
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def decode(data: bytes, wanted: Representation | None) -> tuple[Representation, str]:
    """The content as the read answers it: text when asked for text (it must be UTF-8), a
    base64 blob when asked for a blob, and when not asked, text if it is UTF-8 without NUL
    bytes, else a blob."""
    if wanted != "blob":
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            if wanted == "text":
                raise FileRefused(
                    "the file is not UTF-8 text: read it as a blob"
                    ' (_meta["openai/resource"].representation = "blob")'
                ) from None
        else:
            if wanted == "text" or "\x00" not in text:
                return "text", text
    return "blob", base64.b64encode(data).decode("ascii")


def encode(text: str | None, blob: str | None, max_bytes: int) -> bytes | TooLarge:
    """The bytes of a save: UTF-8 text or a base64 blob (exactly one of them). A blob whose
    length alone says it is too large is not decoded."""
    if (text is None) == (blob is None):
        raise WriteRefused("a save carries exactly one of 'text' and 'blob'")
    if text is not None:
        if len(text) > max_bytes:  # each character is at least one byte
            return TooLarge(max_bytes)
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:
            raise WriteRefused("the text is not valid Unicode (a lone surrogate)") from None
    assert blob is not None
    if len(blob) // 4 * 3 > max_bytes + 2:
        return TooLarge(max_bytes)
    try:
        return base64.b64decode(blob, validate=True)
    except (binascii.Error, ValueError):
        raise WriteRefused("'blob' is not valid base64") from None


def read_result(uri: str, name: str, content: Content, wanted: Representation | None) -> Wire:
    """The `resources/read` result of a host resource, as the view receives it."""
    kind, value = decode(content.data, wanted)
    item: Wire = {"uri": uri, kind: value}
    if (mime := mime_type(name)) is not None:
        item["mimeType"] = mime
    item["_meta"] = {RESOURCE_META: {"etag": content.etag, "writable": content.writable}}
    return {"contents": [item]}


def write_result(outcome: Saved | ChangedSince | TooLarge) -> Wire:
    """The `openai/resources/write` result, as the view receives it (a conflict with a file that
    is gone is the caller's to refuse: the spec's conflict always names a version)."""
    match outcome:
        case Saved(etag):
            return {"outcome": "saved", "etag": etag}
        case ChangedSince(etag):
            return {"outcome": "conflict", "etag": etag}
        case TooLarge(max_bytes):
            return {"outcome": "too-large", "maxBytes": max_bytes}
