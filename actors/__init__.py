"""The actor runtime and the actors: app, registry, chat hub and sessions, the tool bridge and
the agent engines (see docs/architecture.md)."""
