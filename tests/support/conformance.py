"""Run the pinned official MCP conformance suite (@modelcontextprotocol/conformance) against a
server URL and read back its verdict per scenario.

The suite's `server` command runs every scenario with its own MCP client (the TypeScript SDK's,
speaking 2025-11-25) and, given `--output-dir`, writes each scenario's checks to
`<dir>/server-<scenario>-<timestamp>/checks.json`. A scenario passes when none of its checks is a
FAILURE; WARNING and INFO checks do not fail it (the suite's own rule, see its summary).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.support.nodetools import conformance_script, node_binary

# The dns-rebinding-protection scenario sends `Host: <the URL's host>` and wants it accepted;
# it fails outright for any URL whose host is not one of these.
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})

# `server-<scenario>-<ISO timestamp with ':' and '.' made '-'>`, e.g.
# `server-tools-list-2026-11-30T19-40-41-234Z`.
_RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")
# A summary line: `✓ tools-list: 1 passed, 0 failed` (✗ when a check failed).
_SUMMARY_LINE = re.compile(r"^[✓✗] (?P<scenario>\S+): \d+ passed, (?P<failed>\d+) failed$")


class ConformanceError(RuntimeError):
    """The suite could not be run, or its results could not be read."""


@dataclass(frozen=True)
class ConformanceResult:
    scenarios: dict[str, bool]
    """Scenario name -> passed (no FAILURE check)."""
    checks: dict[str, list[dict[str, Any]]]
    """Scenario name -> its checks as the suite wrote them (id, status, errorMessage, details)."""
    output: str
    """What the suite printed (stdout, then stderr)."""
    returncode: int
    duration_s: float

    @property
    def passed(self) -> frozenset[str]:
        return frozenset(name for name, ok in self.scenarios.items() if ok)

    @property
    def failed(self) -> frozenset[str]:
        return frozenset(name for name, ok in self.scenarios.items() if not ok)

    def failure_messages(self) -> dict[str, list[str]]:
        """Each failed scenario's FAILURE checks, as `id: message` lines."""
        return {
            name: [
                f"{c.get('id')}: {c.get('errorMessage') or c.get('description')}"
                for c in self.checks.get(name, [])
                if c.get("status") == "FAILURE"
            ]
            or ["(no checks recorded: the scenario crashed; see the output)"]
            for name in sorted(self.failed)
        }

    def summary(self) -> str:
        lines = [
            f"{len(self.passed)}/{len(self.scenarios)} scenarios passed in {self.duration_s:.1f} s"
        ]
        for name, messages in self.failure_messages().items():
            lines.append(f"  FAILED {name}")
            lines.extend(f"    {m}" for m in messages)
        return "\n".join(lines)


def run_conformance(url: str, *, timeout: float = 600) -> ConformanceResult:
    """Run `conformance server --url URL --suite all` and return the verdict per scenario.

    Blocking (a subprocess): from Trio, call it through `trio.to_thread.run_sync`.

    Raises:
        ValueError: The URL's host is not loopback.
        NodeToolsMissing: The pinned Node tools are not installed.
        subprocess.TimeoutExpired: The suite ran longer than `timeout` seconds (it is killed).
        ConformanceError: The suite ran no scenario at all.
    """
    host = urlsplit(url).hostname
    if host not in LOOPBACK_HOSTS:
        raise ValueError(f"the conformance suite needs a localhost URL, not {url!r}")
    command = [str(node_binary()), str(conformance_script()), "server", "--url", url]
    # Plain text: the summary lines are parsed below.
    env = {**os.environ, "NO_COLOR": "1", "FORCE_COLOR": "0"}
    with tempfile.TemporaryDirectory(prefix="mcp-conformance-") as results:
        started = time.monotonic()
        done = subprocess.run(
            [*command, "--suite", "all", "--output-dir", results],
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
            check=False,
        )
        duration = time.monotonic() - started
        checks = _read_checks(Path(results))
    output = done.stdout + done.stderr
    # A scenario that threw is in the summary but wrote no checks.json.
    summary = _read_summary(done.stdout)
    scenarios = {name: failed == 0 for name, failed in summary.items()}
    for name, found in checks.items():
        scenarios[name] = scenarios.get(name, True) and not _has_failure(found)
    if not scenarios:
        raise ConformanceError(f"the suite ran no scenario (exit {done.returncode}):\n{output}")
    return ConformanceResult(
        scenarios=dict(sorted(scenarios.items())),
        checks=checks,
        output=output,
        returncode=done.returncode,
        duration_s=duration,
    )


def _read_checks(results: Path) -> dict[str, list[dict[str, Any]]]:
    checks: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(results.glob("server-*/checks.json")):
        match = _RESULT_DIR.match(path.parent.name)
        if match is None:
            raise ConformanceError(f"unexpected result folder name: {path.parent.name}")
        checks[match["scenario"]] = json.loads(path.read_text(encoding="utf-8"))
    return checks


def _read_summary(stdout: str) -> dict[str, int]:
    """Scenario -> failed check count, from the summary the suite prints last."""
    _, _, summary = stdout.rpartition("=== SUMMARY ===")
    found = {}
    for line in summary.splitlines():
        if match := _SUMMARY_LINE.match(line.strip()):
            found[match["scenario"]] = int(match["failed"])
    return found


def _has_failure(checks: list[dict[str, Any]]) -> bool:
    return any(c.get("status") == "FAILURE" for c in checks)
