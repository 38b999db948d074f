"""The front door's access rules as pure functions: no socket, no clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from supervisor.model.config import config_from_data
from web.security import (
    access_policy,
    authorized,
    host_allowed,
    is_loopback,
    needs_token,
    origin_allowed,
    plain_path,
    session_value,
    token_matches,
)


def policy(token: str | None = "t0k", **server: object):
    config = config_from_data({"server": server}, Path("/srv/mcpapps/config.toml"), {})
    return access_policy(config, token)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.0.1", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("192.168.1.4", False),
        ("example.com", False),
    ],
)
def test_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_auth_is_needed_off_loopback_or_when_asked() -> None:
    assert not policy().require_auth
    assert policy(always_require_auth=True).require_auth
    assert policy(host="0.0.0.0").require_auth
    assert not needs_token(policy(), "/apps/health")
    strict = policy(always_require_auth=True)
    for path in ("/apps/health", "/apps/mcp/x", "/mcp", "/admin/apps", "/admin/events", "/metrics"):
        assert needs_token(strict, path)
    # The login, and the control page with its files (no user data: it says how to log in).
    for path in ("/login", "/", "/static/js/main.js"):
        assert not needs_token(strict, path)
    assert needs_token(strict, "/static")


def test_only_plain_paths() -> None:
    assert plain_path("/apps/health")
    assert plain_path("/")
    for bad in ("//apps/health", "http://localhost/apps/health", "apps/health", ""):
        assert not plain_path(bad), bad


def test_hosts() -> None:
    p = policy(public_hosts=["mcp.example.com"])
    for ok in ("localhost", "localhost:1", "127.0.0.1:18789", "[::1]:80", "MCP.example.com:443"):
        assert host_allowed(p, ok), ok
    bad_hosts = (None, "", "evil.com", "127.0.0.2", "localhost.evil.com", "mcp.example.com.evil")
    malformed = ("user@localhost", "localhost/evil", "localhost?x", "localhost:abc", "[::1")
    for bad in (*bad_hosts, *malformed):
        assert not host_allowed(p, bad), bad


def test_origins() -> None:
    p = policy(allowed_origins=["https://ui.example"])
    host = "127.0.0.1:18789"
    assert origin_allowed(p, None, host)  # not a browser
    assert origin_allowed(p, "http://127.0.0.1:18789", host)  # the server's own
    assert origin_allowed(p, "https://ui.example", host)
    assert origin_allowed(p, "https://ui.example:443", host)
    assert not origin_allowed(p, "http://localhost:18789", host)  # another origin
    assert not origin_allowed(p, "http://127.0.0.1:18790", host)  # the sandbox
    assert not origin_allowed(p, "null", host)
    assert not origin_allowed(p, "http://evil.example", host)
    # An Origin is a scheme, a host and a port, nothing more (RFC 6454): a browser never sends
    # more, so one that does is not taken for the server's own.
    for malformed in (
        "http://127.0.0.1:18789/x",
        "http://127.0.0.1:18789?x",
        "http://u@127.0.0.1:18789",
    ):
        assert not origin_allowed(p, malformed, host), malformed


def test_tokens() -> None:
    p = policy()
    assert authorized(p, {"authorization": "Bearer t0k"})
    assert authorized(p, {"authorization": "bearer  t0k "})
    assert not authorized(p, {"authorization": "Bearer t0K"})
    assert not authorized(p, {"authorization": "Basic t0k"})
    cookie = session_value("t0k")
    assert cookie != "t0k"  # the cookie never holds the token itself
    assert authorized(p, {"cookie": f"a=1; mcpapps_session={cookie}"})
    assert not authorized(p, {"cookie": "mcpapps_session=t0k"})
    assert not authorized(p, {"cookie": "garbage;;=="})
    assert not authorized(p, {})
    assert token_matches(p, "t0k")
    assert not token_matches(p, None)
    assert not authorized(policy(None), {"authorization": "Bearer anything"})
