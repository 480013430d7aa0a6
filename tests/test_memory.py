"""Memory end to end on the real SQLite store and real embedding models."""

from __future__ import annotations

import json
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from engramdb import Entry, InputError, Memory, ModelMismatchError, Source
from engramdb.errors import EngramError
from engramdb.writer import entry_terms


def top_ids(result) -> list[str]:
    return [hit.id for hit in result]


def test_add_search_get_delete_count(mem: Memory):
    ids = mem.add(["Caroline went to an LGBTQ support group on 7 May 2023.",
                   "Melanie painted a sunrise over the lake in 2022.",
                   "The office coffee machine was replaced in June."])
    assert len(set(ids)) == 3 and mem.count() == 3
    result = mem.search("When did Caroline go to the support group?", k=2)
    assert result[0].id == ids[0]
    assert set(result[0].channels) >= {"semantic", "lexical"}
    assert result[0].channels["lexical"].rank == 1
    assert mem.get([ids[1]])[0].text.startswith("Melanie painted")
    assert mem.delete(ids[0]) == 1
    assert mem.count() == 2
    assert ids[0] not in top_ids(mem.search("support group", k=5))


def test_ids_are_stable_and_re_adding_is_a_no_op(mem: Memory):
    first = mem.add(["Alice moved to Berlin.", "Bob likes jazz."])
    again = mem.add(["Alice moved to Berlin.", "Bob likes jazz."])
    assert first == again
    assert mem.count() == 2
    # whitespace around a text (a line from a file, an LLM's output) is not part of it
    assert mem.add([" Alice moved to Berlin. ", "Bob likes jazz.\n"]) == first
    assert mem.count() == 2 and mem.get(first[0])[0].text == "Alice moved to Berlin."
    other_ns = mem.add("Alice moved to Berlin.", namespace="other")
    assert other_ns[0] != first[0]
    assert mem.count(all_namespaces=True) == 3


def test_re_adding_a_stored_text_keeps_what_the_new_one_leaves_out(mem: Memory):
    [first] = mem.add([Entry(text="Dana prefers aisle seats.", persons=["Dana"], location="Oslo",
                             timestamp="2024-03-01T10:00:00", metadata={"source": "crm", "confidence": 0.9})])
    created = mem.get(first)[0].created_at
    assert created is not None and created == mem.history(first)[0].new.created_at  # on every backend
    assert abs(datetime.fromisoformat(created) - datetime.now(timezone.utc)) < timedelta(hours=1)
    [again] = mem.add("Dana prefers aisle seats.")  # a plain re-add: nothing is lost, nothing logged
    stored = mem.get(again)[0]
    assert again == first and stored.persons == ["Dana"] and stored.location == "Oslo"
    assert stored.metadata == {"source": "crm", "confidence": 0.9} and stored.timestamp.startswith("2024-03-01")
    assert stored.created_at == created and [h.event for h in mem.history(first)] == ["ADD"]
    mem.add(Entry(text="Dana prefers aisle seats.", keywords=["travel"], metadata={"confidence": 0.95}))
    stored = mem.get(first)[0]  # what the new one says is added; the rest stays
    assert stored.keywords == ["travel"] and stored.persons == ["Dana"]
    assert stored.metadata == {"source": "crm", "confidence": 0.95} and stored.created_at == created
    mem.add(Entry(text="Dana prefers aisle seats.", keywords=["seats"], persons=["Eve"]))
    stored = mem.get(first)[0]  # more tags add to the stored ones
    assert (stored.keywords, stored.persons) == (["travel", "seats"], ["Dana", "Eve"])
    mem.add(Entry(text="Dana prefers aisle seats.", keywords=["Travel"], persons=["dana"]))
    stored = mem.get(first)[0]  # one of each, whatever its case
    assert (stored.keywords, stored.persons) == (["travel", "seats"], ["Dana", "Eve"])
    assert mem.update(first, metadata={}).metadata == {}  # clearing a field is an update
    [dup, _] = mem.add([Entry(text="Batch duplicate.", keywords=["k1"]), "Batch duplicate."])
    assert mem.get(dup)[0].keywords == ["k1"]  # twice in one batch: the plain one adds nothing, clears nothing


def test_identifiers_are_found_exactly(mem: Memory):
    texts = [
        "Release v2.3.1 fixed the socket leak.",
        "Release v2.3.0 added the export button.",
        "Release v3.1.2 dropped Python 3.8.",
        "The fix landed in commit 3f2a9c1e after review.",
        "Commit 9b8e7d6 reverted the cache change.",
        "Clients saw ERR_CONN_RESET under load.",
        "Clients saw ERR_TIMEOUT when the VPN was down.",
    ] + [f"Routine maintenance note number {i} about servers." for i in range(30)]
    ids = mem.add(texts)
    assert mem.search("v2.3.1", k=3)[0].id == ids[0]
    assert mem.search("which commit is 3f2a9c1e", k=3)[0].id == ids[3]
    assert mem.search("ERR_CONN_RESET", k=3)[0].id == ids[5]
    assert mem.search("ERR_TIMEOUT", k=3)[0].id == ids[6]


def test_keyword_only_hit_survives_fusion(mem: Memory):
    # A made-up token the embedding model cannot relate to anything.
    ids = mem.add(["Zorblax quarterly figures are in the shared drive."] +
                  [f"Meeting notes about budget planning, item {i}." for i in range(40)])
    result = mem.search("zorblax budget", k=5)
    assert ids[0] in top_ids(result)
    hit = next(h for h in result if h.id == ids[0])
    assert "lexical" in hit.channels


def test_chinese_and_mixed_text_default_model(notes_mem: Memory):
    result = notes_mem.search("黄山山顶晚上需要带什么衣服", k=3)
    assert "厚外套" in result[0].text
    result = notes_mem.search("产品 XYZ 什么时候开始收费", k=3)
    assert "29 元" in result[0].text
    # Semantic recall alone must work for Chinese in the default setup.
    semantic = notes_mem.search("旅行的钱怎么分配", k=3, preset="semantic")
    assert "预算" in semantic[0].text
    # English question over the English note, through the same multilingual model.
    assert "5433" in notes_mem.search("which port does the staging database use?", k=1)[0].text


def test_filters_prefilter_inside_every_channel(mem: Memory):
    # 120 entries very close to the query, none by Zed; 3 by Zed, far from the query.
    near = [Entry(text=f"The deployment pipeline failed at step {i} because the build cache was stale.",
                  persons=["Ann"]) for i in range(120)]
    far = [Entry(text=t, persons=["Zed"]) for t in
           ["Zed bought tomatoes at the market.", "Zed's cat sleeps all day.", "Zed plays chess on Sundays."]]
    far_ids = mem.add(far)
    mem.add(near)
    query = "why did the deployment pipeline fail with a stale build cache"
    # A post-filter on the top 20 would find nothing; a prefilter must find all three.
    unfiltered = mem.search(query, k=20, preset="semantic")
    assert not set(far_ids) & set(top_ids(unfiltered))
    for preset in ("semantic", "default"):
        filtered = mem.search(query, k=10, filters={"person": "zed"}, preset=preset)
        assert set(top_ids(filtered)) == set(far_ids), preset
    lexical = mem.search("build cache chess", k=10, filters={"person": "Zed"}, preset="lexical")
    assert top_ids(lexical) == [far_ids[2]]


def test_time_kind_and_metadata_filters(mem: Memory):
    ids = mem.add([
        Entry(text="Standup: we discussed the API.", timestamp="2023-05-01T09:00:00", metadata={"team": "core", "n": 1}),
        Entry(text="Standup: we discussed the API again.", timestamp="2023-05-20T09:00:00", metadata={"team": "web", "n": 2}),
        Entry(text="Standup: API discussion, third time.", kind="turn", timestamp="2023-06-02T09:00:00+02:00",
              metadata={"team": "core", "flag": True}),
    ])
    assert set(top_ids(mem.search("API standup", filters={"since": "2023-05-10"}))) == {ids[1], ids[2]}
    assert set(top_ids(mem.search("API standup", filters={"until": "2023-05-31"}))) == {ids[0], ids[1]}
    assert top_ids(mem.search("API standup", filters={"kind": "turn"})) == [ids[2]]
    assert set(top_ids(mem.search("API standup", filters={"metadata.team": "core"}))) == {ids[0], ids[2]}
    assert top_ids(mem.search("API standup", filters={"metadata.n": 2})) == [ids[1]]
    assert top_ids(mem.search("API standup", filters={"metadata.flag": True})) == [ids[2]]
    # Timezone rule: aware times are converted to UTC.
    assert mem.get(ids[2])[0].timestamp == "2023-06-02T07:00:00+00:00"
    with pytest.raises(InputError, match="unknown filter"):
        mem.search("API", filters={"persn": "x"})


def test_symbolic_channel_finds_named_people(mem: Memory):
    ids = mem.add([
        Entry(text="Had lunch by the river.", persons=["Gina"]),
        Entry(text="Had lunch by the river.", persons=["Hugo"], source=Source(session_id="s2")),
    ])
    result = mem.search("What did Gina do?", k=2, preset="symbolic")
    assert top_ids(result) == [ids[0]]
    assert result[0].channels["symbolic"].score == 1.0


def test_bad_input_raises_before_writing(mem: Memory):
    mem.add("existing entry")
    with pytest.raises(InputError, match="item 2"):
        mem.add(["fine one", "fine two", Entry(text="bad", kind="nonsense")])
    with pytest.raises(InputError, match="item 1"):
        mem.add(["fine", "   "])
    assert mem.count() == 1


def test_failed_batch_rolls_back_completely(mem: Memory):
    mem.add(["kept one", "kept two"])
    before = (mem.count(), len(mem.search("kept", k=10, preset="lexical")), mem.stats()["vectors"])
    entries = [Entry(text=f"new entry {i}").normalized("default") for i in range(6)]
    vectors = list(mem.embedder.embed_documents([e.text for e in entries]))
    vectors[5] = vectors[5][:100]  # a bad vector on the last row: the insert fails after 5 rows
    with pytest.raises(EngramError, match="vector 5 has shape"):
        mem.store.upsert("default", entries, vectors, [entry_terms(e) for e in entries])
    after = (mem.count(), len(mem.search("kept", k=10, preset="lexical")), mem.stats()["vectors"])
    assert after == before
    assert mem.search("new entry", k=10, preset="lexical").hits == []
    # The store still works and accepts the same entries once fixed.
    mem.add(entries)
    assert mem.count() == 8
    # A concurrent writer's duplicate is skipped, not an error, and not counted as written.
    assert mem.store.upsert("default", entries[:1], mem.embedder.embed_documents([entries[0].text]),
                            [entry_terms(entries[0])]) == (0, 0)
    assert mem.count() == 8


def test_a_write_reports_what_it_wrote_when_another_writer_came_first(store_target: str):
    """Writer A classifies a batch as new; writer B stores part of it; A's write skips those
    (idempotent) and says so: written counts only the rows A stored."""
    with Memory(store_target, embedder="minilm") as a, Memory(store_target, embedder="minilm") as b:
        entries = [Entry(text=f"race entry {i}").normalized("default") for i in range(4)]
        new, unchanged, changed = a.store.classify(entries)
        assert len(new) == 4 and not unchanged and not changed
        b.add(entries[:3])  # meanwhile
        vectors = a.embedder.embed_documents([e.text for e in new])
        assert a.store.upsert("default", new, vectors, [entry_terms(e) for e in new]) == (1, 0)
        assert a.count() == 4 and [h.event for h in a.history(entries[0].id)] == ["ADD"]


def test_model_mismatch_is_refused(store_target: str):
    db_path = store_target
    with Memory(db_path, embedder="minilm") as mem:
        mem.add("hello")
    with pytest.raises(ModelMismatchError, match="MiniLM"):
        Memory(db_path, embedder="e5-small")
    with Memory(db_path) as mem:  # no embedder given: the store's own model is used
        assert mem.embedder.name.startswith("onnx/paraphrase-MiniLM")
        assert mem.search("hello", k=1)[0].text == "hello"


def test_concurrent_readers_with_a_writer(mem: Memory):
    topics = ["volcanoes erupt lava", "penguins live in Antarctica", "espresso needs fine coffee grounds",
              "bicycles have two wheels", "violins have four strings"]
    ids = mem.add(topics)
    errors: list[str] = []

    def reader(n: int) -> None:
        try:
            for i in range(15):
                j = (n + i) % len(topics)
                result = mem.search(topics[j], k=1)
                if result[0].id != ids[j]:
                    errors.append(f"thread {n}: {topics[j]!r} -> {result[0].text!r}")
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(repr(exc))

    def writer() -> None:
        for i in range(10):
            mem.add(f"filler note {i} about gardening tools")

    threads = [threading.Thread(target=reader, args=(n,)) for n in range(6)] + [threading.Thread(target=writer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert mem.count() == 15


def test_group_by_doc_keeps_best_chunk(mem: Memory):
    mem.add([
        Entry(text="Typhoon warning signals have four colours.", kind="chunk", source=Source(doc_id="a.md", chunk_index=0)),
        Entry(text="Typhoon categories depend on wind speed.", kind="chunk", source=Source(doc_id="a.md", chunk_index=1)),
        Entry(text="Rainstorm warnings are issued by the observatory.", kind="chunk", source=Source(doc_id="b.md", chunk_index=0)),
    ])
    grouped = mem.search("typhoon warning", k=5, group_by="doc")
    docs = [h.entry.source.doc_id for h in grouped]
    assert docs == ["a.md", "b.md"]
    assert "warning signals" in grouped[0].text


def test_delete_requires_a_target(mem: Memory):
    mem.add(["a note", "another note"])
    with pytest.raises(InputError):
        mem.delete()
    assert mem.delete(all=True) == 2
    assert mem.count() == 0


def test_in_memory_path_is_rejected(tmp_path: Path):
    with pytest.raises(EngramError, match="file path"):
        Memory(":memory:")


def test_entry_json_round_trip():
    entry = Entry(text="x", persons=["A"], source=Source(path="p.md", heading_path=["H"]), metadata={"k": [1]})
    data = json.loads(json.dumps(entry.normalized("ns").to_dict()))
    back = Entry.from_dict(data)
    assert back.normalized("ns").to_dict() == entry.normalized("ns").to_dict()
    with pytest.raises(ValueError, match="unknown field"):
        Entry.from_dict({"text": "x", "colour": "red"})


@pytest.mark.sqlite_only
def test_hnsw_graph_is_saved_and_restored_with_the_store(db_path: Path, monkeypatch):
    from engramdb.store import vectors

    monkeypatch.setattr(vectors, "ANN_MIN", 300)
    texts = [f"Note {i}: {word} about {topic}" for i, (word, topic) in enumerate(
        (w, t) for w in ["thoughts", "questions", "plans", "doubts", "ideas", "facts"]
        for t in ["gardening", "tax returns", "guitar practice", "sourdough bread", "marathon training",
                  "bird watching", "chess openings", "home wiring", "sailing knots", "tea brewing"] * 6)]
    with Memory(db_path, embedder="minilm") as mem:
        mem.add(texts)
        before = [h.id for h in mem.search("sourdough bread ideas", k=5, preset="semantic")]
        assert mem.store._vectors._ann is not None
    import apsw

    conn = apsw.Connection(str(db_path))
    assert conn.execute("SELECT count FROM ann_snapshot").fetchone()[0] == len(texts)
    conn.close()
    with Memory(db_path) as mem:
        mem.store.warm()
        index = mem.store._vectors
        assert index._ann is not None and index._ann_count == len(texts)
        after = [h.id for h in mem.search("sourdough bread ideas", k=5, preset="semantic")]
        # a delete invalidates the snapshot and the graph is rebuilt without the row
        mem.delete(after[0])
        assert after[0] not in [h.id for h in mem.search("sourdough bread ideas", k=5, preset="semantic")]
    assert before == after


def test_namespaces_are_isolated_in_every_channel(store_target: str):
    db_path = store_target
    with Memory(db_path, embedder="minilm", namespace="alice") as mem:
        a = mem.add(Entry(text="Dentist appointment with Dr Ruiz on Friday", persons=["Ruiz"]))
        b = mem.add(Entry(text="Dentist appointment with Dr Ruiz on Friday", persons=["Ruiz"]), namespace="bob")
        assert a != b
        for preset in ("default", "semantic", "lexical", "symbolic"):
            assert top_ids(mem.search("When is the appointment with Ruiz?", preset=preset)) == a, preset
            assert top_ids(mem.search("When is the appointment with Ruiz?", preset=preset, namespace="bob")) == b
        assert mem.search("appointment", namespace="carol").hits == []


def test_a_note_is_tagged_with_the_known_people_it_names(store_target: str) -> None:
    """A note added with no people named Alice only in its text, so the symbolic channel found
    Alice's conversation turns and not it ("Alice: Her name is Biscuit." above "Alice moved to
    Porto." for "Where does Alice live?"). It now carries the people its namespace already knows
    that its text names, spelt as written; chat roles, words that merely contain a name, turns and
    notes that give their own people are left as they are."""
    with Memory(store_target, embedder="minilm") as mem:
        mem.add_conversation([("Alice", "I adopted a dog last week."), ("Bob", "What's her name?"),
                              ("Alice", "Her name is Biscuit."), ("user", "Nice."), ("小王", "我下周去杭州。")],
                             session_id="s1", session_time="2026-12-01T10:00:00")
        ids = mem.add(["ALICE moved to Porto.", "Malice is not a name.", "The user manual is on the shelf.",
                       {"text": "Bob and Alice play chess.", "persons": ["Bob"]}, "小王的生日是五月三日。",
                       {"text": "Alice: see you", "kind": "turn", "source": {"session_id": "s9", "speaker": "Alice"}}])
        people = [e.persons for e in mem.get(ids)]
        assert people == [["ALICE"], [], [], ["Bob"], ["小王"], []], people
        [moved] = [h for h in mem.search("Where does Alice live?", k=5) if "Porto" in h.text]
        assert "symbolic" in moved.channels
        other = Memory(store_target, namespace="elsewhere")  # names are known per namespace
        try:
            [alone] = other.get(other.add("Alice moved to Porto."))
            assert alone.persons == []
        finally:
            other.close()
