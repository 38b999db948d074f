"""The `SessionStore` contract, held against every backend: SQLite (the default) and
PostgreSQL (a real server, tests/support/postgres.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import attrs
import psycopg
import pytest
import trio

from actors.chat.pgstore import SCHEMA_VERSION
from actors.chat.sessionstore import ReplicaSeen, SessionStore, StoreError, TurnWaitTimeout
from actors.chat.stores import make_store
from supervisor.model.config import ConfigError, StateConfig, config_from_data
from tests.support.postgres import PASSWORD

BACKENDS = ["sqlite", "postgresql"]

StoreMaker = Callable[[], SessionStore]


@pytest.fixture(params=BACKENDS)
def make(request: pytest.FixtureRequest, tmp_path: Path) -> StoreMaker:
    """Makes stores (not yet open) of one backend, all on the same database."""
    if request.param == "sqlite":
        state = StateConfig(dir=tmp_path / "state")
    else:
        url = request.getfixturevalue("database_url")
        state = StateConfig(dir=tmp_path / "state", database=url)
    return lambda: make_store(state, {})


@pytest.fixture
async def store(make: StoreMaker) -> AsyncIterator[SessionStore]:
    opened = make()
    await opened.open()
    try:
        yield opened
    finally:
        await opened.close()


async def test_a_session_never_saved_is_empty(store: SessionStore) -> None:
    saved = await store.load("nobody")
    assert (saved.id, saved.messages, saved.turns) == ("nobody", (), 0)


async def test_turns_are_appended_in_order(store: SessionStore) -> None:
    await store.save_turn("s", [{"role": "user", "content": "1"}, {"role": "assistant"}])
    await store.save_turn("other", [{"role": "user", "content": "x"}])
    await store.save_turn("s", [{"role": "user", "content": "2"}])
    saved = await store.load("s")
    assert saved.turns == 2
    assert [m.get("content") for m in saved.messages] == ["1", None, "2"]
    assert saved.created_at is not None
    assert saved.updated_at is not None
    assert saved.created_at <= saved.updated_at
    assert (await store.load("other")).turns == 1


async def test_several_turns_are_saved_as_several(store: SessionStore) -> None:
    await store.save_turns("s", [[{"role": "user", "content": "a"}], [{"role": "user"}]])
    assert (await store.load("s")).turns == 2


async def test_text_that_is_not_unicode_is_kept(store: SessionStore) -> None:
    message = {"role": "user", "content": "hi \ud800 \x00 é", "n": [1, 2.5, None, True]}
    await store.save_turn("s", [message])
    assert (await store.load("s")).messages == (message,)


async def test_what_one_store_saved_another_reads(store: SessionStore, make: StoreMaker) -> None:
    await store.save_turn("s", [{"role": "user", "content": "kept"}])
    await store.close()
    again = make()
    await again.open()
    try:
        assert (await again.load("s")).messages == ({"role": "user", "content": "kept"},)
    finally:
        await again.close()
    await store.open()


async def test_the_turn_is_held_while_the_block_runs(store: SessionStore) -> None:
    waited: list[str] = []
    async with store.hold_turn("s", waited.append):
        await store.save_turn("s", [{"role": "user"}])
    async with store.hold_turn("s", waited.append):
        pass
    assert waited == []


async def test_concurrent_loads_and_saves(store: SessionStore) -> None:
    async with trio.open_nursery() as nursery:
        for n in range(8):
            nursery.start_soon(store.save_turn, f"s{n % 2}", [{"role": "user", "content": n}])
            nursery.start_soon(store.load, "s0")
    assert (await store.load("s0")).turns + (await store.load("s1")).turns == 8


async def test_a_session_is_read_page_by_page(store: SessionStore) -> None:
    for turn in range(1, 8):
        await store.save_turn("s", [{"role": "user", "content": f"{turn}"}, {"turn": turn}])
    await store.save_turn("other", [{"role": "user", "content": "x"}])
    last = await store.load_page("s", None, 3)
    before = await store.load_page("s", last.first_turn, 3)
    first = await store.load_page("s", before.first_turn, 3)
    nothing = await store.load_page("s", first.first_turn, 3)
    beyond = await store.load_page("s", 100, 2)
    nobody = await store.load_page("nobody", None, 3)
    assert (last.turns, last.first_turn, last.last_turn) == (7, 5, 7)
    assert [m.get("content") for m in last.messages] == ["5", None, "6", None, "7", None]
    assert (before.first_turn, before.last_turn) == (2, 4)
    assert (first.first_turn, first.last_turn) == (1, 1)
    assert first.messages == ({"role": "user", "content": "1"}, {"turn": 1})
    assert (nothing.messages, nothing.first_turn, nothing.last_turn) == ((), 1, 0)
    assert (beyond.first_turn, beyond.last_turn) == (6, 7)
    assert (nobody.turns, nobody.messages, nobody.first_turn, nobody.last_turn) == (0, (), 1, 0)


async def test_sessions_are_listed_and_deleted(store: SessionStore) -> None:
    for session_id in ("a", "b", "c", "b"):
        await store.save_turn(session_id, [{"role": "user", "content": session_id}])
    listed = await store.list_sessions()
    assert await store.delete_sessions(["a", "nobody", "c"]) == 2
    assert await store.delete_sessions([]) == 0
    left = await store.list_sessions()
    gone = await store.load("a")
    kept = await store.load("b")
    # A deleted session's id can start again from nothing.
    await store.save_turn("a", [{"role": "user", "content": "again"}])
    again = await store.load("a")
    assert [(s.id, s.turns) for s in listed] == [("b", 2), ("c", 1), ("a", 1)]
    assert all(s.created_at <= s.updated_at for s in listed)
    assert [s.id for s in left] == ["b"]
    assert (gone.turns, gone.messages) == (0, ())
    assert kept.turns == 2
    assert (again.turns, again.messages) == (1, ({"role": "user", "content": "again"},))


async def test_the_cluster_holds_whoever_beat(store: SessionStore) -> None:
    beat = ReplicaSeen("host:1", "http://host:1", "1.0", 1000.0, (("fx", "Running"),))
    await store.heartbeat(beat)
    await store.heartbeat(attrs.evolve(beat, apps=(("fx", "Stopped"),)))
    [seen] = await store.replicas()
    assert (seen.id, seen.url, seen.version, seen.started) == (
        beat.id,
        beat.url,
        beat.version,
        beat.started,
    )
    assert seen.apps == (("fx", "Stopped"),)
    assert seen.last_seen > 0
    assert 0 <= seen.silent_s < 60


def test_where_names_no_password(make: StoreMaker) -> None:
    assert "s3cret" not in make().where


# What only a shared store does: PostgreSQL.


async def _opened_pg(url: str, replica: str, turn_wait_s: float = 120.0) -> SessionStore:
    state = StateConfig(dir=Path("unused"), database=url, turn_wait_s=turn_wait_s)
    store = make_store(state, {}, replica)
    await store.open()
    return store


async def test_postgresql_refuses_a_newer_schema(database_url: str) -> None:
    store = await _opened_pg(database_url, "r1")
    await store.close()
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute("UPDATE mcpapps_schema SET version = version + 1")
    with pytest.raises(StoreError, match="newer than this mcpapps understands") as refused:
        await _opened_pg(database_url, "r1")
    assert PASSWORD not in str(refused.value)


async def test_postgresql_migrates_once_when_supervisors_start_together(database_url: str) -> None:
    stores: list[SessionStore] = []

    async def one(n: int) -> None:
        stores.append(await _opened_pg(database_url, f"r{n}"))

    async with trio.open_nursery() as nursery:
        for n in range(3):
            nursery.start_soon(one, n)
    for store in stores:
        await store.close()
    with psycopg.connect(database_url) as connection:
        assert connection.execute("SELECT version FROM mcpapps_schema").fetchall() == [
            (SCHEMA_VERSION,)
        ]


async def test_postgresql_turns_of_one_session_wait_for_each_other(database_url: str) -> None:
    one = await _opened_pg(database_url, "one")
    two = await _opened_pg(database_url, "two", turn_wait_s=0.5)
    waited: list[str] = []
    try:
        async with one.hold_turn("s", waited.append):
            with pytest.raises(TurnWaitTimeout, match=r"running on one for more than 0\.5 s"):
                async with two.hold_turn("s", waited.append):
                    pytest.fail("two held a turn one was holding")
            async with two.hold_turn("another session", waited.append):
                pass
        assert waited == ["one"]
        async with two.hold_turn("s", waited.append):
            pass
        assert waited == ["one"]
    finally:
        await one.close()
        await two.close()


async def test_postgresql_frees_the_turn_of_a_connection_that_died(database_url: str) -> None:
    # What the database sees when a supervisor is killed: its connections close.
    one = await _opened_pg(database_url, "one")
    two = await _opened_pg(database_url, "two", turn_wait_s=30)
    waited: list[str] = []
    held_by_two = False

    async def one_dies_in_its_turn() -> None:
        nonlocal held_by_two
        async with one.hold_turn("s", waited.append):
            with psycopg.connect(database_url, autocommit=True) as connection:
                connection.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE application_name = 'mcpapps one'"
                )
            with trio.fail_after(20):
                async with two.hold_turn("s", waited.append):
                    held_by_two = True

    try:
        with pytest.raises(StoreError):  # one's own unlock fails: its connection is gone
            await one_dies_in_its_turn()
    finally:
        await one.close()
        await two.close()
    assert held_by_two


def test_the_database_must_be_a_postgresql_url(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"state\.database must be a PostgreSQL URL"):
        config_from_data({"state": {"database": "mysql://db/x"}}, tmp_path / "config.toml", {})
    for fine in ("postgresql://db/x", "postgres://u@db/x", "${env:DB_URL}"):
        data = {"state": {"database": fine, "turn_wait_s": 5}}
        assert config_from_data(data, tmp_path / "config.toml", {}).state.database == fine


def test_a_reference_to_a_variable_not_set_stops_the_start(tmp_path: Path) -> None:
    state = StateConfig(dir=tmp_path, database="postgresql://u:${env:NOPE_PW}@db/x")
    with pytest.raises(StoreError, match=r"NOPE_PW is not set"):
        make_store(state, {})
    store = make_store(state, {"NOPE_PW": PASSWORD}, "r1")
    assert store.where == "postgresql://u:***@db/x"
    assert store.shared
