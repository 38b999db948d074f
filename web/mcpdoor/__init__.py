"""The MCP endpoints of the front door: `/apps/mcp/<appId>` and `/mcp`, the SDK's server under its
session manager, the lean path of the hot request, round trips of the 2026-07-28 era and the
session affinity of several supervisors."""
