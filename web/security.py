"""Who may use the front door, as pure functions over a request's headers.

The client's address is never looked at: behind a reverse proxy on the same host every caller is
loopback, so an address (or `X-Forwarded-For`) proves nothing. What counts is where the server is
bound, the token, the Host header (DNS rebinding) and the Origin header (other web pages).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
from collections.abc import Iterable, Mapping
from http.cookies import CookieError, SimpleCookie
from urllib.parse import urlsplit

import attrs

from actors.messages import SIGN_IN_CALLBACK
from supervisor.model.config import Config

SESSION_COOKIE = "mcpapps_session"
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
CORS_ALLOW_HEADERS = (
    "Authorization, Content-Type, mcp-protocol-version, Mcp-Session-Id, Mcp-Method, Mcp-Name,"
    " Last-Event-ID"
)
CORS_EXPOSE_HEADERS = "Mcp-Session-Id"
CORS_ALLOW_METHODS = "GET, POST, DELETE, OPTIONS"
# When auth is required, every path needs the token but these: a browser must reach the login,
# and the control page and its static files (no user data) say how to log in. The sign-in
# callback is reached by a redirect from another site, which carries no SameSite=Strict cookie:
# what proves it is the sign-in's own `state`, which the app's actor checks, and the PKCE
# verifier, which only the app's OAuth client holds.
PUBLIC_PATHS = frozenset({"/login", "/"})
PUBLIC_PREFIX = "/static/"
# A Host header as browsers and HTTP clients send it: a name, an IPv4 address or a bracketed
# IPv6 address, and an optional port. Anything else (userinfo, a path) is refused outright.
_HOST_HEADER = re.compile(r"(?P<name>[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:(?P<port>[0-9]{1,5}))?")


@attrs.frozen
class AccessPolicy:
    require_auth: bool
    token: str | None
    hosts: frozenset[str]  # Host names accepted (lower case, without port)
    origins: frozenset[tuple[str, str, int]]  # origins allowed besides the server's own
    sandbox_origin: tuple[str, str, int] | None  # never allowed, whatever the lists say


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def access_policy(config: Config, token: str | None) -> AccessPolicy:
    server = config.server
    # Behind a proxy, `public_url` is where the world reaches the server: its host and origin
    # are the server's own, and unless it is a loopback address, a token is required (the
    # loopback bind says nothing about who reaches the proxy).
    public = urlsplit(server.public_url) if server.public_url else None
    public_hosts = {*server.public_hosts, *([public.netloc] if public else [])}
    public_origins = [*server.allowed_origins, *([server.public_url] if server.public_url else [])]
    require = (
        server.always_require_auth
        or not is_loopback(server.host)
        or (public is not None and not is_loopback(public.hostname or ""))
    )
    sandbox = config.sandbox.origin if config.sandbox.enabled else None
    return AccessPolicy(
        require_auth=require,
        token=token,
        hosts=LOCAL_HOSTS | {_host_name(h) for h in public_hosts},
        origins=frozenset(origin_key(o) for o in public_origins),
        sandbox_origin=origin_key(sandbox) if sandbox else None,
    )


def _host_name(host_header: str) -> str:
    """`example.com:8080` → `example.com`; `[::1]:80` → `::1`; "" for anything malformed."""
    match = _HOST_HEADER.fullmatch(host_header.strip())
    if match is None:
        return ""
    return match["name"].strip("[]").lower()


def origin_key(origin: str) -> tuple[str, str, int]:
    parts = urlsplit(origin)
    try:
        port = parts.port
    except ValueError:
        port = -1
    default = 443 if parts.scheme == "https" else 80
    return parts.scheme.lower(), (parts.hostname or "").lower(), port or default


def host_allowed(policy: AccessPolicy, host_header: str | None) -> bool:
    """DNS rebinding protection: a page on evil.example that resolves to 127.0.0.1 still sends
    `Host: evil.example`."""
    return bool(host_header) and _host_name(host_header or "") in policy.hosts


def origin_refusal(policy: AccessPolicy, origin: str) -> str:
    """Why a browser's `origin` is refused, and what to do. The sandbox origin gets no advice to
    list it: the config refuses that, since the apps' views run there and must never act with
    the control page's rights."""
    if origin_key(origin) == policy.sandbox_origin:
        return (
            f"requests from the origin '{origin}' are never accepted: it is the sandbox origin,"
            " where the apps' views run, and they must not use the server's API"
        )
    return f"requests from the origin '{origin}' are not accepted: add it to server.allowed_origins"


def origin_allowed(policy: AccessPolicy, origin: str | None, host_header: str | None) -> bool:
    """No Origin (a non-browser client) is fine; a browser's Origin must be the server's own
    (same host and port as the Host header, either scheme) or listed, and never the sandbox."""
    if origin is None:
        return True
    parts = urlsplit(origin)
    if parts.path or parts.query or parts.fragment or "@" in parts.netloc:
        return False  # not an origin (a browser sends scheme, host and port only)
    key = origin_key(origin)
    if key == policy.sandbox_origin:
        return False
    if key in policy.origins:
        return True
    own = urlsplit(f"//{host_header or ''}")
    try:
        own_port = own.port
    except ValueError:
        return False
    default = 443 if key[0] == "https" else 80
    return key[1] == (own.hostname or "").lower() and key[2] == (own_port or default)


def session_value(token: str) -> str:
    """What the session cookie holds: derived from the token, never the token itself (cookies
    are not scoped by port, so another local server could read it)."""
    return hmac.new(token.encode(), b"mcpapps session cookie", hashlib.sha256).hexdigest()


def authorized(policy: AccessPolicy, headers: Mapping[str, str]) -> bool:
    """The bearer token, or the session cookie `/login` set."""
    if policy.token is None:
        return False
    scheme, _, value = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return token_matches(policy, value.strip())
    try:
        cookie = SimpleCookie(headers.get("cookie", ""))
    except CookieError:
        return False
    morsel = cookie.get(SESSION_COOKIE)
    return morsel is not None and hmac.compare_digest(
        morsel.value.encode(), session_value(policy.token).encode()
    )


def token_matches(policy: AccessPolicy, presented: str | None) -> bool:
    if presented is None or policy.token is None:
        return False
    return hmac.compare_digest(presented.encode(), policy.token.encode())


def needs_token(policy: AccessPolicy, path: str) -> bool:
    public = path in PUBLIC_PATHS or path.startswith((PUBLIC_PREFIX, SIGN_IN_CALLBACK))
    return policy.require_auth and not public


def plain_path(path: str) -> bool:
    """An origin-form path (`/x/y`): not `//x` or an absolute URL, which the routes would still
    match to a route while no prefix check would."""
    return path.startswith("/") and not path.startswith("//")


def cors_headers(origin: str) -> list[tuple[bytes, bytes]]:
    return [
        (b"access-control-allow-origin", origin.encode("latin-1")),
        (b"access-control-expose-headers", CORS_EXPOSE_HEADERS.encode()),
        (b"access-control-allow-credentials", b"true"),
        (b"vary", b"Origin"),
    ]


def preflight_headers(origin: str) -> list[tuple[bytes, bytes]]:
    return [
        *cors_headers(origin),
        (b"access-control-allow-methods", CORS_ALLOW_METHODS.encode()),
        (b"access-control-allow-headers", CORS_ALLOW_HEADERS.encode()),
        (b"access-control-max-age", b"600"),
    ]


def header_map(raw: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """ASGI headers as a dict with lower-case names (a repeated header: the first wins)."""
    found: dict[str, str] = {}
    for name, value in raw:
        found.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
    return found
