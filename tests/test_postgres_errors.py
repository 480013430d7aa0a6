"""What another process or a lost connection does to a PostgreSQL-backed `Memory`: a clear
Engram error, nothing half-written, and the next call works."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from engramdb import Memory
from engramdb.cli import main
from engramdb.errors import InputError, StoreBusyError, StoreError
from engramdb.store.open import redact
from engramdb.store.postgres.schema import WRITE_LOCK
from pg import PostgresServer


def test_a_writer_waiting_past_the_busy_timeout_gets_store_busy(postgres_server: PostgresServer) -> None:
    """Another session holds the store's write lock: a write waits `busy_timeout`, then raises
    `StoreBusyError` (not a driver error), writes nothing, and succeeds once the lock is free."""
    url = postgres_server.new_database("busy")
    with Memory(url, embedder="minilm", busy_timeout=0.3) as mem:
        mem.add("the first entry", )
        holder = psycopg.connect(url, autocommit=True)
        try:
            holder.execute("BEGIN")
            holder.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
            started = time.monotonic()
            with pytest.raises(StoreBusyError, match="busy"):
                mem.add(["blocked entry one", "blocked entry two"])
            assert time.monotonic() - started >= 0.25
            assert mem.count() == 1  # nothing of the refused batch was written
            assert [h.entry.text for h in mem.search("first entry", k=3).hits] == ["the first entry"]  # reads go on
            holder.execute("ROLLBACK")
        finally:
            holder.close()
        mem.add(["blocked entry one", "blocked entry two"])
        assert mem.count() == 3


def test_a_writer_waits_for_the_lock_within_the_timeout(postgres_server: PostgresServer) -> None:
    """A lock released before the timeout makes the write wait, not fail."""
    url = postgres_server.new_database("wait")
    with Memory(url, embedder="minilm", busy_timeout=20) as mem:
        mem.add("one")
        holder = psycopg.connect(url, autocommit=True)
        holder.execute("BEGIN")
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
        release = threading.Timer(0.5, lambda: holder.execute("ROLLBACK"))
        release.start()
        try:
            mem.add("two")
        finally:
            release.join()
            holder.close()
        assert mem.count() == 2


def _terminate_other_sessions(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as admin:
        return int(admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()").fetchone()[0])


def test_lost_connections_raise_store_error_and_the_next_call_reconnects(postgres_server: PostgresServer) -> None:
    """The server ends every session of the store (a restart, a failover, an idle timeout):
    the next search and write each raise `StoreError` or succeed on a new connection — never a
    psycopg error — and afterwards everything works, nothing lost."""
    url = postgres_server.new_database("lost")
    with Memory(url, embedder="minilm") as mem:
        mem.add(["alpha memory about rivers", "beta memory about mountains"])
        assert mem.search("rivers", k=1).hits[0].entry.text == "alpha memory about rivers"
        for call in (lambda: mem.search("mountains", k=1), lambda: mem.add("gamma memory about lakes")):
            assert mem.count() >= 2  # connected (again, after the previous round)
            assert _terminate_other_sessions(url) >= 1
            try:
                call()
            except StoreError as exc:
                assert "cannot reach the database server" in str(exc) or "terminat" in str(exc), exc
            except psycopg.Error as exc:  # pragma: no cover - the failure this test exists for
                pytest.fail(f"a driver error reached the caller: {exc!r}")
        assert mem.search("mountains", k=1).hits[0].entry.text == "beta memory about mountains"
        mem.add("gamma memory about lakes")  # idempotent if the earlier attempt got through
        assert mem.count() == 3
        assert mem.search("lakes", k=1).hits[0].entry.text == "gamma memory about lakes"


def test_a_thread_that_ends_gives_its_connection_back(postgres_server: PostgresServer) -> None:
    """Each thread that ever read kept its connection until the store closed: 30 short-lived
    threads held 35, and two servers after a burst of searches 92 of the server's 100, which
    locked every other client out ("remaining connection slots are reserved")."""
    import gc

    url = postgres_server.new_database("threads")
    database = url.rsplit("/", 1)[1]

    def open_connections() -> int:
        with psycopg.connect(postgres_server.url()) as admin:
            return admin.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> "
                                 "pg_backend_pid()", (database,)).fetchone()[0]  # type: ignore[index]

    with Memory(url, embedder="minilm") as mem:
        mem.add(["Alice moved to Lisbon.", "Bob likes tea."])
        for _ in range(30):
            worker = threading.Thread(target=lambda: mem.search("tea", k=1, preset="lexical"))
            worker.start()
            worker.join()
        gc.collect()
        held = open_connections()
        assert held <= 3, held  # the writer, this thread's reader (and one being closed)
    assert open_connections() == 0


def test_a_schema_of_another_application_or_a_newer_engram_is_refused(postgres_server: PostgresServer) -> None:
    """A schema "engram" of another application was a raw UndefinedColumn error ('column "value"
    does not exist'); a store a newer Engram wrote was opened and written into by an older one."""
    from engramdb import NotAStoreError

    foreign = postgres_server.new_database("foreign")
    with psycopg.connect(foreign, autocommit=True) as admin:
        admin.execute("CREATE EXTENSION IF NOT EXISTS vector; CREATE EXTENSION IF NOT EXISTS pg_trgm; "
                      "CREATE SCHEMA engram; CREATE TABLE engram.meta (k int, v int)")
    for read_only in (False, True):
        with pytest.raises(NotAStoreError, match="holds a schema 'engram' of another application"):
            Memory(foreign, embedder="minilm", read_only=read_only)
    newer = postgres_server.new_database("newer")
    with Memory(newer, embedder="minilm") as mem:
        mem.add("Alice moved to Lisbon.")
    with psycopg.connect(newer, autocommit=True) as admin:
        admin.execute("UPDATE engram.meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match=r"written by a newer Engram \(schema 99"):
        Memory(newer, embedder="minilm")
    with psycopg.connect(newer, autocommit=True) as admin:
        assert admin.execute("SELECT value FROM engram.meta WHERE key = 'schema_version'").fetchone() == ("99",)


def test_extensions_in_a_schema_of_their_own_are_found(postgres_server: PostgresServer) -> None:
    """Supabase installs pgvector in a schema "extensions": the store's fixed search path did not
    see it, and the error advised CREATE EXTENSION vector, which was there already."""
    url = postgres_server.new_database("extschema")
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("CREATE SCHEMA extensions; CREATE EXTENSION vector SCHEMA extensions; "
                      "CREATE EXTENSION pg_trgm SCHEMA extensions")
    with Memory(url, embedder="minilm") as mem:
        mem.add(["Alice moved to Lisbon.", "Bob likes green tea."])
        assert [h.text for h in mem.search("Where did Alice move?", k=1)] == ["Alice moved to Lisbon."]
        assert [h.text for h in mem.search("tea", k=1, preset="semantic")] == ["Bob likes green tea."]
    with psycopg.connect(url) as admin:  # nothing was installed twice
        assert admin.execute("SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
                             "WHERE extname = 'vector'").fetchall() == [("extensions",)]


def test_least_privilege_works_and_a_missing_privilege_says_what_to_ask_for(postgres_server: PostgresServer) -> None:
    """A schema an administrator made for Engram's role was refused without CREATE on the whole
    database ("permission denied for database"); a missing privilege named its SQLSTATE and no
    way out."""
    from engramdb import ReadOnlyStoreError

    role = f"engram_lp_{os.getpid()}"
    prepared, bare, plain = (postgres_server.new_database(n) for n in ("prepared", "bare", "plain"))
    with psycopg.connect(postgres_server.url(), autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")
    with psycopg.connect(prepared, autocommit=True) as admin:
        admin.execute(f"CREATE EXTENSION vector; CREATE EXTENSION pg_trgm; CREATE SCHEMA engram AUTHORIZATION {role}")
    with psycopg.connect(bare, autocommit=True) as admin:
        admin.execute(f"GRANT CREATE ON DATABASE {bare.rsplit('/', 1)[1]} TO {role}")  # but no extensions
    as_role = [url.replace("://postgres@", f"://{role}@", 1) for url in (prepared, bare, plain)]
    with Memory(as_role[0], embedder="minilm") as mem:  # the schema is its own: no database-wide CREATE needed
        mem.add("Alice moved to Lisbon.")
        assert mem.search("Lisbon", k=1).hits[0].text == "Alice moved to Lisbon."
    with pytest.raises(ReadOnlyStoreError, match="ask the database's administrator to run, once: CREATE EXTENSION"):
        Memory(as_role[1], embedder="minilm")
    with pytest.raises(ReadOnlyStoreError, match=f"GRANT CREATE ON DATABASE {plain.rsplit('/', 1)[1]} TO this user"):
        Memory(as_role[2], embedder="minilm")


def test_a_server_that_refuses_the_connection_says_why(postgres_server: PostgresServer) -> None:
    """The server answered: no such database, no such role. That is not 'cannot reach'."""
    missing_db = postgres_server.url("no_such_database")
    with pytest.raises(StoreError, match='refused the connection: database "no_such_database" does not exist'):
        Memory(missing_db)
    missing_role = postgres_server.url().replace("://postgres@", "://no_such_role@", 1)
    assert missing_role != postgres_server.url()
    with pytest.raises(StoreError, match='refused the connection: role "no_such_role" does not exist'):
        Memory(missing_role)


def test_a_password_in_the_url_never_appears(postgres_server: PostgresServer, tmp_path: Path) -> None:
    """POSTGRES.md: passwords never appear in messages — in the userinfo, as a ``password=`` (or
    ``sslpassword=``) query parameter, in the CLI's text and JSON, in migrate's messages and
    report, in errors (a bad parameter, an unreachable server), in `stats` (what /v1/stats
    sends) — also where the driver's own message would repeat it."""
    secret = "s3cretpw"
    bare = postgres_server.new_database("pw")
    forms = [f"{bare}?password={secret}",
             bare.replace("://postgres@", f"://postgres:{secret}@", 1) + f"?sslpassword={secret}"]
    runner = CliRunner()
    source = tmp_path / "source.db"
    with Memory(source, embedder="minilm") as mem:
        mem.add("Alice moved to Lisbon.")
    assert runner.invoke(main, ["migrate", str(source), forms[0]]).exit_code == 0
    unreachable = f"postgresql://postgres:{secret}@127.0.0.1:1/db?password={secret}"
    for n, url in enumerate(forms):
        shown = redact(url)
        assert secret not in shown and shown.startswith("postgresql://postgres")
        with Memory(url) as mem:
            assert mem.path == shown and mem.stats()["path"] == shown and mem.store.location == shown
        outputs = {}
        for name, args in {"stats": ["--db", url, "stats"], "stats --json": ["--db", url, "stats", "--json"],
                           "migrate into": ["migrate", str(source), url],
                           "migrate from": ["migrate", url, str(tmp_path / f"copy{n}.db"), "--json"],
                           "bogus": ["--db", url + "&bogus=1", "stats"],
                           "driver repeats it": ["--db", url + f"&sslmode={secret}", "list"],
                           "unreachable": ["--db", unreachable, "search", "x"]}.items():
            result = runner.invoke(main, args)
            outputs[name] = result.output
            assert secret not in result.output, (name, result.output)
            assert "Error:" not in result.output.replace("error:", ""), (name, result.output)  # no driver class names
        assert json.loads(outputs["stats --json"])["path"] == shown
        assert outputs["migrate into"].startswith(f"error: destination {shown} is not empty")
        assert json.loads(outputs["migrate from"])["source"] == shown
        assert outputs["bogus"].strip() == (f'error: store URL {shown}&bogus=1 is not a valid PostgreSQL URL '
                                            '(invalid URI query parameter: "bogus")')
        assert outputs["driver repeats it"].strip() == (f"error: store URL {shown}&sslmode=*** is not a valid "
                                                        'PostgreSQL URL (invalid sslmode value: "***")')
        assert "cannot reach the database server" in outputs["unreachable"]


def test_a_bad_url_parameter_is_one_clean_line(postgres_server: PostgresServer) -> None:
    """An option the driver does not understand is an `InputError` naming the URL, as a bad port
    or a missing database are — not a driver exception's name."""
    url = postgres_server.new_database("params")
    for query, reason in (("bogus=1", 'invalid URI query parameter: "bogus"'),
                          ("connect_timeout=abc", "bad value for connect_timeout: 'abc'"),
                          ("target_session_attrs=zz", 'invalid target_session_attrs value: "zz"')):
        with pytest.raises(InputError) as caught:
            Memory(f"{url}?{query}")
        assert str(caught.value) == f"store URL {url}?{query} is not a valid PostgreSQL URL ({reason})"


def test_a_server_that_never_answers_is_unavailable_not_a_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    """A host that takes the connection but never answers (a dead peer, a firewall): every
    connection has a connect timeout (10 s unless the URL or PGCONNECT_TIMEOUT says), so the
    call fails as unavailable instead of hanging for the TCP timeout. Loopback only."""
    import socket

    from engramdb.errors import StoreUnavailableError
    from engramdb.store.postgres.connections import DEFAULT_CONNECT_TIMEOUT, connect_options

    monkeypatch.delenv("PGCONNECT_TIMEOUT", raising=False)
    assert connect_options("postgresql://u@127.0.0.1:5/db") == {"connect_timeout": DEFAULT_CONNECT_TIMEOUT}
    assert connect_options("postgresql://u@127.0.0.1:5/db?connect_timeout=3") == {}  # the URL's own wins
    monkeypatch.setenv("PGCONNECT_TIMEOUT", "4")
    assert connect_options("postgresql://u@127.0.0.1:5/db") == {}  # and libpq's variable
    monkeypatch.delenv("PGCONNECT_TIMEOUT")
    with socket.socket() as silent:  # accepts into its backlog, never speaks
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        port = silent.getsockname()[1]
        with pytest.raises(StoreUnavailableError, match="cannot reach the database server"):
            Memory(f"postgresql://engram@127.0.0.1:{port}/db?connect_timeout=1", embedder="minilm").count()


def test_a_password_the_server_asks_for_and_the_url_lacks_is_no_network_fault() -> None:
    """libpq's "fe_sendauth: no password supplied" read as "cannot reach the database server",
    a transient 503 that tells the caller to retry what can never work."""
    from engramdb.errors import StoreUnavailableError
    from engramdb.store.postgres.errors import map_pg_error

    lacking = psycopg.OperationalError('connection to server at "127.0.0.1", port 5432 failed: '
                                       "fe_sendauth: no password supplied")
    mapped = map_pg_error(lacking, "postgresql://engram@127.0.0.1/memory", None)
    assert not isinstance(mapped, StoreUnavailableError) and isinstance(mapped, StoreError)
    assert "refused the connection: fe_sendauth: no password supplied (give it in the URL, PGPASSWORD" in str(mapped)
    gone = psycopg.OperationalError('connection to server at "127.0.0.1", port 5432 failed: Connection refused')
    assert isinstance(map_pg_error(gone, "postgresql://engram@127.0.0.1/memory", None), StoreUnavailableError)
