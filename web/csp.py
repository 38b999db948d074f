"""The Content-Security-Policy an app's UI runs under, built from its resource's `_meta.ui.csp`.

Pure. An app declares the outside origins its UI needs (`connectDomains` for fetch and
WebSocket, `resourceDomains` for scripts, styles, images, fonts and media, `frameDomains` for
nested frames, `baseUriDomains` for `<base href>`); nothing else is ever allowed. A declared
domain must be a plain origin (`https://api.example.com`, `wss://*.example.com:8443`): a value
with a path, a quote, a semicolon or a wildcard anywhere but a leading `*.` could widen the
policy or inject a directive, so it is rejected, not repaired.

An operator may allow one app more of what runs inside its view (`[apps.entries.<id>]
csp_allow`: `'unsafe-eval'`, `blob:`/`data:` scripts and workers, as the SDK's basic-host allows
every app), never more of the network.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

# scheme://host[:port], host either a DNS name (optionally `*.`-prefixed) or an IPv4 address.
_DOMAIN = re.compile(
    r"(?P<scheme>https?|wss?)://(?P<wild>\*\.)?(?P<host>[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
    r"(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*)(?::(?P<port>[0-9]{1,5}))?/?",
    re.IGNORECASE,
)
FIELDS = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")


ALLOWANCES = ("unsafe-eval", "blob-scripts", "data-scripts", "blob-workers", "data-workers")


@attrs.frozen
class Csp:
    header: str  # the Content-Security-Policy header value
    rejected: tuple[str, ...] = ()  # one sentence per declared value that was not allowed
    # What was applied, as the view is told (`hostCapabilities.sandbox.csp`): the declared
    # domains that were allowed, by field; and the operator's allowances, in ALLOWANCES order.
    domains: dict[str, list[str]] = attrs.Factory(dict)
    allowed: tuple[str, ...] = ()


def valid_domain(value: Any) -> str | None:
    """The origin as it goes into the policy (lower case, no trailing slash), or None."""
    if not isinstance(value, str):
        return None
    match = _DOMAIN.fullmatch(value)
    if match is None:
        return None
    port = match["port"]
    if port is not None and not 0 < int(port) < 65536:
        return None
    return value.rstrip("/").lower()


def build_csp(declared: Any, allow: frozenset[str] = frozenset()) -> Csp:
    """The policy for a UI resource whose `_meta.ui.csp` is `declared` (None when absent), with
    the operator's `allow`ances (ALLOWANCES; others are ignored). Inline script and style are
    allowed because an app's UI is one HTML document; everything that reaches the network is
    `'none'` unless declared."""
    domains: dict[str, list[str]] = {field: [] for field in FIELDS}
    rejected: list[str] = []
    if declared is not None and not isinstance(declared, Mapping):
        rejected.append("_meta.ui.csp is not a JSON object: it was ignored")
        declared = None
    for field in FIELDS:
        values = (declared or {}).get(field)
        if values is None:
            continue
        if not isinstance(values, list):
            rejected.append(f"_meta.ui.csp.{field} is not a list: it was ignored")
            continue
        for value in values:
            if (origin := valid_domain(value)) is None:
                rejected.append(
                    f"_meta.ui.csp.{field} entry {value!r} is not an origin such as"
                    " https://api.example.com (scheme and host, optional port, optional"
                    " leading '*.'): it was not allowed"
                )
            elif origin not in domains[field]:
                domains[field].append(origin)

    def sources(field: str, *base: str) -> str:
        listed = [*base, *domains[field]]
        return " ".join(listed) if listed else "'none'"

    allowed = tuple(a for a in ALLOWANCES if a in allow)
    scripts = ["'unsafe-eval'", "'wasm-unsafe-eval'"] if "unsafe-eval" in allowed else []
    scripts += [f"{s}:" for s in ("blob", "data") if f"{s}-scripts" in allowed]
    # Always said, so that scripts allowed from blob: do not allow workers from it too.
    workers = [f"{s}:" for s in ("blob", "data") if f"{s}-workers" in allowed]
    resource = domains["resourceDomains"]
    directives = [
        "default-src 'none'",
        " ".join(["script-src 'self' 'unsafe-inline'", *scripts, *resource]),
        " ".join(["worker-src 'self'", *workers]),
        " ".join(["style-src 'self' 'unsafe-inline'", *resource]),
        " ".join(["img-src 'self' data: blob:", *resource]),
        " ".join(["font-src 'self' data:", *resource]),
        " ".join(["media-src 'self' data: blob:", *resource]),
        f"connect-src {sources('connectDomains')}",
        f"frame-src {sources('frameDomains')}",
        f"base-uri {sources('baseUriDomains')}",
        "form-action 'none'",
        "object-src 'none'",
    ]
    applied = {field: origins for field, origins in domains.items() if origins}
    return Csp("; ".join(directives), tuple(rejected), applied, allowed)
