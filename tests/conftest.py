"""Shared fixtures. Tests use the real store and the real offline models (no fakes).

The store conformance suite: every test that takes `mem`, `store_target` or `new_store`
runs once per backend in `BACKENDS` (its id ends in ``[sqlite]``, ``[postgres]``...), so
behaviour — add, get, update, delete, history, supersede, expiry, list cursors, export and
import, scope, filters in every channel, search results — is the same on each. A test of
one backend's internals says so with ``@pytest.mark.sqlite_only``. The PostgreSQL server
comes from `pg.py` (`postgres_server`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

import pytest

from engramdb import Memory
from pg import postgres_server, report_postgres  # noqa: F401  (fixtures, summary hook)

REPO = Path(__file__).resolve().parents[1]
NOTES = REPO / "examples" / "notes"
# The backends the conformance suite runs on (PostgreSQL: `store.postgres`, docs/POSTGRES.md).
BACKENDS = ["sqlite", "postgres"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sqlite_only: a test of the SQLite store's own internals")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A `sqlite_only` test runs on the SQLite backend only (not skipped: not collected)."""
    kept, dropped = [], []
    for item in items:
        spec = getattr(item, "callspec", None)
        other = spec is not None and spec.params.get("backend", "sqlite") != "sqlite"
        (dropped if other and item.get_closest_marker("sqlite_only") else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # type: ignore[no-untyped-def]
    report_postgres(terminalreporter)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The backend this test runs on."""
    return str(request.param)


@pytest.fixture()
def new_store(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Callable[[str], str]:
    """A factory of fresh, empty stores of this test's backend: ``new_store("name")`` is a
    SQLite path in the test's folder, or the URL of a new PostgreSQL database."""
    if backend == "sqlite":
        return lambda name="engram": str(tmp_path / f"{name}.db")
    server = request.getfixturevalue("postgres_server")
    return lambda name="engram": server.new_database(name)


@pytest.fixture()
def store_target(new_store: Callable[[str], str]) -> str:
    """The store `mem` uses (for SQLite the file `db_path` names)."""
    return new_store("engram")


@pytest.fixture()
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "engram.db"


@pytest.fixture()
def mem(store_target: str) -> Iterator[Memory]:
    """A fresh store with the fast English model, on each backend."""
    with Memory(store_target, embedder="minilm") as memory:
        yield memory


@pytest.fixture(scope="module")
def notes_mem(tmp_path_factory: pytest.TempPathFactory):
    """The shipped bilingual notes imported once with the default multilingual model."""
    path = tmp_path_factory.mktemp("notes") / "notes.db"
    with Memory(path) as memory:
        memory.import_path(NOTES)
        yield memory
