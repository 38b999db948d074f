"""The official MCP conformance suite (pinned @modelcontextprotocol/conformance 0.1.16, all 32
server scenarios) against our fixture server, `tests/apps/conformance_app.py`, on its own
Streamable HTTP endpoint.

This is the baseline for the front door: whatever passes here directly must pass through
`/apps/mcp/<appId>` too, with the same fixture on stdio behind it.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

import trio

from tests.support.conformance import run_conformance
from tests.support.helpers import free_port, wait_for_port

FIXTURE = Path(__file__).parent / "apps" / "conformance_app.py"
GUARD_S = 60  # a hang guard for the fixture's start, not a speed claim
SUITE_TIMEOUT_S = 300  # the whole suite takes about 2 s against the fixture

# Every server scenario of the suite passes directly: none is held back by the SDK or the suite.
# One passes with warnings only (a WARNING does not fail a scenario): server-sse-polling. Its raw
# POST of `test_reconnection` says `mcp-protocol-version: 2025-03-26`, and the SDK (rightly) sends
# priming events, and lets a handler close its stream, only for 2025-11-25 and later. So the
# priming-event and retry-field checks warn and the tool's answer arrives on the still open POST
# stream (INFO). Resuming with Last-Event-ID does work for a 2025-11-25 client; this version of
# the suite never asks for it.
EXPECTED_DIRECT = frozenset(
    {
        "server-initialize",
        "logging-set-level",
        "ping",
        "completion-complete",
        "tools-list",
        "tools-call-simple-text",
        "tools-call-image",
        "tools-call-audio",
        "tools-call-embedded-resource",
        "tools-call-mixed-content",
        "tools-call-with-logging",
        "tools-call-error",
        "tools-call-with-progress",
        "tools-call-sampling",
        "tools-call-elicitation",
        "json-schema-2020-12",
        "elicitation-sep1034-defaults",
        "server-sse-polling",
        "server-sse-multiple-streams",
        "elicitation-sep1330-enums",
        "resources-list",
        "resources-read-text",
        "resources-read-binary",
        "resources-templates-read",
        "resources-subscribe",
        "resources-unsubscribe",
        "prompts-list",
        "prompts-get-simple",
        "prompts-get-with-args",
        "prompts-get-embedded-resource",
        "prompts-get-with-image",
        "dns-rebinding-protection",
    }
)


async def test_fixture_passes_the_conformance_suite_directly(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "fixture.log"
    with log.open("wb") as errlog:
        process = await trio.lowlevel.open_process(
            [sys.executable, str(FIXTURE), "--http", "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=errlog,
        )
        try:
            await wait_for_port(port, process)
            # localhost, not 127.0.0.1: the dns-rebinding scenario sends this host back as `Host`.
            url = f"http://localhost:{port}/mcp"
            run = functools.partial(run_conformance, url, timeout=SUITE_TIMEOUT_S)
            result = await trio.to_thread.run_sync(run)
        finally:
            await stop(process)

    print(f"conformance: {result.summary()}")
    assert len(result.scenarios) == 32, result.output
    missing = EXPECTED_DIRECT - result.passed
    assert not missing, f"{result.summary()}\n\nfixture log:\n{_tail(log)}"


async def stop(process: trio.Process) -> None:
    """SIGTERM (the fixture shuts down gracefully), then SIGKILL if that takes too long."""
    process.terminate()
    with trio.move_on_after(5):
        await process.wait()
    if process.returncode is None:
        process.kill()
        await process.wait()


def _tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
