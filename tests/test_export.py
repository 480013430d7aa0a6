"""`export` then `import` into an empty store gives the same store: entries with every field,
provenance and supersede links, expiry, history (deleted entries' too), and the same answers."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from engramdb import Entry, Filters, InputError, Memory
from engramdb.cli import main

NOTES = Path(__file__).resolve().parents[1] / "examples" / "notes"
QUERIES = ["Where does Alice live?", "黄山山顶晚上冷吗？", "What did Bob say about Oslo last week?", "release v2.3.1"]


def build(path: Path | str) -> dict[str, str]:
    with Memory(path, namespace="alice", embedder="minilm") as mem:
        mem.import_path(NOTES)
        [berlin] = mem.add([Entry(text="Alice lives in Berlin.", persons=["Alice"], metadata={"n": 1, "x": None})])
        [lisbon] = mem.add([Entry(text="Alice moved to Lisbon.", persons=["Alice"])], supersedes=[berlin], actor="bot")
        mem.update(lisbon, text="Alice moved to Lisbon in May 2024.", actor="alice")
        [gone] = mem.add(["A note that will be deleted."])
        mem.delete(gone, actor="alice")
        mem.add(["The door code is 4471."], expires_at="2001-01-01")
        mem.add(["Release v2.3.1 fixed ERR_CONN_RESET."], expires_at="2999-01-01")
        mem.add_conversation([("Bob", "I flew to Oslo last week."), ("Alice", "How was it?")],
                             session_id="s1", session_time="2024-03-14T10:00:00")
        mem.add(["Bob's own fact."], namespace="bob")
    return {"berlin": berlin, "lisbon": lisbon, "gone": gone}


def snapshot(path: Path | str, namespace: str) -> dict:
    with Memory(path, namespace=namespace) as mem:
        ids = mem.store.ids(namespace, Filters())
        entries = {e.id: e.to_dict() for e in mem.get(ids)}
        history = [{k: v for k, v in e.items() if k != "namespace"} for e in mem.store.iter_history(namespace)]
        answers = {q: [(h.id, round(h.score, 6)) for h in mem.search(q, k=5, include_superseded=True,
                                                                      show_expired=True)] for q in QUERIES}
        answers["view"] = [h.id for h in mem.search("Where does Alice live?", k=5)]
        return {"entries": entries, "history": history, "answers": answers}


def test_round_trip_is_exact(tmp_path: Path, new_store) -> None:
    source = new_store("source")
    ids = build(source)
    dump = tmp_path / "dump.jsonl"
    with Memory(source) as mem, dump.open("w", encoding="utf-8") as out:
        for line in mem.export(all_namespaces=True):
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    target = new_store("target")
    with Memory(target) as mem:  # no --embedder: an empty store takes the dump's model
        report = mem.import_path(dump)
        assert report["format"] == "export" and report["namespaces"] == ["alice", "bob"]
        assert mem.stats()["embedder"] == "onnx/paraphrase-MiniLM-L3-v2-mean-256"
    for ns in ("alice", "bob"):
        assert snapshot(target, ns) == snapshot(source, ns)
    restored = snapshot(target, "alice")
    assert restored["entries"][ids["berlin"]]["superseded_by"] == ids["lisbon"]
    assert [e["event"] for e in restored["history"] if e["id"] == ids["gone"]] == ["ADD", "DELETE"]
    facts = [e for e in restored["entries"].values() if e["kind"] == "fact" and e["source"].get("session_id")]
    assert facts and all(set(f["derived_from"]) <= set(restored["entries"]) for f in facts)
    # Importing the same dump again adds nothing, history included.
    with Memory(target) as mem:
        again = mem.import_path(dump)
        assert again["written"] == 0 and again["history_restored"] == 0
    assert snapshot(target, "alice") == snapshot(source, "alice")


def test_restoring_a_dump_over_later_changes_logs_what_it_changed(store_target: str, tmp_path: Path) -> None:
    """History ends with the entry as it is: a restore that reverts an update logs an UPDATE,
    one that brings back a deleted entry an ADD, both by "import"; a restore into an empty
    store adds only the dump's own history."""
    dump = tmp_path / "d.jsonl"
    with Memory(store_target, embedder="minilm") as mem:
        [lisbon] = mem.add("Alice moved to Lisbon.")
        dump.write_text("".join(json.dumps(line) + "\n" for line in mem.export()))
        mem.update(lisbon, text="Alice moved to Faro.")
        mem.import_path(dump)
        assert mem.get(lisbon)[0].text == "Alice moved to Lisbon."
        events = mem.history(lisbon)
        assert [(e.event, e.actor) for e in events] == [("ADD", None), ("UPDATE", None), ("UPDATE", "import")]
        assert events[-1].new is not None and events[-1].new.text == "Alice moved to Lisbon."
        mem.delete(lisbon)
        mem.import_path(dump)
        assert [(e.event, e.actor) for e in mem.history(lisbon)][-2:] == [("DELETE", None), ("ADD", "import")]
    with Memory(tmp_path / "fresh.db", embedder="minilm") as fresh:
        fresh.import_path(dump)
        assert [e.event for e in fresh.history(lisbon)] == ["ADD"]


def test_a_copy_keeps_each_turn_in_its_place(new_store, tmp_path: Path) -> None:
    """A turn edited after it was written keeps its place in its session in an export restored
    elsewhere (and in a migrated copy: both read the store in its order)."""
    from engramdb.migrate import migrate_stores

    first = new_store("a")
    with Memory(first, embedder="minilm") as mem:
        mem.add_conversation([("Ann", "I planted tulips."), ("Ben", "Which colour?"), ("Ann", "Red ones.")],
                             session_id="garden", session_time="2024-04-01T09:00:00", extractor="none")
        ids = mem.store.ids("default", Filters(session_id="garden", kinds=["turn"]))
        mem.update(ids[1], text="Ben: Which colour did you pick?")
        want = [e.text for e in mem.get(mem.store.ids("default", Filters(session_id="garden", kinds=["turn"])))]
        dump = tmp_path / "garden.jsonl"
        dump.write_text("".join(json.dumps(line) + "\n" for line in mem.export()))
    assert want[1] == "Ben: Which colour did you pick?"
    with Memory(new_store("b"), embedder="minilm") as copy:
        copy.import_path(dump)
        got = [e.text for e in copy.get(copy.store.ids("default", Filters(session_id="garden", kinds=["turn"])))]
    assert got == want
    with Memory(first, embedder="minilm") as source, Memory(new_store("c"), embedder="minilm") as target:
        migrate_stores(source.store, target.store)
        moved = [e.text for e in target.get(target.store.ids("default", Filters(session_id="garden", kinds=["turn"])))]
    assert moved == want


def test_export_into_another_namespace_and_errors(tmp_path: Path) -> None:
    source = tmp_path / "source.db"
    build(source)
    runner = CliRunner()
    one = runner.invoke(main, ["--db", str(source), "-n", "bob", "export"])
    assert one.exit_code == 0
    lines = [json.loads(line) for line in one.output.splitlines()]
    assert lines[0]["namespaces"] == ["bob"] and len([x for x in lines if "entry" in x]) == 1
    dump = tmp_path / "bob.jsonl"
    dump.write_text(one.output, encoding="utf-8")
    target = tmp_path / "t.db"
    renamed = runner.invoke(main, ["--db", str(target), "-n", "carol", "import", str(dump), "--json"])
    assert renamed.exit_code == 0, renamed.output
    with Memory(target, namespace="carol") as mem:
        assert [e.text for e in mem.list()] == ["Bob's own fact."]
        assert mem.count(namespace="bob") == 0
    everything = runner.invoke(main, ["--db", str(source), "export", "--all-namespaces"])
    both = tmp_path / "both.jsonl"
    both.write_text(everything.output, encoding="utf-8")
    refused = runner.invoke(main, ["--db", str(target), "-n", "carol", "import", str(both)])
    assert refused.exit_code == 1 and "holds 2 namespaces" in refused.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text(everything.output.replace('"event": "DELETE"', '"event": "ERASE"', 1), encoding="utf-8")
    with Memory(tmp_path / "empty.db") as mem:
        with pytest.raises(InputError, match="history event must be one of"):
            mem.import_path(bad)
        assert mem.count(all_namespaces=True, show_expired=True, include_superseded=True) == 0


def test_export_streams_while_others_write(store_target: str) -> None:
    """Export reads one snapshot: entries written during the stream are not half in it."""
    source = store_target
    with Memory(source, embedder="minilm") as mem:
        mem.add([f"fact {i}" for i in range(600)])
        stream = mem.export()
        header = next(stream)
        first = next(stream)
        mem.add([f"later fact {i}" for i in range(50)])
        rest = list(stream)
    assert header["namespaces"] == ["default"]
    entries = [first["entry"]] + [x["entry"] for x in rest if "entry" in x]
    assert len(entries) == 600 and not any(e["text"].startswith("later") for e in entries)


def test_kill_during_import_of_a_dump_then_rerun(tmp_path: Path) -> None:
    source = tmp_path / "big.db"
    with Memory(source, embedder="minilm") as mem:
        mem.add([f"entry number {i} about rivers and stones" for i in range(2000)])
    dump = tmp_path / "big.jsonl"
    dump.write_text(CliRunner().invoke(main, ["--db", str(source), "export"]).output, encoding="utf-8")
    target = tmp_path / "t.db"
    proc = subprocess.Popen([sys.executable, "-m", "engramdb.cli", "--db", str(target), "import", str(dump), "-q"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(3000):  # until the first batch is committed (or the import ended)
        if proc.poll() is not None:
            break
        if target.exists():
            try:
                with Memory(target, read_only=True) as peek:
                    if peek.count() > 0:
                        break
            except Exception:  # noqa: BLE001 - the file may not hold a schema yet
                pass
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    with Memory(target) as mem:
        assert mem.count() % 256 == 0 or mem.count() == 2000  # whole batches only
        report = mem.import_path(dump)
        assert mem.count() == 2000 and report["entries"] == 2000
        assert mem.store._reader().execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert mem.store._reader().execute("SELECT count(*) FROM history").fetchone()[0] == 2000


def test_a_failed_export_leaves_the_previous_backup_whole(tmp_path: Path) -> None:
    """`export -o backup.jsonl` from a store that turned out damaged truncated the backup there
    to its header, and that dump imported as a success with nothing in it."""
    db, backup = tmp_path / "s.db", tmp_path / "backup.jsonl"
    with Memory(db, embedder="minilm") as mem:
        mem.add([Entry(text=f"note {i} about topic {i % 7} " + "words " * 40) for i in range(60)])
    runner = CliRunner()
    assert runner.invoke(main, ["--db", str(db), "export", "-o", str(backup)]).exit_code == 0
    good = backup.read_bytes()
    assert len(good.splitlines()) > 60
    data = bytearray(db.read_bytes())
    data[len(data) // 2:] = b"\xff" * (len(data) - len(data) // 2)  # the store's second half destroyed
    db.write_bytes(bytes(data))
    failed = runner.invoke(main, ["--db", str(db), "export", "-o", str(backup)])
    assert failed.exit_code == 1 and "damaged" in failed.output
    assert backup.read_bytes() == good
    assert sorted(p.name for p in tmp_path.iterdir()) == ["backup.jsonl", "s.db"]  # no partial file left
    missing = runner.invoke(main, ["--db", str(tmp_path / "copy.db"), "import", str(backup)])
    assert missing.exit_code == 0, missing.output


def test_export_into_a_missing_folder_is_one_clear_line(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with Memory(db, embedder="minilm") as mem:
        mem.add([Entry(text="tea")])
    result = CliRunner().invoke(main, ["--db", str(db), "export", "-o", str(tmp_path / "no" / "x.jsonl")])
    assert result.exit_code == 1
    assert result.output.strip() == f"error: cannot write {tmp_path / 'no' / 'x.jsonl'}: No such file or directory"


def test_export_into_a_pipe_writes_in_place(tmp_path: Path) -> None:
    """-o names a FIFO (or /dev/stdout): the dump goes through it, never renamed over it (as
    root, a rename over /dev/full replaced the device with a file)."""
    import os
    import stat
    import threading

    db, fifo = tmp_path / "s.db", tmp_path / "pipe"
    with Memory(db, embedder="minilm") as mem:
        mem.add([Entry(text="tea"), Entry(text="coffee")])
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = CliRunner().invoke(main, ["--db", str(db), "export", "-o", str(fifo)])
    reader.join(timeout=120)
    assert result.exit_code == 0, result.output
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    lines = [json.loads(line) for line in received[0].decode().splitlines()]
    assert sorted(line["entry"]["text"] for line in lines if "entry" in line) == ["coffee", "tea"]
    folder = CliRunner().invoke(main, ["--db", str(db), "export", "-o", str(tmp_path)])
    assert folder.exit_code == 1 and folder.output.strip() == f"error: cannot write {tmp_path}: it is a folder"


def test_export_through_a_link_writes_the_file_it_names(tmp_path: Path) -> None:
    db, real, link = tmp_path / "s.db", tmp_path / "real.jsonl", tmp_path / "latest.jsonl"
    with Memory(db, embedder="minilm") as mem:
        mem.add([Entry(text="tea")])
    real.write_text("old\n", encoding="utf-8")
    link.symlink_to(real)
    assert CliRunner().invoke(main, ["--db", str(db), "export", "-o", str(link)]).exit_code == 0
    assert link.is_symlink() and "tea" in real.read_text(encoding="utf-8")


def test_an_export_keeps_the_backups_permissions(tmp_path: Path) -> None:
    import os

    db, backup, fresh = tmp_path / "s.db", tmp_path / "backup.jsonl", tmp_path / "fresh.jsonl"
    with Memory(db, embedder="minilm") as mem:
        mem.add([Entry(text="tea")])
    backup.write_text("old\n", encoding="utf-8")
    backup.chmod(0o640)
    for target in (backup, fresh):
        assert CliRunner().invoke(main, ["--db", str(db), "export", "-o", str(target)]).exit_code == 0
    umask = os.umask(0)
    os.umask(umask)
    assert (backup.stat().st_mode & 0o777, fresh.stat().st_mode & 0o777) == (0o640, 0o666 & ~umask)


def _dump_of(tmp_path: Path) -> tuple[Path, list[dict]]:
    db = tmp_path / "s.db"
    with Memory(db, namespace="alice", embedder="minilm") as mem:
        mem.add([Entry(text=f"note {i} about the garden") for i in range(5)])
        mem.delete(mem.add(["a note deleted again"])[0])
        lines = list(mem.export())
    return db, lines


def _write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_dump_cut_short_is_refused_and_imports_nothing(tmp_path: Path) -> None:
    """A dump ends with a line counting what it holds. Before it, a dump cut after some of its
    lines (a full disk, a dropped /v1/export stream, a partial copy) restored the part that
    arrived and reported success."""
    _, lines = _dump_of(tmp_path)
    assert lines[0]["engram_export"] == 2
    assert lines[-1] == {"end": {"entries": 5, "history": sum("history" in x for x in lines)}}
    target = tmp_path / "copy.db"
    cases = {
        "cut.jsonl": (lines[:4], "was cut short (no end line after 3 entries and 0 history events)"),
        "no-history.jsonl": ([x for x in lines if "history" not in x], "the end line counts 5 entries and"),
        "after-end.jsonl": (lines + [lines[1]], "a line after the dump's end line"),
        "bad-end.jsonl": (lines[:-1] + [{"end": {"entries": "5", "history": 0}}], "the end line must be"),
    }
    for name, (content, message) in cases.items():
        path = _write(tmp_path / name, content)
        with Memory(target, embedder="minilm") as mem:
            with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
                mem.import_path(path)
            assert mem.store.count() == 0 and list(mem.store.iter_history(None)) == []
        result = CliRunner().invoke(main, ["--db", str(target), "import", str(path)])
        assert result.exit_code == 1 and message in result.output, result.output
    with Memory(target, embedder="minilm") as mem:  # the whole dump restores
        assert mem.import_path(_write(tmp_path / "whole.jsonl", lines))["written"] == 5


def test_a_version_1_dump_without_an_end_line_still_imports(tmp_path: Path) -> None:
    _, lines = _dump_of(tmp_path)
    old = [{**lines[0], "engram_export": 1}] + [x for x in lines[1:] if "end" not in x]
    with Memory(tmp_path / "copy.db", embedder="minilm") as mem:
        report = mem.import_path(_write(tmp_path / "v1.jsonl", old))
        assert report["written"] == 5 and report["namespaces"] == ["alice"]
    with Memory(tmp_path / "other.db", embedder="minilm") as mem:  # an end line is not a version-1 line
        with pytest.raises(InputError, match=r"v1b.jsonl:\d+: expected"):
            mem.import_path(_write(tmp_path / "v1b.jsonl", old + [lines[-1]]))


def test_history_of_a_namespace_without_entries_restores(tmp_path: Path) -> None:
    """An export of every namespace lists those holding entries, and carries the history of
    one whose entries were all deleted: that dump restores whole, history included."""
    with Memory(tmp_path / "s.db", embedder="minilm") as mem:
        [gone] = mem.add(["gone soon"], namespace="x")
        mem.delete(gone, namespace="x")
        mem.add(["stays"], namespace="y")
        lines = list(mem.export(all_namespaces=True))
    assert lines[0]["namespaces"] == ["y"] and {x["history"]["namespace"] for x in lines if "history" in x} == {"x", "y"}
    with Memory(tmp_path / "copy.db", embedder="minilm") as mem:
        report = mem.import_path(_write(tmp_path / "all.jsonl", lines))
        assert (report["written"], report["history_restored"]) == (1, 3)
        assert [e.event for e in mem.history(gone, namespace="x")] == ["ADD", "DELETE"]
