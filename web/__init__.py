"""The front door: one ASGI app (web/asgi.py) that checks every request (host, origin, token,
CORS, limits) and then serves the MCP endpoints (`/apps/mcp/<appId>`, `/mcp`), the Quart-Trio
routes (health, login, chat, admin API, events), the app host page with its sandbox, and the
static UI files. docs/architecture.md has the module map.
"""
