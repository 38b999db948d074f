"""The front door's token: configured, read from a file, or generated once into the state dir."""

from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path

from supervisor.model.config import Config
from supervisor.model.errors import McpappsError

logger = logging.getLogger("mcpapps.web")

GENERATED_TOKEN = "token"  # file name inside [state] dir


class TokenError(McpappsError):
    pass


def resolve_token(config: Config, *, require_auth: bool) -> str | None:
    """`server.token`, else the first line of `server.token_file`, else (only when auth is
    required) the token in `<state dir>/token`, created with mode 0600 if it does not exist, so
    a restart keeps the same token."""
    server = config.server
    if server.token:
        return server.token
    if server.token_file is not None:
        try:
            token = server.token_file.read_text(encoding="utf-8").strip()
        except OSError as error:
            raise TokenError(
                f"cannot read server.token_file {server.token_file}: {error.strerror}"
            ) from None
        except UnicodeDecodeError:
            raise TokenError(f"server.token_file {server.token_file} is not UTF-8 text") from None
        if not token:
            raise TokenError(f"server.token_file {server.token_file} is empty")
        return token
    if not require_auth:
        return None
    return _generated(config.state.dir / GENERATED_TOKEN)


def _generated(path: Path) -> str:
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        token = ""
    except OSError as error:
        raise TokenError(f"cannot read the generated token {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise TokenError(
            f"the generated token {path} is not UTF-8 text: delete it to have a new one made"
        ) from None
    if token:
        logger.info("auth is required: the token is in %s", path)
        return token
    # Hex, not urlsafe base64: a token starting with '-' reads as an option on a command line.
    token = secrets.token_hex(32)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # O_EXCL with mode 0600: the token is never readable by others, not even for a moment.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as file:
            file.write(token + "\n")
    except OSError as error:
        raise TokenError(f"cannot write the generated token to {path}: {error.strerror}") from None
    logger.warning("auth is required and no token is configured: generated one into %s", path)
    return token
