"""A sandbox origin per app (`[sandbox] app_origins = true`), pure: where an app's views are
served, which app an origin is, and who may frame them.

With one sandbox origin, every view renders in an inner frame with an opaque origin: views are
apart from each other and from the control page, but a view has no storage, and a framework
that touches its parent `Window` (Vue's reactivity walking the App SDK's objects) gets a
SecurityError. With an origin per app (`http://<label>.localhost:<sandbox port>` on a loopback
sandbox, `<scheme>://<label>.<sandbox host>:<port>` otherwise, which needs a wildcard DNS name
and certificate), the inner frame keeps the proxy page's origin, which is that app's alone: the
app's views share their storage, no two apps share any, and the view's parent is same-origin.

Being same-origin with its proxy page, a view could script it or navigate it, so on an app
origin the proxy page may be framed only by the control page (`frame-ancestors`), is served
only as a frame the control page asked for (a navigation the view itself starts is
`Sec-Fetch-Site: same-origin`, refused), only for the app the origin is, and the control page
renders one view per proxy page (a proxy page loaded again is given nothing)."""

from __future__ import annotations

import hashlib
import ipaddress
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from supervisor.model.config import Config

LOOPBACK_DOMAIN = "localhost"  # browsers resolve every *.localhost name to the loopback
_UNSAFE = re.compile(r"[^a-z0-9-]+")
_SLUG_MAX = 40


def app_label(app_id: str) -> str:
    """A DNS label that is this app's alone: its id, lowercased and cut to what a label
    takes, and a hash of the whole id (two ids that read alike still differ)."""
    slug = _UNSAFE.sub("-", app_id.lower()).strip("-")[:_SLUG_MAX].strip("-") or "app"
    digest = hashlib.sha256(app_id.encode()).hexdigest()[:8]
    return f"{slug}-{digest}"


def _is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def base_domain(sandbox_origin: str) -> str | None:
    """The domain app origins are made under: `localhost` for a loopback sandbox, the sandbox's
    host name otherwise; None for a sandbox on an IP address that is not loopback (an address
    has no sub-domains)."""
    host = urlsplit(sandbox_origin).hostname or ""
    if _is_loopback(host):
        return LOOPBACK_DOMAIN
    try:
        ipaddress.ip_address(host)
        return None
    except ValueError:
        return host


def app_origin(sandbox_origin: str, app_id: str) -> str | None:
    """Where the views of `app_id` are served (None when the sandbox cannot have app
    origins)."""
    parts = urlsplit(sandbox_origin)
    domain = base_domain(sandbox_origin)
    if domain is None:
        return None
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{app_label(app_id)}.{domain}{port}"


def app_origins_source(sandbox_origin: str) -> str | None:
    """Every app origin, as a CSP source (the control page's `frame-src`)."""
    parts = urlsplit(sandbox_origin)
    domain = base_domain(sandbox_origin)
    if domain is None:
        return None
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://*.{domain}{port}"


def is_app_host(host: str, sandbox_origin: str, app_id: str) -> bool:
    """Whether a request's Host is `app_id`'s own origin (not the shared sandbox origin, not
    another app's)."""
    origin = app_origin(sandbox_origin, app_id)
    if origin is None:
        return False
    expected = urlsplit(origin)
    asked = urlsplit(f"//{host}")
    return (asked.hostname or "").lower() == expected.hostname and asked.port == expected.port


def on_app_domain(host: str, sandbox_origin: str) -> bool:
    """Whether a request's Host is under the domain of the app origins (an app's, or one no
    app has), rather than the shared sandbox origin."""
    domain = base_domain(sandbox_origin)
    name = (urlsplit(f"//{host}").hostname or "").lower()
    return domain is not None and name.endswith(f".{domain}")


def framers(control_origins: Iterable[str]) -> str:
    """The `frame-ancestors` of a proxy page on an app origin: the control page's origins,
    with the other names of a loopback one (a person may open it at localhost or 127.0.0.1)."""
    found: list[str] = []
    for origin in control_origins:
        parts = urlsplit(origin)
        port = f":{parts.port}" if parts.port else ""
        names = [origin]
        if _is_loopback(parts.hostname or ""):
            hosts = ("127.0.0.1", "localhost", "[::1]")
            names += [f"{parts.scheme}://{host}{port}" for host in hosts]
        found += [name for name in dict.fromkeys(names) if name not in found]
    return " ".join(found)


def ui_settings(config: Config, app_id: str) -> dict[str, Any]:
    """What the control page needs to render an app's views: its `[apps.entries]` settings,
    and with `[sandbox] app_origins` the origin its views are served from."""
    settings = config.apps.ui_settings(app_id)
    sandbox = config.sandbox
    if sandbox.enabled and sandbox.app_origins and sandbox.origin:
        origin = app_origin(sandbox.origin, app_id)
        if origin is not None:
            settings["sandboxOrigin"] = origin
    return settings


def app_frames(config: Config) -> str | None:
    """The control page's `frame-src` for the app origins (None when they are off)."""
    sandbox = config.sandbox
    if not (sandbox.enabled and sandbox.app_origins and sandbox.origin):
        return None
    return app_origins_source(sandbox.origin)


def control_origins(config: Config) -> list[str]:
    """Where the control page may be: its own origin, its public URL's, the allowed ones."""
    found = [config.control_origin]
    if config.server.public_url:
        parts = urlsplit(config.server.public_url)
        found.append(f"{parts.scheme}://{parts.netloc}")
    found += [o for o in config.server.allowed_origins if o.startswith(("http://", "https://"))]
    return found
