"""The CSP an app's UI runs under, from its resource's `_meta.ui.csp` (pure)."""

from __future__ import annotations

import pytest

from web.csp import build_csp, valid_domain


def directive(header: str, name: str) -> str:
    found = [d.strip() for d in header.split(";") if d.strip().split(" ")[0] == name]
    assert len(found) == 1, header
    return found[0]


def test_nothing_declared_reaches_no_network() -> None:
    csp = build_csp(None)
    assert directive(csp.header, "connect-src") == "connect-src 'none'"
    assert directive(csp.header, "frame-src") == "frame-src 'none'"
    assert directive(csp.header, "default-src") == "default-src 'none'"
    assert "http" not in csp.header
    assert csp.rejected == ()


def test_declared_domains_go_where_they_belong() -> None:
    csp = build_csp(
        {
            "connectDomains": ["https://api.example.com", "wss://live.example.com:8443"],
            "resourceDomains": ["https://*.cdn.example.org/"],
            "frameDomains": ["https://maps.example.net"],
            "baseUriDomains": ["https://docs.example.com"],
        }
    )
    assert directive(csp.header, "connect-src") == (
        "connect-src https://api.example.com wss://live.example.com:8443"
    )
    assert "https://*.cdn.example.org" in directive(csp.header, "script-src")
    assert "https://*.cdn.example.org" in directive(csp.header, "img-src")
    assert "https://*.cdn.example.org" not in directive(csp.header, "connect-src")
    assert directive(csp.header, "frame-src") == "frame-src https://maps.example.net"
    assert directive(csp.header, "base-uri") == "base-uri https://docs.example.com"
    assert csp.rejected == ()


@pytest.mark.parametrize(
    "value",
    [
        "*",
        "https://*",
        "https://a.*.example.com",
        "https://example.com/path",
        "https://example.com; script-src *",
        "'unsafe-eval'",
        "https://exa'mple.com",
        "javascript://x",
        "example.com",
        "https://example.com:99999",
        "https://user@example.com",
        " https://example.com",
        42,
    ],
)
def test_a_value_that_is_not_a_plain_origin_is_rejected(value: object) -> None:
    assert valid_domain(value) is None
    csp = build_csp({"connectDomains": [value]})
    assert directive(csp.header, "connect-src") == "connect-src 'none'"
    assert len(csp.rejected) == 1
    assert "connectDomains" in csp.rejected[0]


def test_a_malformed_csp_object_is_ignored_and_said() -> None:
    assert build_csp("https://x.example").rejected
    csp = build_csp({"connectDomains": "https://x.example"})
    assert directive(csp.header, "connect-src") == "connect-src 'none'"
    assert "not a list" in csp.rejected[0]


def test_an_operator_s_allowances_open_scripts_and_workers_never_the_network() -> None:
    plain = build_csp(None)
    assert directive(plain.header, "script-src") == "script-src 'self' 'unsafe-inline'"
    assert directive(plain.header, "worker-src") == "worker-src 'self'"
    assert plain.allowed == ()
    every = frozenset(
        {"unsafe-eval", "blob-scripts", "data-scripts", "blob-workers", "data-workers"}
    )
    csp = build_csp({"connectDomains": ["https://api.example.com"]}, every | {"connect-anything"})
    assert directive(csp.header, "script-src") == (
        "script-src 'self' 'unsafe-inline' 'unsafe-eval' 'wasm-unsafe-eval' blob: data:"
    )
    assert directive(csp.header, "worker-src") == "worker-src 'self' blob: data:"
    assert directive(csp.header, "connect-src") == "connect-src https://api.example.com"
    assert directive(csp.header, "default-src") == "default-src 'none'"
    assert csp.allowed == (
        "unsafe-eval",
        "blob-scripts",
        "data-scripts",
        "blob-workers",
        "data-workers",
    )
    # Scripts from blob: do not bring workers from blob: with them.
    only = build_csp(None, frozenset({"blob-scripts"}))
    assert directive(only.header, "worker-src") == "worker-src 'self'"


def test_what_was_applied_is_the_allowed_domains_only() -> None:
    csp = build_csp({"connectDomains": ["https://API.example.com/", "nope"], "frameDomains": []})
    assert csp.domains == {"connectDomains": ["https://api.example.com"]}
