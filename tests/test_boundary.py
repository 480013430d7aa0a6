"""The storage boundary: nothing above `engramdb.store` knows which backend runs.

Code outside the store package imports only the protocol (`store.base`) and the factory
(`store.open`), never a database driver, and writes no SQL. The one exception is the
embedder's own vector cache (`embed/cache.py`), a private file of the model, not a store.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

from engramdb import InputError, Memory, StoreError
from engramdb.store.open import backend_of, open_store, redact, store_exists

from test_imports import SRC, imports_of

STORE = SRC / "store"
ALLOWED_STORE_MODULES = {"engramdb.store", "engramdb.store.base", "engramdb.store.open"}
DRIVERS = {"apsw", "sqlite3", "psycopg", "psycopg2", "asyncpg"}
SQL = re.compile(r"\b(SELECT|INSERT INTO|DELETE FROM|CREATE (TABLE|INDEX|EXTENSION)|UPDATE \w+ SET|PRAGMA)\b")
OWN_CACHE = {SRC / "embed" / "cache.py"}  # the embedder's vector cache: sqlite3, its own file


def _outside_store() -> list[Path]:
    return [p for p in SRC.rglob("*.py") if STORE not in p.parents]


def _driver_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found & DRIVERS


def test_nothing_above_the_store_imports_a_driver_or_a_backend() -> None:
    drivers = {str(p.relative_to(SRC)): sorted(_driver_imports(p)) for p in _outside_store()
               if p not in OWN_CACHE and _driver_imports(p)}
    assert drivers == {}
    backends = {str(p.relative_to(SRC)): sorted(m for m in imports_of(p)
                                                 if m.startswith("engramdb.store") and m not in ALLOWED_STORE_MODULES)
                for p in _outside_store()}
    assert {k: v for k, v in backends.items() if v} == {}


def test_nothing_above_the_store_writes_sql() -> None:
    found = []
    for path in _outside_store():
        if path in OWN_CACHE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.search(node.value):
                found.append(f"{path.relative_to(SRC)}:{node.lineno}: {node.value[:60]!r}")
    assert found == []


def test_the_checks_can_fail(tmp_path: Path) -> None:
    """The two scans above do see a driver import and a SQL string when there is one."""
    sample = tmp_path / "sample.py"
    sample.write_text('import apsw\nQUERY = "SELECT id FROM entries"\n', encoding="utf-8")
    assert _driver_imports(sample) == {"apsw"}
    assert SQL.search(ast.parse(sample.read_text()).body[1].value.value)  # type: ignore[attr-defined]


def test_the_store_parts_do_not_reach_into_the_sqlite_store() -> None:
    """timeline, substring, listing, gazetteer and mirrors get the file, not the store."""
    for name in ("timeline", "substring", "listing", "gazetteer", "mirrors", "channels", "sqlite_db"):
        assert "engramdb.store.sqlite" not in imports_of(STORE / f"{name}.py"), name
    neutral = {"channels", "gazetteer"}
    for name in neutral:  # backend-neutral: no driver, no SQL
        path = STORE / f"{name}.py"
        assert not _driver_imports(path) and not SQL.search(path.read_text(encoding="utf-8")), name


@pytest.mark.parametrize(("target", "backend"), [
    ("engram.db", "sqlite"), ("/tmp/x/engram.db", "sqlite"), ("./weird:name.db", "sqlite"),
    ("postgresql://engram:secret@db.example:5432/memory", "postgres"),
    ("postgres://engram@localhost/memory", "postgres"),
    ("postgresql://engram:@/memory?host=/var/run/postgresql", "postgres"),
])
def test_targets_name_their_backend(target: str, backend: str) -> None:
    assert backend_of(target) == backend


def test_unknown_schemes_and_urls_without_a_database_are_refused() -> None:
    with pytest.raises(InputError, match="unknown store URL scheme 'mysql'"):
        backend_of("mysql://u@h/db")
    with pytest.raises(InputError, match="names no database"):
        open_store("postgresql://engram@localhost")


@pytest.mark.parametrize("url", ["postgresql://engram:secret@localhost:5432/memory",
                                 "postgresql://engram:@/memory?host=/tmp/pgsock"])
def test_an_unreachable_postgres_url_is_a_store_error_without_the_password(url: str, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A URL is opened as a PostgreSQL store: a server that is not there is a `StoreError`
    (never a driver error), and the message never shows the password."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreError, match="cannot reach the database server") as caught:
        Memory(url)
    assert "secret" not in str(caught.value)  # the password never reaches a message
    monkeypatch.setenv("ENGRAM_DB", url)
    with pytest.raises(StoreError, match="cannot reach the database server"):
        Memory()
    assert list(tmp_path.iterdir()) == []  # no file named after the URL was created


def test_redact_hides_only_the_password() -> None:
    assert redact("postgresql://engram:secret@db:5432/memory") == "postgresql://engram:***@db:5432/memory"
    assert redact("postgresql://engram:@/memory?host=/s") == "postgresql://engram:@/memory?host=/s"
    assert redact("notes.db") == "notes.db"


@pytest.mark.parametrize(("target", "shown"), [
    ("postgresql://u@h:5432/db?password=s3cret", "postgresql://u@h:5432/db?password=***"),
    ("postgresql://u@h/db?sslmode=require&PassWord=s3cret&sslpassword=s3cret#x",
     "postgresql://u@h/db?sslmode=require&PassWord=***&sslpassword=***#x"),
    ("postgresql://u:s3cret@[::1]:5432/db?host=/run/pg", "postgresql://u:***@[::1]:5432/db?host=/run/pg"),
    ("postgresql://u:s3/cr@et@h/db", "postgresql://u:***@h/db"),  # raw '/' and '@' in the password
    ("postgresql://u:s3?cret@h/db", "postgresql://u:***@h/db"),  # a raw '?'
    ("postgresql://u:s3cret@h:port/db", "postgresql://u:***@h:port/db"),  # malformed: masked all the same
    ("postgresql://u@h/db?user=a@b", "postgresql://u@h/db?user=a@b"),  # nothing secret
    ("host=h dbname=db password='s3 cret' user=u", "host=h dbname=db password=*** user=u"),
])
def test_redact_masks_every_form_of_password(target: str, shown: str) -> None:
    assert redact(target) == shown
    assert "s3" not in redact(target)


def test_a_keyword_value_string_is_refused_not_taken_for_a_file(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="libpq keyword/value connection string; give a postgresql:// URL") as caught:
        Memory("host=localhost dbname=memory password=s3cret")
    assert "s3cret" not in str(caught.value) and list(tmp_path.iterdir()) == []
    with pytest.raises(InputError, match="not a valid URL") as caught:
        Memory("postgresql://u:s3cret@h:port/db")
    assert "s3cret" not in str(caught.value)


def test_memory_takes_an_opened_store(tmp_path: Path) -> None:
    store = open_store(tmp_path / "given.db")
    with Memory(store=store, embedder="minilm") as mem:
        mem.add(["Alice moved to Berlin."])
        assert mem.path == str(tmp_path / "given.db") and mem.count() == 1
    with pytest.raises(InputError, match="not both"):
        Memory(tmp_path / "a.db", store=open_store(tmp_path / "b.db"))
    assert store_exists(tmp_path / "given.db") and not store_exists(tmp_path / "none.db")


@pytest.mark.parametrize("command", [["stats"], ["search", "hello"], ["add", "a note"]])
def test_the_cli_reports_an_unreachable_server(command: list[str], tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from engramdb.cli import main

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["--db", "postgresql://engram:pw@localhost/memory", *command])
    assert result.exit_code != 0 and "cannot reach the database server" in result.output
    assert "pw@" not in result.output  # the password never reaches a message
    assert result.exception is None or isinstance(result.exception, SystemExit)  # an error message, no traceback
    env = CliRunner(env={"ENGRAM_DB": "postgresql://engram:@/memory?host=/tmp/s"}).invoke(main, command)
    assert env.exit_code != 0 and "cannot reach the database server" in env.output


def test_the_cli_imports_and_searches_a_postgres_store(postgres_server: Any, monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    """``engram --db postgresql://… add / search / stats`` on a real server (the socket URL form)."""
    from click.testing import CliRunner

    from engramdb.cli import main

    monkeypatch.chdir(tmp_path)
    database = postgres_server.new_database("cli").rsplit("/", 1)[1]
    url = postgres_server.socket_url(database)
    runner = CliRunner()
    added = runner.invoke(main, ["--db", url, "--embedder", "minilm", "add", "Alice moved to Berlin in 2021."])
    assert added.exit_code == 0, added.output
    found = runner.invoke(main, ["--db", url, "search", "--json", "Where did Alice move?"])
    assert found.exit_code == 0, found.output
    assert "Berlin" in found.output
    stats = runner.invoke(main, ["--db", url, "stats"])
    assert stats.exit_code == 0 and "PostgreSQL 18" in stats.output, stats.output
    assert list(tmp_path.iterdir()) == []
