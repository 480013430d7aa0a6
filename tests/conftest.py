"""Shared fixtures. Tests use the real store and the real offline models (no fakes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engramdb import Memory

REPO = Path(__file__).resolve().parents[1]
NOTES = REPO / "examples" / "notes"


@pytest.fixture()
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "engram.db"


@pytest.fixture()
def mem(db_path: Path):
    """A fresh store with the fast English model."""
    with Memory(db_path, embedder="minilm") as memory:
        yield memory


@pytest.fixture(scope="module")
def notes_mem(tmp_path_factory: pytest.TempPathFactory):
    """The shipped bilingual notes imported once with the default multilingual model."""
    path = tmp_path_factory.mktemp("notes") / "notes.db"
    with Memory(path) as memory:
        memory.import_path(NOTES)
        yield memory
