"""The chat side: the chat hub and its sessions, turns as values, the agent engines and the tool
bridge they call through, and the stores that keep chat sessions (SQLite, PostgreSQL)."""
