"""Picks the session store `[state]` asks for: SQLite in the state dir unless `database` names
a PostgreSQL server."""

from __future__ import annotations

from collections.abc import Mapping

from actors.chat.chatstore import ChatStore
from actors.chat.hub import CHAT_DATABASE
from actors.chat.sessionstore import SessionStore, StoreError
from supervisor.model.config import StateConfig
from supervisor.model.envrefs import expand, reference_problems


def make_store(state: StateConfig, environ: Mapping[str, str], replica: str = "") -> SessionStore:
    """`replica` names this supervisor to the others that share the store."""
    if state.database is None:
        return ChatStore(state.dir / CHAT_DATABASE)
    if problems := reference_problems(state.database, environ):
        raise StoreError(f"state.database {'; '.join(problems)}")
    from actors.chat.pgstore import PostgresStore  # psycopg is loaded only when it is used

    url = expand(state.database, environ)
    return PostgresStore(
        url,
        replica=replica or "mcpapps",
        turn_wait_s=state.turn_wait_s,
        connect_wait_s=state.connect_wait_s,
    )
