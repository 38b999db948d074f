"""The control page's static files (`/static/…`), answered by the front door itself: each is read
once, with its ETag, and read again only when it changes on disk (a developer's edit shows on the
next load). A page load fetches some forty of them; through Quart each cost about 2.7 ms of the
supervisor's CPU, most of it Quart's own work per request (docs/operations.md, "Round 5").

Only exact paths of the page's files are answered here, so a path that climbs (`..`) or names
any other file is never looked up on disk; what this does not answer (an unknown file, a method
other than GET and HEAD) goes on to the Quart routes, which refuse it with the error table.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

# Revalidated on every load (`no-cache`): with the ETag that costs a 304, not the file.
PAGE_HEADERS = {
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
Headers = list[tuple[bytes, bytes]]


@attrs.frozen
class PageFile:
    """One file as it is served: its body, and the headers of a 200 and of a 304."""

    body: bytes
    etag: str
    headers: Headers  # of a 200 (with its length)
    unchanged: Headers  # of a 304
    stamp: tuple[int, int]  # the file's (mtime_ns, size) when it was read

    def answer(self, if_none_match: str | None) -> tuple[int, Headers, bytes]:
        """Status, headers and body of a GET: a 304 when the client has this version."""
        if matches(if_none_match, self.etag):
            return 304, self.unchanged, b""
        return 200, self.headers, self.body


def read_page_file(path: Path, content_type: str) -> PageFile:
    stat = path.stat()
    body = path.read_bytes()
    etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    common = [(k.lower().encode(), v.encode()) for k, v in PAGE_HEADERS.items()]
    common.append((b"etag", etag.encode()))
    full = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(body)).encode()),
        *common,
    ]
    return PageFile(body, etag, full, common, (stat.st_mtime_ns, stat.st_size))


def matches(if_none_match: str | None, etag: str) -> bool:
    """Whether `If-None-Match` names `etag` (weak comparison, as RFC 9110 says for it)."""
    if not if_none_match:
        return False
    tags = [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]
    return "*" in tags or etag in tags


class PageFiles:
    """The page's files by URL path (`/static/js/main.js`): `get` gives the file as it is on
    disk now."""

    def __init__(self, root: Path, types: Mapping[str, str]) -> None:
        # URL path -> (file, content type); nothing else is ever read.
        self._where = {f"/static/{name}": (root / name, kind) for name, kind in types.items()}
        self._read: dict[str, PageFile] = {}

    def __contains__(self, url_path: str) -> bool:
        return url_path in self._where

    def get(self, url_path: str) -> PageFile | None:
        where = self._where.get(url_path)
        if where is None:
            return None
        path, kind = where
        known = self._read.get(url_path)
        stat = path.stat()
        if known is None or known.stamp != (stat.st_mtime_ns, stat.st_size):
            known = self._read[url_path] = read_page_file(path, kind)
        return known

    async def serve(self, url_path: str, method: str, if_none_match: str | None, send: Any) -> bool:
        """Answer a GET or HEAD of one of the page's files; False (nothing sent) for any other
        request."""
        if method not in ("GET", "HEAD") or (found := self.get(url_path)) is None:
            return False
        status, headers, body = found.answer(if_none_match)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if method == "HEAD" else body})
        return True
