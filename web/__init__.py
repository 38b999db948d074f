"""The front door: the Quart-Trio app, the MCP endpoints, auth and the static UI files.

Empty until the front-door issues (see docs/architecture.md).
"""
