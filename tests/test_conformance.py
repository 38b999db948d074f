"""The official MCP conformance suite (pinned @modelcontextprotocol/conformance 0.1.16, all 32
server scenarios) against our fixture server, `tests/apps/conformance_app.py`, on its own
Streamable HTTP endpoint.

This is the baseline for the front door: whatever passes here directly must pass through
`/apps/mcp/<appId>` too, with the same fixture on stdio behind it.
"""

from __future__ import annotations

import functools
from pathlib import Path

import trio

from tests.support.conformance import run_conformance
from tests.support.frontdoor import EXPECTED_DIRECT, SUITE_TIMEOUT_S, app_over_http

FIXTURE = Path(__file__).parent / "apps" / "conformance_app.py"
GUARD_S = 60  # a hang guard for the fixture's start, not a speed claim


async def test_fixture_passes_the_conformance_suite_directly(tmp_path: Path) -> None:
    log = tmp_path / "fixture.log"
    async with app_over_http(FIXTURE, log) as port:
        # localhost, not 127.0.0.1: the dns-rebinding scenario sends this host back as `Host`.
        url = f"http://localhost:{port}/mcp"
        run = functools.partial(run_conformance, url, timeout=SUITE_TIMEOUT_S)
        result = await trio.to_thread.run_sync(run)

    print(f"conformance: {result.summary()}")
    assert len(result.scenarios) == 32, result.output
    missing = EXPECTED_DIRECT - result.passed
    assert not missing, f"{result.summary()}\n\nfixture log:\n{_tail(log)}"


def _tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
