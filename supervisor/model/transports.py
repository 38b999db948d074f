"""The transports an app is reached by, one small spec each: the names it may be written with,
the field that says where the app is, and the rules a manifest using it must follow.

Whatever differs between transports in the model is read from here (the manifest's rules, the
definition, the listings); `actors/apps/transports.py` gives each spec the way it connects, and
refuses to load when one has none. A new transport is one spec here and one connect there.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

import attrs

from supervisor.model.structuring import KeyPath

if TYPE_CHECKING:
    from supervisor.model.manifest import Manifest

TransportName = Literal["stdio", "http", "sse"]
Quote = Callable[[str], str]  # how a field is named in a sentence: 'url', 'apps.inline.x.url'


@attrs.frozen
class TransportSpec:
    name: TransportName
    # Accepted spellings, compared in lower case with '_' read as '-'.
    spellings: frozenset[str]
    # The field that says where the app is: a command to run, or a URL to reach.
    target: Literal["command", "url"]

    @property
    def process(self) -> bool:
        """Whether the app is a child process of ours (it has a pid, an exit status, stderr)."""
        return self.target == "command"

    @property
    def remote(self) -> bool:
        """Whether the app is reached at a URL (with the manifest's headers)."""
        return self.target == "url"

    def problems(self, m: Manifest, quote: Quote) -> Iterator[tuple[KeyPath, str]]:
        """The rules of this transport that `m` breaks: its target is required, and a URL
        must be absolute http(s)."""
        if self.target == "command":
            if not (m.command or "").strip():
                yield ("command",), f"transport is '{self.name}' but no {quote('command')} is given"
        elif m.url is None:
            yield ("url",), f"transport is '{self.name}' but no {quote('url')} is given"
        elif not is_absolute_http_url(m.url):
            yield (
                ("url",),
                f"{quote('url')} {json.dumps(m.url)} must be an absolute http:// or https://"
                f" URL, such as {_EXAMPLE_URLS[self.name]}",
            )


_EXAMPLE_URLS = {"http": "http://127.0.0.1:8000/mcp", "sse": "http://127.0.0.1:8000/sse"}

TRANSPORTS: Mapping[str, TransportSpec] = {
    spec.name: spec
    for spec in (
        TransportSpec(
            name="stdio",
            spellings=frozenset({"stdio"}),
            target="command",
        ),
        TransportSpec(
            name="http",
            spellings=frozenset({"http", "streamable-http"}),
            target="url",
        ),
        TransportSpec(
            name="sse",
            spellings=frozenset({"sse"}),
            target="url",
        ),
    )
}

ALLOWED = ", ".join(f"'{name}'" for name in TRANSPORTS)


def find_transport(value: str) -> TransportSpec | None:
    """The spec a manifest's `transport` value names (any case; `streamable_http` is
    `streamable-http`), or None when it names none."""
    spelled = value.strip().lower().replace("_", "-")
    return next((s for s in TRANSPORTS.values() if spelled in s.spellings), None)


def normalize_transport(value: str) -> TransportName | None:
    """The name of the transport `value` spells, or None when unsupported."""
    spec = find_transport(value)
    return None if spec is None else spec.name


def transport_problems(m: Manifest, quote: Quote) -> Iterator[tuple[KeyPath, str]]:
    """A transport that is not one of ours, or the rules of the one named."""
    spec = find_transport(m.transport)
    if spec is None:
        yield (
            ("transport",),
            f"{quote('transport')} {json.dumps(m.transport)} is not supported: use {ALLOWED}"
            " ('streamable-http' is read as 'http')",
        )
    else:
        yield from spec.problems(m, quote)


def is_absolute_http_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        return parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
    except ValueError:  # a port that is not a number, an unclosed bracket
        return False
