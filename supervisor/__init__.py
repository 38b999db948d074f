"""mcpapps: a resilient Trio-based supervisor that hosts MCP Apps.

Two layers, kept apart: `supervisor/process/` is the process (the root supervisor, the command
line, signals, reload) at the top, and `supervisor/model/` is the pure model (configuration,
manifests, discovery) at the bottom, under the actors and the front door.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("mcpapps-supervisor")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0+unknown"
