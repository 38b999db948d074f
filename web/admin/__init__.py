"""The admin API of the front door (what `mcpapps` talks to), `/metrics`, the cluster list, the
saved chat sessions and the events WebSocket of the control page."""
