"""A bounded fuzz of the front door: hypothesis generates a few hundred hostile requests per route
(malformed JSON and UTF-8, deep nesting, odd types, odd headers, reused ids) and sends them over
real HTTP to one real `mcpapps run` serving the fixture app.

What must hold for every request: an answer (no hang, on a connection that is reused for the
next request), never a 5xx (the apps stay up throughout), an error body a program can read; and
at the end, a log without a traceback or an error line, and the app never restarted.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.tls import client_tls
from tests.support import forkserver
from tests.support.frontdoor import INITIALIZE, MCP_HEADERS
from tests.support.helpers import Project, free_port
from tests.support.running import FAST, environment, fixture_manifest

EXAMPLES = 150  # per route: a few seconds each
GUARD_S = 20  # per request: a hang guard, not a speed claim
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


class Running:
    def __init__(self, process: subprocess.Popen[bytes], port: int, log: Path) -> None:
        self.process = process
        self.port = port
        self.log_path = log
        self.client = httpx2.Client(
            verify=client_tls(), base_url=f"http://127.0.0.1:{port}", timeout=GUARD_S
        )
        self.session: dict[str, str] = {}

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@pytest.fixture(scope="module")
def supervisor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    root = tmp_path_factory.mktemp("fuzz")
    project = Project(root)
    project.manifest("apps/fx", fixture_manifest("fx"))
    supervision = "\n".join(f"{k} = {v}" for k, v in FAST.items())
    project.config(
        f'[sandbox]\nenabled = false\n[apps]\ndiscovery_paths = ["./apps"]\n'
        f'[supervision]\n{supervision}\n[log]\nlevel = "info"\n'
    )
    port = free_port()
    log = root / "supervisor.log"
    with open(log, "wb") as log_file:
        process = forkserver.start_mcpapps(
            ["run", "--config", "config.toml"],
            cwd=root,
            env={**environment(), "MCPAPPS_PORT": str(port)},
            stderr=log_file,
        )
    running = Running(process, port, log)
    try:
        deadline = time.monotonic() + 60
        while "ready: " not in running.log() or "front door listening" not in running.log():
            assert process.poll() is None, running.log()
            assert time.monotonic() < deadline, running.log()
            time.sleep(0.05)
        opened = running.client.post("/apps/mcp/fx", json=INITIALIZE, headers=MCP_HEADERS)
        running.session = {**MCP_HEADERS, "mcp-session-id": opened.headers["mcp-session-id"]}
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        running.client.post("/apps/mcp/fx", json=note, headers=running.session)
        pid = running.client.get("/admin/apps/fx").json()["pid"]
        yield running
        # After everything: no alarm in the log, and no request made the app restart.
        app = running.client.get("/admin/apps/fx").json()
        assert app["state"] == "Running"
        assert app["pid"] == pid
        log_text = running.log()
        assert "Traceback" not in log_text, log_text[-4000:]
        assert " ERROR " not in log_text, log_text[-4000:]
    finally:
        running.client.close()
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()


# ---- what is generated ------------------------------------------------------------------------

json_leaves = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
json_values = st.recursive(
    json_leaves,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@st.composite
def deep(draw: st.DrawFn) -> Any:
    """Nesting from shallow to far past the limit, in objects or arrays."""
    levels = draw(st.sampled_from([1, 30, 63, 64, 65, 100, 199, 220, 260, 999, 1000, 3000]))
    value: Any = draw(json_leaves)
    as_list = draw(st.booleans())
    for _ in range(levels):
        value = [value] if as_list else {"a": value}
    return value


def encoded(value: Any) -> bytes:
    try:
        return json.dumps(value).encode()
    except (RecursionError, ValueError):
        return b"[" * 2000


odd_bytes = st.one_of(
    st.binary(max_size=60),
    st.sampled_from(
        [
            b"",
            b"{",
            b"\xff\xfe{\x00}\x00",
            b"\xef\xbb\xbf{}",
            b'{"a":"\xed\xa0\x80"}',
            b'{"a":"\xff"}',
            b'"\\ud800"',
            b"[" * 5000,
            b"{}" * 100,
            b'{"jsonrpc":"2.0","id":1,"method":"ping"}' * 2,
            b"NaN",
            # What Python's json reads but JSON has not: each must be refused, never passed on.
            b'{"message":"hi","name":"fx.add","x":' + b"9" * 5000 + b"}",
            b'{"jsonrpc":"2.0","id":1,"method":"ping","pad":'
            + b"[" * 33
            + b"]" * 33
            + b',"pad2":'
            + b"[" * 33
            + b"]" * 33
            + b',"x":'
            + b"9" * 5000
            + b"}",
            b'{"name":"fx.echo","arguments":{"text":"a","x":Infinity},"message":"/call fx.echo'
            b' {\\"text\\": -Infinity}"}',
            b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo",'
            b'"arguments":{"text":"a","x":1e400}}}',
            b'{"name":"fx.echo","arguments":{"text":"\\ud800"}}',
        ]
    ),
)


def bodies(envelopes: st.SearchStrategy[Any]) -> st.SearchStrategy[bytes]:
    return st.one_of(
        odd_bytes,
        json_values.map(encoded),
        deep().map(encoded),
        envelopes.map(encoded),
        envelopes.map(lambda v: encoded(v).decode().encode("utf-16")),
    )


ids = st.one_of(
    st.integers(), st.text(max_size=5), st.none(), st.booleans(), st.floats(), json_values
)
methods = st.sampled_from(
    ["tools/call", "tools/list", "ping", "initialize", "resources/read", "prompts/get", "x/y"]
) | st.text(max_size=10)
tool_names = st.sampled_from(["echo", "add", "nope", ""]) | st.text(max_size=10)
arguments = st.one_of(
    json_values, deep(), st.dictionaries(st.sampled_from(["text", "a", "b"]), json_values)
)
rpc = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "1.0", 2]), "id": ids, "method": methods},
    optional={
        "params": st.one_of(
            json_values, st.fixed_dictionaries({"name": tool_names, "arguments": arguments})
        )
    },
)
rpc_batches = st.one_of(rpc, st.lists(rpc, min_size=1, max_size=3))
content_types = st.sampled_from(
    ["application/json", "application/json; charset=utf-16", "text/plain", "", "application/JSON"]
)


# ---- the properties ---------------------------------------------------------------------------


def strict_json(text: str) -> Any:
    """`text` as JSON, refusing NaN and Infinity as a browser's JSON.parse does."""

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} in an answer: no JSON parser reads it")

    return json.loads(text, parse_constant=refuse)


def check(response: httpx2.Response) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:500])
    kind = response.headers.get("content-type", "")
    if kind.startswith("application/json") and response.content:
        strict_json(response.text)  # a body a program can read
    elif kind.startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data:") and line[5:].strip():
                strict_json(line[5:])  # every frame, as a page or an MCP client reads it


@FUZZ
@given(body=bodies(rpc_batches), content_type=content_types, with_session=st.booleans())
def test_fuzz_app_endpoint(
    supervisor: Running, body: bytes, content_type: str, with_session: bool
) -> None:
    headers = {
        **(supervisor.session if with_session else MCP_HEADERS),
        "content-type": content_type,
    }
    check(supervisor.client.post("/apps/mcp/fx", content=body, headers=headers))


@FUZZ
@given(body=bodies(rpc_batches), content_type=content_types, version=st.text(max_size=12))
def test_fuzz_aggregate_endpoint(
    supervisor: Running, body: bytes, content_type: str, version: str
) -> None:
    headers = {**MCP_HEADERS, "content-type": content_type}
    # Only what an HTTP client lets through as a header value.
    if version.isascii() and version.isprintable() and version == version.strip():
        headers["mcp-protocol-version"] = version
    check(supervisor.client.post("/mcp", content=body, headers=headers))


admin_calls = st.fixed_dictionaries(
    {"name": st.one_of(tool_names.map(lambda n: f"fx.{n}"), json_values)},
    optional={"arguments": arguments, "extra": json_values},
)


@FUZZ
@given(body=bodies(admin_calls), content_type=content_types)
def test_fuzz_admin_call(supervisor: Running, body: bytes, content_type: str) -> None:
    check(
        supervisor.client.post("/admin/call", content=body, headers={"content-type": content_type})
    )


chats = st.fixed_dictionaries(
    {},
    optional={
        "message": st.one_of(
            st.text(max_size=40),
            st.builds(lambda a: f"/call fx.echo {encoded(a).decode()}", arguments),
            json_values,
        ),
        "sessionId": st.one_of(st.text(max_size=10), json_values),
        "appEvents": json_values,
    },
)


@FUZZ
@given(body=bodies(chats))
def test_fuzz_chat(supervisor: Running, body: bytes) -> None:
    response = supervisor.client.post(
        "/apps/chat", content=body, headers={"content-type": "application/json"}
    )
    check(response)
    if response.status_code == 200:
        assert response.text.rstrip().endswith('data: {"type": "done"}'), response.text[-300:]


@FUZZ
@given(
    method=st.sampled_from(["GET", "PUT", "PATCH", "DELETE", "POST"]),
    path=st.sampled_from(["/admin/apps", "/admin/apps/fx", "/metrics", "/apps/health", "/nope"]),
    body=odd_bytes,
)
def test_fuzz_other_routes_with_bodies(
    supervisor: Running, method: str, path: str, body: bytes
) -> None:
    check(supervisor.client.request(method, path, content=body))
