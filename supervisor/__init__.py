"""mcpapps: a resilient Trio-based supervisor that hosts MCP Apps.

This package is the process: configuration, manifests, discovery and the command line.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("mcpapps-supervisor")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0+unknown"
