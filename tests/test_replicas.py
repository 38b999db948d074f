"""Several supervisors behind one address: two real `mcpapps run` on one real PostgreSQL
(tests/support/postgres.py), chat turns through the direct engine (`/call …`), so no model is
needed; the fixture app's gate and sleep make a turn last."""

from __future__ import annotations

import contextlib
import json
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import psycopg
import trio

from tests.support.asking import answer, asking_project, command, result_text, turn
from tests.support.chatting import Timeline, body, chat_data, chat_into, chat_stream
from tests.support.frontdoor import http, write
from tests.support.helpers import Project, run_mcpapps
from tests.support.postgres import PASSWORD
from tests.support.running import GUARD_S, Supervisor, supervisor_running

DATABASE = '[state]\ndatabase = "${env:CHAT_DATABASE_URL}"\n'


def call(tool: str, arguments: dict[str, object]) -> str:
    return f"/call {tool} {json.dumps(arguments)}"


def replica_project(root: Path, extra: str = "") -> Project:
    """A supervisor's own folder (its state dir too), with the config every replica shares."""
    root.mkdir()
    project = Project(root)
    write(project, "", ("fx", ("--gates",)), extra=DATABASE + extra, grocery=False)
    return project


@contextlib.asynccontextmanager
async def two_replicas(
    tmp_path: Path, database_url: str, extra: str = ""
) -> AsyncIterator[tuple[Supervisor, Supervisor]]:
    env = {"CHAT_DATABASE_URL": database_url}
    async with (
        supervisor_running(replica_project(tmp_path / "a", extra), env) as a,
        supervisor_running(replica_project(tmp_path / "b", extra), env) as b,
    ):
        try:
            yield a, b
        except BaseException:
            print("replica a:", a.log, "\nreplica b:", b.log)
            raise


def replica_of(supervisor: Supervisor) -> str:
    """The replica id a supervisor gives itself (host:port)."""
    return next(
        line.split("replica ", 1)[1].split()[0]
        for line in supervisor.log.splitlines()
        if "replica " in line and "chat sessions are kept in" in line
    )


async def replicas(client: httpx2.AsyncClient) -> dict[str, dict[str, Any]]:
    """`GET /admin/cluster`, by replica id."""
    response = await client.get("/admin/cluster")
    assert response.status_code == 200, response.text
    return {r["id"]: r for r in response.json()["replicas"]}


async def saved(client: httpx2.AsyncClient, session_id: str) -> dict[str, Any]:
    response = await client.get(f"/apps/chat/{session_id}")
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def tool_texts(session: dict[str, Any]) -> list[str]:
    return [m["content"] for m in session["messages"] if m["role"] == "tool"]


async def test_sessions_are_kept_in_postgresql(project: Project, database_url: str) -> None:
    write(project, "", ("fx", ()), extra=DATABASE, grocery=False)
    env = {"CHAT_DATABASE_URL": database_url}
    async with supervisor_running(project, env) as supervisor, http(supervisor) as client:
        reply = await chat_data(client, body(call("fx.echo", {"text": "kept"}), "pg"))
        assert reply[2]["text"] == "kept"
        session = await saved(client, "pg")
    assert session["turns"] == 1
    assert "chat sessions are kept in postgresql://postgres:***@127.0.0.1" in supervisor.log
    assert PASSWORD not in supervisor.log
    assert not (project.root / ".mcpapps" / "sessions.sqlite3").exists()
    with psycopg.connect(database_url) as connection:
        rows = connection.execute("SELECT id, turns FROM mcpapps_sessions").fetchall()
    assert rows == [("pg", 1)]


async def test_a_database_that_cannot_be_reached_stops_the_start(project: Project) -> None:
    write(project, "", ("fx", ()), extra=DATABASE + "connect_wait_s = 1\n", grocery=False)
    url = f"postgresql://someone:{PASSWORD}@127.0.0.1:1/nothing?connect_timeout=2"
    supervisor = Supervisor(project, extra_env={"CHAT_DATABASE_URL": url})
    async with trio.open_nursery() as nursery:
        await supervisor.start(nursery)
        assert await supervisor.wait() != 0
    assert "postgresql://someone:***@127.0.0.1:1/nothing" in supervisor.log
    assert PASSWORD not in supervisor.log


async def test_turns_sent_alternately_to_two_supervisors_stay_in_order(
    tmp_path: Path, database_url: str
) -> None:
    async with two_replicas(tmp_path, database_url) as (a, b), http(a) as ca, http(b) as cb:
        for n in range(6):
            client = (ca, cb)[n % 2]
            reply = await chat_data(client, body(call("fx.echo", {"text": str(n)}), "alt"))
            assert reply[2]["text"] == str(n)
        from_a, from_b = await saved(ca, "alt"), await saved(cb, "alt")
    assert from_a == from_b
    assert from_a["turns"] == 6
    assert tool_texts(from_a) == [str(n) for n in range(6)]


async def test_concurrent_turns_through_two_supervisors_run_one_after_the_other(
    tmp_path: Path, database_url: str
) -> None:
    gate = tmp_path / "open"
    timeline = Timeline()
    async with (
        two_replicas(tmp_path, database_url) as (a, b),
        http(a) as ca,
        http(b) as cb,
    ):
        async with trio.open_nursery() as nursery:
            first = body(call("fx.gate", {"path": str(gate)}), "both")
            nursery.start_soon(chat_into, ca, first, timeline, "first")
            await a.wait_for_log("gate waiting")
            # The second turn of the session, through the other supervisor.
            second = body(call("fx.gated", {}), "both")
            nursery.start_soon(chat_into, cb, second, timeline, "second")
            with trio.fail_after(GUARD_S):
                while not any(d["type"] == "waiting" for _, s, d in timeline.seen):
                    await trio.sleep(0.02)
            gate.touch()
        session = await saved(cb, "both")
    waiting = next(d for _, s, d in timeline.seen if d["type"] == "waiting")
    assert waiting == {"type": "waiting", "replica": replica_of(a)}
    assert [d["type"] for _, s, d in timeline.seen if s == "second"] == [
        "session",
        "waiting",
        "tool",
        "result",
        "done",
    ]
    # The second ran once the first was over: no gate call was waiting any more (a's app
    # ran the gate; b's own app would say 0 either way, so the order is read from the saved
    # history and the timeline).
    first_done = timeline.first("first", "done")
    assert first_done < timeline.first("second", "tool")
    assert session["turns"] == 2
    assert tool_texts(session) == ["opened", "0"]


async def test_a_killed_supervisor_frees_its_session_and_loses_no_completed_turn(
    tmp_path: Path, database_url: str
) -> None:
    timeline = Timeline()
    async with two_replicas(tmp_path, database_url) as (a, b), http(a) as ca, http(b) as cb:
        await chat_data(ca, body(call("fx.echo", {"text": "before"}), "k"))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_ignore_cut_stream, ca, body(call("fx.sleep", {"seconds": 60}), "k"))
            await a.wait_for_log("sleep started")
            nursery.start_soon(
                chat_into, cb, body(call("fx.echo", {"text": "after"}), "k"), timeline, "b"
            )
            with trio.fail_after(GUARD_S):
                while not timeline.seen or timeline.seen[-1][2]["type"] != "waiting":
                    await trio.sleep(0.02)
            await a.stop(signal.SIGKILL)
        session = await saved(cb, "k")
        # The killed one stays in the cluster view, marked silent once it missed heartbeats.
        with trio.fail_after(GUARD_S):
            while not (cluster := await replicas(cb)).get(replica_of(a), {}).get("silent"):
                await trio.sleep(0.5)
        listed = run_mcpapps("cluster", "--url", b.url(), cwd=tmp_path)
    assert set(cluster) == {replica_of(a), replica_of(b)}
    assert not cluster[replica_of(b)]["silent"]
    assert cluster[replica_of(b)]["apps"] == [{"id": "fx", "state": "Running"}]
    assert cluster[replica_of(b)]["url"] == b.url()
    assert listed.returncode == 0, listed.stderr
    assert replica_of(a) in listed.stdout
    assert "(silent)" in listed.stdout
    assert "2 supervisors, 1 silent" in listed.stdout
    kinds = [d["type"] for _, _, d in timeline.seen]
    assert kinds == ["session", "waiting", "tool", "result", "done"]
    assert session["turns"] == 2
    assert tool_texts(session) == ["before", "after"]


async def _ignore_cut_stream(client: httpx2.AsyncClient, payload: dict[str, Any]) -> None:
    with contextlib.suppress(httpx2.HTTPError):
        async with chat_stream(client, payload) as frames:
            async for _ in frames:
                pass


async def test_a_turn_is_cancelled_through_the_other_supervisor(
    tmp_path: Path, database_url: str
) -> None:
    timeline = Timeline()
    async with two_replicas(tmp_path, database_url) as (a, b), http(a) as ca, http(b) as cb:
        assert (await cb.post("/apps/chat/c/cancel")).json() == {"cancelled": False}
        # Whatever else is said on the channel is dropped, and breaks nothing.
        with psycopg.connect(database_url, autocommit=True) as connection:
            for noise in ("[1]", "not json", '{"to": "nobody"}', '{"kind": "answer"}'):
                connection.execute("SELECT pg_notify('mcpapps_relay', %s)", (noise,))
        async with trio.open_nursery() as nursery:
            slow = body(call("fx.sleep", {"seconds": 60}), "c")
            nursery.start_soon(chat_into, ca, slow, timeline, "a")
            await a.wait_for_log("sleep started")
            response = await cb.post("/apps/chat/c/cancel")
            assert response.json() == {"cancelled": True}
        await a.wait_for_log("sleep cancelled")
        assert (await cb.post("/apps/chat/c/cancel")).json() == {"cancelled": False}
    last = timeline.seen[-2][2]
    assert last["type"] == "error"
    assert last["message"].startswith("the turn was cancelled")


async def test_one_supervisor_on_sqlite_is_a_cluster_of_one(project: Project) -> None:
    write(project, "", ("fx", ()), grocery=False)
    async with supervisor_running(project) as supervisor, http(supervisor) as client:
        running = [{"id": "fx", "state": "Running"}]
        with trio.fail_after(GUARD_S):  # the first heartbeat may come while fx starts
            while True:
                cluster = await replicas(client)
                if [r["apps"] for r in cluster.values()] == [running]:
                    break
                await trio.sleep(0.2)
    assert list(cluster) == [replica_of(supervisor)]
    [me] = cluster.values()
    assert me["url"] == supervisor.url()
    assert not me["silent"]
    assert "sessions.sqlite3" in supervisor.log


async def test_an_answer_reaches_the_turn_through_the_other_supervisor(
    tmp_path: Path, database_url: str
) -> None:
    projects = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        project = Project(tmp_path / name)
        asking_project(project)
        project.config(project.config_path.read_text() + "\n" + DATABASE)
        projects.append(project)
    env = {"CHAT_DATABASE_URL": database_url}
    user = {"username": "ada", "email": "ada@example.com"}
    async with (
        supervisor_running(projects[0], env) as a,
        supervisor_running(projects[1], env) as b,
        http(a) as ca,
        http(b) as cb,
    ):
        ask = command("hs.test_elicitation", {"message": "who are you?"})
        async with turn(ca, {**ask, "sessionId": "q"}) as t:
            asked = await t.until("elicitation")
            # Checked by the supervisor that runs the turn, refused through the other one.
            bad = await answer(cb, "q", asked["requestId"], "accept", content={"x": 1})
            assert bad.status_code == 400
            assert "'email' is a required property" in bad.json()["error"]["message"]
            ok = await answer(cb, "q", asked["requestId"], "accept", content=user)
            assert ok.status_code == 200, ok.text
            events = await t.rest()
        unknown = await answer(cb, "q", "q-never-asked", "decline")
        assert unknown.status_code == 404
    assert result_text(events) == (
        'User response: action=accept, content={"username": "ada", "email": "ada@example.com"}'
    )


async def test_a_turn_that_waits_too_long_for_the_other_supervisor_says_so(
    tmp_path: Path, database_url: str
) -> None:
    gate = tmp_path / "open"
    async with (
        two_replicas(tmp_path, database_url, extra="turn_wait_s = 1\n") as (a, b),
        http(a) as ca,
        http(b) as cb,
        trio.open_nursery() as nursery,
    ):
        first = body(call("fx.gate", {"path": str(gate)}), "long")
        nursery.start_soon(chat_data, ca, first)
        await a.wait_for_log("gate waiting")
        second = await chat_data(cb, body(call("fx.echo", {"text": "late"}), "long"))
        gate.touch()
    assert [d["type"] for d in second] == ["session", "waiting", "error", "done"]
    assert second[2]["message"] == (
        f"a turn of session 'long' has been running on {replica_of(a)} for more than 1 s"
        " ([state] turn_wait_s): send this message again once that turn is over, or cancel it"
    )
