"""The `SessionStore` contract, held against every backend: SQLite (the default) and
PostgreSQL (a real server, tests/support/postgres.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import trio

from actors.sessionstore import SessionStore
from actors.stores import make_store
from supervisor.model.config import StateConfig

BACKENDS = ["sqlite"]

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


def test_where_names_no_password(make: StoreMaker) -> None:
    assert "s3cret" not in make().where
