"""`python -m supervisor` is the same as the `mcpapps` command."""

from supervisor.process.cli import main

raise SystemExit(main())
