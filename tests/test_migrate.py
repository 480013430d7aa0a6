"""`engram migrate SRC DST`: a whole store copied between backends, SQLite → PostgreSQL →
SQLite, gives the same store — entries with every field, vectors bit for bit (nothing
embedded again), history, namespaces — and the same search ids and scores (1e-6)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from engramdb import Entry, Filters, InputError, Memory, ModelMismatchError, migrate
from engramdb.cli import main
from engramdb.writer import entry_terms
from pg import PostgresServer
from test_export import QUERIES, build

NAMESPACES = ("alice", "bob")
MORE_QUERIES = [*QUERIES, "Lisbon", "门禁密码", "Oslo trip", "ERR_CONN_RESET", "黄山"]


def state(target: str) -> dict[str, Any]:
    """Everything a store holds that a user can see, per namespace, plus its vectors."""
    out: dict[str, Any] = {}
    with Memory(target) as mem:
        out["stats"] = {k: mem.stats()[k] for k in ("count", "namespaces", "embedder", "dim", "vectors")}
        for ns in NAMESPACES:
            ids = mem.store.ids(ns, Filters())
            entries = {e.id: e.to_dict() for e in mem.get(ids, namespace=ns)}
            history = [{k: v for k, v in e.items() if k != "seq"} for e in mem.store.iter_history(ns)]
            vectors = mem.store.stored_vectors(ns, {e["id"]: e["text"] for e in entries.values()})
            searches = {q: [(h.id, h.score) for h in mem.search(q, k=8, namespace=ns, include_superseded=True,
                                                                 show_expired=True)] for q in MORE_QUERIES}
            searches["view"] = [(h.id, h.score) for h in mem.search("Where does Alice live?", k=8, namespace=ns)]
            listed = [e.id for e in mem.list(namespace=ns, limit=1000, include_superseded=True,
                                              show_expired=True).results]
            out[ns] = {"entries": entries, "history": history, "vectors": vectors, "searches": searches,
                       "list": listed}
    return out


def assert_same(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a["stats"] == b["stats"]
    for ns in NAMESPACES:
        assert a[ns]["entries"] == b[ns]["entries"]
        assert a[ns]["history"] == b[ns]["history"]
        assert a[ns]["list"] == b[ns]["list"]  # rowid order: an updated entry where it moved
        assert a[ns]["vectors"].keys() == b[ns]["vectors"].keys() == a[ns]["entries"].keys()
        for entry_id, vec in a[ns]["vectors"].items():
            assert np.array_equal(vec, b[ns]["vectors"][entry_id])
        for query, hits in a[ns]["searches"].items():
            other = b[ns]["searches"][query]
            assert [i for i, _ in hits] == [i for i, _ in other], (ns, query)
            assert np.allclose([s for _, s in hits], [s for _, s in other], rtol=0, atol=1e-6), (ns, query)


def test_sqlite_to_postgres_to_sqlite(tmp_path: Path, postgres_server: PostgresServer) -> None:
    source = str(tmp_path / "source.db")
    ids = build(source)
    before = state(source)
    # The fixture has what a migrate must carry: both languages, a conversation with facts,
    # a superseded entry, an expired and an expiring one, a deleted entry's history.
    alice = before["alice"]["entries"]
    assert alice[ids["berlin"]]["superseded_by"] == ids["lisbon"]
    assert any(e["expires_at"] for e in alice.values()) and any("黄山" in e["text"] for e in alice.values())
    assert any(e["kind"] == "fact" and e["derived_from"] for e in alice.values())
    assert [e["event"] for e in before["alice"]["history"] if e["id"] == ids["gone"]] == ["ADD", "DELETE"]
    assert any(e["event"] == "UPDATE" for e in before["alice"]["history"])

    url = postgres_server.socket_url(postgres_server.new_database("mig").rsplit("/", 1)[1])
    seen: list[tuple[int, int]] = []
    report = migrate(source, url, progress=lambda done, total: seen.append((done, total)))
    total = before["stats"]["count"]
    assert report["entries"] == report["written"] == total and report["verified"] is True
    assert report["history"] == report["history_restored"] == sum(len(before[ns]["history"]) for ns in NAMESPACES)
    assert report["namespaces"] == {ns: before["stats"]["namespaces"][ns]["count"] for ns in NAMESPACES}
    assert seen[0] == (0, total) and seen[-1] == (total, total)
    assert_same(before, state(url))

    back = str(tmp_path / "back.db")
    result = CliRunner().invoke(main, ["migrate", url, back, "--json", "-q"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["written"] == total
    assert_same(before, state(back))
    again = migrate(url, back, into_nonempty=True)  # PostgreSQL's history JSON is recognised in SQLite
    assert again["written"] == 0 and again["history_restored"] == 0
    assert_same(before, state(back))


def test_refuses_nonempty_destination_and_merges_when_told(tmp_path: Path, new_store) -> None:
    source = str(tmp_path / "source.db")
    build(source)
    target = new_store("target")
    with Memory(target, namespace="alice", embedder="minilm") as mem:
        [mine] = mem.add(["Already here before the migrate."])
    with pytest.raises(InputError, match="not empty"):
        migrate(source, target)
    with Memory(target, namespace="alice") as mem:
        assert mem.count() == 1  # nothing was written
    report = migrate(source, target, into_nonempty=True)
    assert report["written"] == report["entries"] and report["replaced"] == 0
    again = migrate(source, target, into_nonempty=True)  # a re-run adds nothing
    assert again["written"] == 0 and again["unchanged"] == again["entries"] and again["history_restored"] == 0
    with Memory(source) as src, Memory(target) as dst:
        assert dst.count(all_namespaces=True, include_superseded=True, show_expired=True) == \
            src.count(all_namespaces=True, include_superseded=True, show_expired=True) + 1
        assert [e.text for e in dst.get(mine, namespace="alice")] == ["Already here before the migrate."]


def test_an_entry_the_migrate_replaces_ends_its_history_there(tmp_path: Path, new_store) -> None:
    source = str(tmp_path / "source.db")
    with Memory(source, embedder="minilm") as mem:
        [entry_id] = mem.add("Alice lives in Lisbon.")
    target = new_store("replaced")
    migrate(source, target)
    with Memory(target) as mem:
        mem.update(entry_id, text="Alice lives in Porto.")
    report = migrate(source, target, into_nonempty=True)
    assert report["replaced"] == 1
    with Memory(target) as mem:
        events = mem.history(entry_id)
        assert mem.get(entry_id)[0].text == "Alice lives in Lisbon."
        assert [(e.event, e.actor) for e in events][-1] == ("UPDATE", "migrate")
        assert events[-1].old.text == "Alice lives in Porto." and events[-1].new.text == "Alice lives in Lisbon."


def test_refusals(tmp_path: Path) -> None:
    source = str(tmp_path / "source.db")
    build(source)
    with pytest.raises(InputError, match="same store"):
        migrate(source, str(tmp_path / "." / "source.db"))
    with pytest.raises(InputError, match="no store"):
        migrate(str(tmp_path / "missing.db"), str(tmp_path / "x.db"))
    assert not (tmp_path / "x.db").exists()
    other = tmp_path / "e5.db"
    with Memory(other) as mem:  # vectors of another model (written without loading one)
        mem.store.bind_embedder("onnx/other-model", 3)
        entry = Entry(text="made by another model").normalized("default")
        mem.store.upsert("default", [entry], np.ones((1, 3), dtype=np.float32), [entry_terms(entry)])
    with pytest.raises(ModelMismatchError):
        migrate(source, str(other), into_nonempty=True)
    result = CliRunner().invoke(main, ["migrate", source, str(other)])
    assert result.exit_code == 1 and "error:" in result.output


def _ordered_store(target: str) -> dict[str, str]:
    """Two entries that tie on a lexical search, the first updated (so it moved to the newest
    position and now wins the tie), and a session whose middle turn was edited (it keeps its
    place in the conversation)."""
    with Memory(target, embedder="minilm") as mem:
        first, second = mem.add(["alpha beta gamma", "beta alpha gamma"])
        mem.update(first, metadata={"k": "v"})
        mem.add_conversation([("Ann", "I planted tulips."), ("Ben", "Which colour?"), ("Ann", "Red ones.")],
                             session_id="garden", session_time="2024-04-01T09:00:00", extractor="none")
        turns = mem.store.ids("default", Filters(session_id="garden", kinds=["turn"]))
        mem.update(turns[1], text="Ben: Which colour did you pick?")
    return {"first": first, "second": second}


def _orders(target: str) -> dict[str, Any]:
    with Memory(target) as mem:
        tie = mem.search("alpha", k=2, preset="lexical")
        return {"newest": [e.id for e in mem.list(limit=100).results],
                "oldest": [e.id for e in mem.list(limit=100, order="oldest").results],
                "tie": [(h.id, round(h.score, 6)) for h in tie],
                "session": [e.text for e in mem.get(mem.store.ids("default", Filters(session_id="garden",
                                                                                    kinds=["turn"])))]}


def test_a_copy_keeps_list_order_and_tie_breaks_after_an_update(new_store, tmp_path: Path,
                                                                postgres_server: PostgresServer) -> None:
    """SQLite moves an updated entry to the newest position, which is `list`'s order and the
    tie-break of equal scores; a migrate (to either backend) and an export restored elsewhere
    keep it, and keep each turn's place in its session; a turn added to the copy's session
    afterwards comes last, as in the source."""
    source = new_store("source")
    ids = _ordered_store(source)
    want = _orders(source)
    assert want["newest"].index(ids["first"]) < want["newest"].index(ids["second"])  # updated: newer
    assert {i for i, _ in want["tie"]} == {ids["first"], ids["second"]}  # equal BM25: rowid decides
    assert want["session"][1] == "Ben: Which colour did you pick?"
    dump = tmp_path / "dump.jsonl"
    with Memory(source) as mem:
        dump.write_text("".join(json.dumps(line) + "\n" for line in mem.export()))
    copies = {"sqlite": str(tmp_path / "copy.db"), "postgres": postgres_server.new_database("copy")}
    for target in copies.values():
        migrate(source, target)
    copies["dump"] = new_store("dump")
    with Memory(copies["dump"]) as mem:
        mem.import_path(dump)
        again = [json.loads(json.dumps(line)) for line in mem.export()]
    lines = [json.loads(line) for line in dump.read_text().splitlines()]
    assert again[1:] == lines[1:] and all(line["place"] < 0 for line in lines if "entry" in line)
    for name, target in copies.items():
        assert _orders(target) == want, name
    for target in [source, *copies.values()]:
        with Memory(target) as mem:
            mem.add_turn("Ben", "Lovely.", session_id="garden", timestamp="2024-04-01T09:05:00", extractor="none")
            assert [e.text for e in mem.get(mem.store.ids("default", Filters(session_id="garden", kinds=["turn"])))
                    ] == [*want["session"], "Ben: Lovely."]
            assert mem.list(limit=1).results[0].text == "Ben: Lovely."

