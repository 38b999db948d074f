"""The actor runtime and the actors: app, registry, chat session (see docs/architecture.md).

Empty until the supervision issue: discovery (in `supervisor`) produces the values these actors
will be started from.
"""
