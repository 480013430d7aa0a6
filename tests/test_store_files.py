"""Which files Engram opens, and how: other applications' files are refused untouched, a
read-only store can still be read (Python and every read command), a failed open leaves
no file behind."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from engramdb import InputError, Memory, NotAStoreError, ReadOnlyStoreError, StoreError
from engramdb.cli import main


def other_application_db(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE entries (id INTEGER PRIMARY KEY, title TEXT)")
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.execute("INSERT INTO entries (title) VALUES ('not yours')")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("kind", ["text", "random", "other app"])
def test_a_file_that_is_not_a_store_is_refused_untouched(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "file.db"
    if kind == "text":
        path.write_text("hello, I am a text file\n")
    elif kind == "random":
        path.write_bytes(os.urandom(8192))
    else:
        other_application_db(path)
    before = path.read_bytes()
    with pytest.raises(NotAStoreError, match="another application" if kind == "other app" else "not a SQLite"):
        Memory(path, embedder="minilm")
    with pytest.raises(NotAStoreError):
        Memory(path, read_only=True)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.db"]  # no -wal, no -shm
    for args in (["stats"], ["search", "x"], ["add", "x"], ["get", "x"]):
        result = CliRunner().invoke(main, ["--db", str(path), "--embedder", "minilm", *args])
        assert result.exit_code == 1 and result.output.startswith("error: ") and "not" in result.output, result.output
    assert path.read_bytes() == before


def test_an_empty_file_becomes_a_store(tmp_path: Path) -> None:
    zero = tmp_path / "zero.db"
    zero.touch()
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    for path in (zero, empty):
        with Memory(path, embedder="minilm") as mem:
            mem.add(["Alice likes tea."])
        with Memory(path) as mem:
            assert mem.count() == 1


def test_a_failed_open_leaves_no_file(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    with pytest.raises(InputError, match="unknown embedder"):
        Memory(path, embedder="bogus")
    result = CliRunner().invoke(main, ["--db", str(path), "--embedder", "bogus", "add", "hi"])
    assert result.exit_code == 1 and "unknown embedder 'bogus'" in result.output
    with pytest.raises(StoreError, match="no store at"):
        Memory(path, read_only=True)
    assert not path.exists() and list(tmp_path.iterdir()) == []


def test_an_embedder_that_cannot_start_creates_no_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENGRAM_EMBED_BASE_URL", raising=False)
    path = tmp_path / "oa.db"
    result = CliRunner().invoke(main, ["--db", str(path), "--embedder", "openai:text-embedding-3-small", "add", "hi"])
    assert result.exit_code == 1 and "no embedding endpoint for 'openai:text-embedding-3-small'" in result.output
    assert list(tmp_path.iterdir()) == []


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store" / "ro.db"
    path.parent.mkdir()
    with Memory(path, embedder="minilm") as mem:
        mem.add(["Alice likes green tea.", "Release v2.3.1 fixed ERR_CONN_RESET."])
    return path


def test_read_only_memory_reads_and_refuses_writes(store: Path) -> None:
    before = store.read_bytes()
    with Memory(store, read_only=True) as mem:
        assert mem.count() == 2
        assert mem.search("green tea", k=1)[0].text == "Alice likes green tea."
        # The substring channel cannot build its index on a read-only store: it scans.
        assert mem.search("v2.3.1", k=1, preset="ping")[0].text.startswith("Release v2.3.1")
        assert mem.stats()["count"] == 2
        entry_id = mem.search("tea", k=1)[0].id
        assert mem.get(entry_id)[0].text == "Alice likes green tea."
        with pytest.raises(ReadOnlyStoreError):
            mem.add(["a new fact"])
        with pytest.raises(ReadOnlyStoreError):
            mem.delete(all=True)
        assert mem.count() == 2
    assert store.read_bytes() == before


CLI = [sys.executable, "-m", "engramdb.cli"]
READ_ONLY_SCRIPT = r"""
set -e
mkdir -p "$MNT"
mount --bind "$SRC" "$MNT"
mount -o remount,bind,ro "$MNT"
for args in "stats --json" "search tea --json" "search v2.3.1 --preset ping --json" "add nope"; do
  echo "== $args"
  $CLI --db "$MNT/ro.db" $args 2>&1 || echo "exit $?"
done
"""


def _run_on_read_only_media(store: Path, tmp_path: Path) -> str:
    """Run the CLI on a read-only view of the store's folder: a read-only bind mount in a
    private mount namespace when root (root ignores file modes), else read-only modes."""
    cli = " ".join(CLI)
    if os.geteuid() != 0:
        store.chmod(0o444)
        store.parent.chmod(0o555)
        try:
            script = READ_ONLY_SCRIPT.split("mount -o remount,bind,ro \"$MNT\"\n", 1)[1]
            env = {**os.environ, "MNT": str(store.parent), "CLI": cli}
            return subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=300).stdout
        finally:
            store.parent.chmod(0o755)
            store.chmod(0o644)
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1) to make a read-only mount as root")
    env = {**os.environ, "SRC": str(store.parent), "MNT": str(tmp_path / "mnt"), "CLI": cli}
    done = subprocess.run(["unshare", "-m", "bash", "-c", READ_ONLY_SCRIPT], env=env, capture_output=True,
                          text=True, timeout=300)
    if "mount" in done.stderr and done.returncode != 0:
        pytest.skip(f"cannot make a read-only mount here: {done.stderr.strip()[:200]}")
    return done.stdout


def test_cli_reads_a_store_on_read_only_media(store: Path, tmp_path: Path) -> None:
    before = store.read_bytes()
    output = _run_on_read_only_media(store, tmp_path)
    sections = {part.split("\n", 1)[0]: part.split("\n", 1)[1] for part in output.split("== ")[1:]}
    assert json.loads(sections["stats --json"])["count"] == 2, output
    assert json.loads(sections["search tea --json"])["hits"][0]["text"] == "Alice likes green tea."
    assert json.loads(sections["search v2.3.1 --preset ping --json"])["hits"][0]["text"].startswith("Release")
    refused = sections["add nope"]
    assert refused.startswith("error: ") and "read-only" in refused and "exit 1" in refused, refused
    assert "Traceback" not in output
    assert store.read_bytes() == before


def test_an_in_memory_path_is_an_input_error() -> None:
    with pytest.raises(InputError, match="in-memory store"):
        Memory(":memory:")


def test_a_store_of_a_newer_schema_is_refused_not_migrated_back(tmp_path: Path) -> None:
    """A store whose schema a newer Engram wrote was opened and its version written back to this
    one's (SQLite), or written into as it was (PostgreSQL): an older client on a shared store."""
    db = tmp_path / "newer.db"
    with Memory(db, embedder="minilm") as mem:
        mem.add("Alice moved to Lisbon.")
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    for read_only in (False, True):
        with pytest.raises(StoreError, match=r"written by a newer Engram \(schema 99; this one reads schema \d+"):
            Memory(db, embedder="minilm", read_only=read_only)
    result = CliRunner().invoke(main, ["--db", str(db), "search", "Lisbon"])
    assert result.exit_code == 1 and "upgrade engramdb" in result.output
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("99",)


def test_a_damaged_row_is_store_corrupt_on_either_backend(store_target: str) -> None:
    """A row whose JSON is not an entry (edited by hand, damaged) ended `list` and `search` in a
    raw TypeError ("unexpected keyword argument 'broken'"), on both backends."""
    from engramdb import StoreCorruptError

    with Memory(store_target, embedder="minilm") as mem:
        [lisbon, _] = mem.add(["Alice moved to Lisbon.", "Bob likes tea."])
        if store_target.startswith("postgresql"):
            import psycopg

            with psycopg.connect(store_target, autocommit=True) as conn:
                conn.execute("""UPDATE engram.entries SET data = '{"broken": true}' WHERE id = %s""", (lisbon,))
        else:
            with sqlite3.connect(store_target) as conn:
                conn.execute("""UPDATE entries SET data = '{"broken": true}' WHERE id = ?""", (lisbon,))
    with Memory(store_target, embedder="minilm") as mem:
        for call in (lambda: mem.list(), lambda: mem.search("Lisbon"), lambda: mem.get([lisbon])):
            with pytest.raises(StoreCorruptError, match="a stored entry cannot be read .*'broken'"):
                call()
    result = CliRunner().invoke(main, ["--db", store_target, "list"])
    assert result.exit_code == 1 and result.output.startswith("error: a stored entry cannot be read")
