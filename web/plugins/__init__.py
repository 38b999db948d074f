"""The OpenAI plugin extensions of MCP Apps, as the control page and its HTTP API host them:
structured settings, composer @-mentions and onboarding (docs/decisions.md has the table of
what is done)."""
