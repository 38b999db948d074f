"""A real PostgreSQL server for the tests: Debian's `postgresql` package, `initdb` into a
temporary folder and `pg_ctl` on a free loopback port, password login only. Run as root (CI's
`make test`), the server runs as the `postgres` user the package made: initdb refuses root.

Never skipped: without PostgreSQL the tests that need it fail, naming the command that installs
it."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.support.helpers import free_port

PASSWORD = "s3cret-pw-for-tests"
INSTALL = "apt-get install -y postgresql (make test does it when run as root)"


def _bin_dir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        pytest.fail(f"PostgreSQL is not installed, and these tests need it: {INSTALL}")
    return Path(found[-1]).parent


class PostgresServer:
    def __init__(self, folder: Path, port: int, as_user: list[str], bin_dir: Path) -> None:
        self.folder = folder
        self.port = port
        self._as_user = as_user
        self._bin = bin_dir

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres:{PASSWORD}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A database of its own for one test: its URL."""
        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def _run(self, *command: str) -> None:
        subprocess.run(
            [*self._as_user, str(self._bin / command[0]), *command[1:]],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd=self.folder,
        )

    def start(self) -> None:
        data = self.folder / "data"
        password_file = self.folder / "password"
        password_file.write_text(PASSWORD)
        self._run(
            "initdb", "-D", str(data), "-U", "postgres", "--auth=scram-sha-256",
            f"--pwfile={password_file}", "--no-sync",
        )  # fmt: skip
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1"
            f" -c unix_socket_directories={self.folder} -c fsync=off -c max_connections=200"
        )
        log = str(self.folder / "log")
        self._run("pg_ctl", "-D", str(data), "-o", options, "-w", "-l", log, "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.folder / "data"), "-m", "immediate", "-w", "stop")


@contextlib.contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    bin_dir = _bin_dir()
    folder = Path(tempfile.mkdtemp(prefix="mcpapps-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.chown(folder, owner.pw_uid, owner.pw_gid)
        folder.chmod(0o700)
        as_user = ["runuser", "-u", "postgres", "--"]
    server = PostgresServer(folder, free_port(), as_user, bin_dir)
    try:
        server.start()
    except subprocess.CalledProcessError as error:
        log = folder / "log"
        tail = log.read_text()[-2000:] if log.exists() else ""
        pytest.fail(f"PostgreSQL did not start: {error.stderr.decode()}{tail}")
    try:
        yield server
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)
