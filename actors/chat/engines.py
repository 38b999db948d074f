"""Picks the agent engine config.toml asks for."""

from __future__ import annotations

from collections.abc import Mapping

from actors.chat.agent import Engine
from actors.chat.bridge import ToolBridge
from actors.chat.direct_engine import DirectEngine
from supervisor.model.config import AgentConfig


def make_engine(agent: AgentConfig, bridge: ToolBridge, environ: Mapping[str, str]) -> Engine:
    if agent.engine == "openai":
        from actors.chat.openai_engine import OpenAIEngine

        return OpenAIEngine.from_config(agent, bridge, environ)
    return DirectEngine(bridge)
