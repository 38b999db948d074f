"""Picks the session store `[state]` asks for: SQLite in the state dir unless `database` names
a PostgreSQL server."""

from __future__ import annotations

from collections.abc import Mapping

from actors.chat import CHAT_DATABASE
from actors.chatstore import ChatStore
from actors.sessionstore import SessionStore
from supervisor.model.config import StateConfig


def make_store(state: StateConfig, environ: Mapping[str, str]) -> SessionStore:
    return ChatStore(state.dir / CHAT_DATABASE)
