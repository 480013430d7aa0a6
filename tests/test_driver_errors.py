"""One transaction discipline for writers, and no raw driver error out of a public call.

The multi-process tests (test_concurrency.py) show the same under real load; these pin
each mechanism down deterministically in one process, with a second SQLite connection
playing the other process.
"""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from engramdb import EngramError, Entry, Memory, StoreBusyError, StoreCorruptError, StoreError


@pytest.fixture()
def filled(tmp_path: Path) -> Path:
    path = tmp_path / "s.db"
    with Memory(path, embedder="minilm") as mem:
        mem.add([f"fact number {i} about tea" for i in range(50)])
    return path


def test_a_writer_holds_the_lock_from_its_first_read(filled: Path) -> None:
    """A delete reads the ids to remove, then removes them. If another process committed in
    between (here: at the moment the delete issues its first DELETE), a deferred transaction
    failed with SQLITE_BUSY_SNAPSHOT. An immediate one already holds the write lock: the
    other writer is the one that waits."""
    other = apsw.Connection(str(filled))
    other.set_busy_timeout(50)
    outcomes: list[str] = []
    with Memory(filled) as mem:
        def meddle(cursor: apsw.Cursor, sql: str, bindings: object) -> bool:
            if sql.startswith("DELETE FROM lexicon") and not outcomes:
                try:
                    other.execute("UPDATE meta SET value = value WHERE key = 'write_seq'")
                    outcomes.append("other process committed in between")
                except apsw.BusyError:
                    outcomes.append("other process had to wait")
            return True

        mem.store._writer.exec_trace = meddle
        assert mem.delete(filters={"kind": "fact"}) == 50
        mem.store._writer.exec_trace = None
        assert outcomes == ["other process had to wait"]
        assert mem.count() == 0
    other.close()


def test_a_held_write_lock_gives_store_busy_while_reads_go_on(filled: Path) -> None:
    blocker = apsw.Connection(str(filled))
    blocker.execute("BEGIN IMMEDIATE")
    blocker.execute("UPDATE meta SET value = value WHERE key = 'write_seq'")
    try:
        with Memory(filled, busy_timeout=0.2) as mem:
            assert mem.search("tea", k=3, preset="lexical").hits  # WAL: readers never wait
            assert mem.search("tea 42", k=3, preset="ping").hits  # its trigram index waits for later
            with pytest.raises(StoreBusyError, match="busy: another process held its lock for over 0.2 s"):
                mem.add(["one more fact"])
            with pytest.raises(StoreBusyError):
                mem.delete(all=True)
            assert mem.count() == 50
        # close() above saved nothing and raised nothing; the lock is still the blocker's.
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    with Memory(filled) as mem:
        mem.add(["one more fact"])
        assert mem.count() == 51


def test_a_damaged_file_gives_store_errors_not_driver_errors(filled: Path) -> None:
    with Memory(filled) as mem:
        mem.add([Entry(text=f"padding entry {i} " + "x" * 2000) for i in range(40)])
    data = bytearray(filled.read_bytes())
    page = 4096
    for start in range(page * 2, len(data) - page, page * 3):  # scribble over every third page
        data[start + 100 : start + 600] = b"\xde\xad\xbe\xef" * 125
    filled.write_bytes(bytes(data))
    raised: list[BaseException] = []
    for call in (lambda m: m.count(), lambda m: m.search("tea", k=5), lambda m: m.stats(),
                 lambda m: m.add(["after the damage"]), lambda m: m.delete(all=True)):
        try:
            with Memory(filled) as mem:
                call(mem)
        except BaseException as exc:  # noqa: BLE001 - the point is what type escapes
            raised.append(exc)
    assert raised, "a damaged file went unnoticed"
    for exc in raised:
        assert isinstance(exc, EngramError) and not isinstance(exc, apsw.Error), repr(exc)
    assert any(isinstance(exc, (StoreCorruptError, StoreError)) for exc in raised)


@pytest.mark.parametrize("page_number", [1, 2])  # the schema's own pages, read when a store opens
def test_a_store_damaged_in_its_first_pages_is_store_corrupt_when_opened(filled: Path, page_number: int) -> None:
    """Damage on the pages the schema check reads gave a raw apsw.CorruptError from `Memory(...)`
    (and a traceback from every CLI command); it is a StoreCorruptError like any other damage."""
    import random

    from click.testing import CliRunner

    from engramdb.cli import main

    data = bytearray(filled.read_bytes())
    noise = random.Random(page_number).randbytes(4096)
    data[4096 * page_number : 4096 * (page_number + 1)] = noise
    filled.write_bytes(bytes(data))
    with pytest.raises(StoreCorruptError, match="is damaged"):
        Memory(filled)
    result = CliRunner().invoke(main, ["--db", str(filled), "stats"])
    assert result.exit_code == 1 and result.output.startswith("error: store ") and "damaged" in result.output, \
        result.output
    assert "Traceback" not in result.output


def test_a_file_re_imported_by_two_writers_holds_one_version(tmp_path: Path) -> None:
    """The chunks a changed file no longer has are found inside the write transaction: a
    writer that read the file before another writer's import still leaves one whole version."""
    from engramdb.ingest.notes import note_entries
    from engramdb.store.base import Filters

    root = tmp_path / "notes"
    root.mkdir()
    note = root / "a.md"
    path = tmp_path / "race.db"
    note.write_text("# A\n\n## One\n\nversion zero text.\n\n## Two\n\nmore zero.\n", encoding="utf-8")
    with Memory(path, embedder="minilm") as a, Memory(path) as b:
        a.import_path(root)
        note.write_text("# A\n\n## One\n\nversion one text.\n", encoding="utf-8")
        doc = note.resolve().as_posix()  # a note is known by its file (ingest/notes.py)
        first = note_entries(note, "a.md", "default", doc)  # writer A reads version one...
        note.write_text("# A\n\n## One\n\nversion two text.\n\n## Three\n\nextra two.\n", encoding="utf-8")
        b.import_path(root)  # ...writer B imports version two meanwhile...
        written, _, removed = a.write_batch(first, namespace="default", replaces=Filters(doc_id=doc))
        texts = sorted(e.text for e in a.get(a.store.ids("default", Filters(path="a.md"))))
        assert texts == sorted(e.text for e in first) == ["A > One\nversion one text."]
        assert (written, removed) == (1, 2)
