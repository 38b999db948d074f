"""A file view's requests as the view door reads them (pure): which requests are the host's to
answer (those naming a `host-resource://` URI), their parameters checked and typed, and a tool
call amended with the file's path. Errors are `BadFileRequest`, a sentence for the person.

The wire is the OpenAI MCP extensions': `resources/read {uri, _meta["openai/resource"]
.representation}`, `resources/subscribe|unsubscribe {uri}`, `openai/resources/write {uri,
text | blob, ifMatch?}`, `openai/files/open {path}`; and a file view's `tools/call` to its own
app carries `_meta["openai/resource"].path`, the file's absolute path, set by the host only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from actors.catalog import Wire
from actors.files.confine import FileRefused
from actors.files.resources import SCHEME
from actors.files.workspace import RESOURCE_META, Representation

WRITE_METHOD = "openai/resources/write"
OPEN_METHOD = "openai/files/open"
# The methods the host answers itself when their `uri` is a host resource.
RESOURCE_METHODS = frozenset(
    {"resources/read", "resources/subscribe", "resources/unsubscribe", WRITE_METHOD}
)


class BadFileRequest(FileRefused):
    """A view's file request whose parameters are not what the wire says."""


@attrs.frozen
class Write:
    uri: str
    text: str | None
    blob: str | None
    if_match: str | None


def host_capabilities(workspace: bool) -> Wire:
    """What `ui/initialize` adds to `hostCapabilities`: file resources (reads, subscriptions,
    saves of a host resource) and opening local files, only when there is a workspace."""
    if not workspace:
        return {}
    return {"experimental": {RESOURCE_META: {}, "openai/files": {}}}


def is_host_resource(method: str, params: Mapping[str, Any]) -> bool:
    """Whether the host answers this request itself (never the app's server): a resource
    method naming a `host-resource://` URI. A write is always the host's, whatever it names
    (the app's server has no such method to be asked)."""
    if method == WRITE_METHOD:
        return True
    uri = params.get("uri")
    return method in RESOURCE_METHODS and isinstance(uri, str) and uri.startswith(SCHEME)


def resource_uri(params: Mapping[str, Any]) -> str:
    uri = params.get("uri")
    if not isinstance(uri, str) or not uri.strip():
        raise BadFileRequest("'uri' must be the file's resourceUri (a non-blank string)")
    return uri


def representation(params: Mapping[str, Any]) -> Representation | None:
    """`_meta["openai/resource"].representation` of a `resources/read`: "text", "blob" or
    absent (the host chooses)."""
    meta = params.get("_meta")
    ours = meta.get(RESOURCE_META) if isinstance(meta, Mapping) else None
    wanted = ours.get("representation") if isinstance(ours, Mapping) else None
    if wanted is None:
        return None
    if wanted == "text" or wanted == "blob":
        return wanted
    raise BadFileRequest(
        f'_meta["{RESOURCE_META}"].representation must be "text" or "blob", not {wanted!r}'
    )


def write_params(params: Mapping[str, Any]) -> Write:
    """`openai/resources/write`'s parameters: a URI, exactly one of `text` and `blob` (both
    strings), and `ifMatch`, a non-empty string when given."""
    uri = resource_uri(params)
    text, blob = params.get("text"), params.get("blob")
    if (text is None) == (blob is None):
        raise BadFileRequest("a save carries exactly one of 'text' and 'blob'")
    if text is not None and not isinstance(text, str):
        raise BadFileRequest("'text' must be a string")
    if blob is not None and not isinstance(blob, str):
        raise BadFileRequest("'blob' must be a base64 string")
    if_match = params.get("ifMatch")
    if if_match is not None and (not isinstance(if_match, str) or not if_match):
        raise BadFileRequest("'ifMatch' must be the ETag read (a non-empty string), or absent")
    return Write(uri, text, blob, if_match)


def open_path(params: Mapping[str, Any]) -> str:
    """`openai/files/open`'s `path`: an absolute path (the workspace actor checks it is inside
    the root)."""
    path = params.get("path")
    if not isinstance(path, str) or not path.startswith("/"):
        raise BadFileRequest("'path' must be an absolute path (a string that starts with '/')")
    return path


def with_resource_path(params: Mapping[str, Any], path: str) -> Wire:
    """A file view's `tools/call` to its own app, with `_meta["openai/resource"].path` set to
    the file's absolute path. Whatever the view put there is replaced, never passed on: a view
    must not make its app's server read a path of the view's choosing."""
    meta = params.get("_meta")
    amended = dict(meta) if isinstance(meta, Mapping) else {}
    amended[RESOURCE_META] = {"path": path}
    return {**params, "_meta": amended}
