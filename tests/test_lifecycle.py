"""Memory that changes over time: update in place, supersede, expiry, and the history log."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from engramdb import Entry, Filters, InputError, Memory, NotFoundError
from engramdb.cli import main

PRESETS = ("default", "lexical", "semantic", "symbolic", "ping", "molore")


def texts(result) -> list[str]:
    return [h.text for h in result]


class CountingEmbedder:
    """The real model, counting the texts it embeds (to show what is embedded again)."""

    def __init__(self, inner) -> None:
        self.inner, self.texts = inner, []
        self.name, self.dim = inner.name, inner.dim

    def embed_documents(self, batch):
        self.texts += list(batch)
        return self.inner.embed_documents(batch)

    def embed_query(self, text):
        return self.inner.embed_query(text)


def test_update_changes_in_place_and_logs_both_versions(mem: Memory) -> None:
    [entry_id] = mem.add([Entry(text="Alice's address is 3 Rua Augusta.", persons=["Alice"],
                                metadata={"source": "chat"})], actor="agent")
    before = mem.get(entry_id)[0]
    updated = mem.update(entry_id, text="Alice's address is 12 Rua Augusta.", metadata={"verified": True},
                         actor="alice")
    assert updated.id == entry_id and updated.created_at == before.created_at
    assert updated.text == "Alice's address is 12 Rua Augusta." and updated.metadata == {"verified": True}
    assert updated.persons == ["Alice"]
    assert mem.count() == 1
    assert texts(mem.search("12 Rua Augusta", k=3, preset="lexical")) == [updated.text]
    assert mem.search("3 Rua Augusta address", k=3, preset="lexical")[0].text == updated.text  # only one version
    events = mem.history(entry_id)
    assert [(e.event, e.actor) for e in events] == [("ADD", "agent"), ("UPDATE", "alice")]
    assert events[0].old is None and events[0].new.text == before.text
    assert events[1].old.text == before.text and events[1].new.text == updated.text
    assert events[1].old.metadata == {"source": "chat"}
    # Updating to the same values is a no-op: no event.
    mem.update(entry_id, text=updated.text)
    assert len(mem.history(entry_id)) == 2


def test_update_that_keeps_the_text_is_not_embedded_again(mem: Memory) -> None:
    counting = CountingEmbedder(mem.embedder)
    mem._embedder = counting
    [entry_id] = mem.add(["Bob prefers window seats."])
    assert counting.texts == ["Bob prefers window seats."]
    vector = mem.store.stored_vectors("default", {entry_id: "Bob prefers window seats."})[entry_id].copy()
    mem.update(entry_id, metadata={"airline": "TAP"}, expires_at="2999-01-01")
    assert counting.texts == ["Bob prefers window seats."]  # nothing embedded again
    kept = mem.store.stored_vectors("default", {entry_id: "Bob prefers window seats."})[entry_id]
    assert (kept == vector).all()
    mem.update(entry_id, text="Bob prefers aisle seats.")
    assert counting.texts[-1] == "Bob prefers aisle seats."
    assert mem.search("aisle seat", k=1, preset="semantic")[0].id == entry_id


def test_update_errors_change_nothing(mem: Memory) -> None:
    [entry_id] = mem.add(["A fact."])
    mem.add(["Bob's fact."], namespace="bob")
    with pytest.raises(NotFoundError):
        mem.update("no-such-id", text="x")
    with pytest.raises(NotFoundError):
        mem.update(entry_id, text="x", namespace="bob")  # another namespace's id
    with pytest.raises(InputError, match="cannot change kind"):
        mem.update(entry_id, kind="turn")
    with pytest.raises(InputError, match="needs at least one field"):
        mem.update(entry_id)
    with pytest.raises(InputError, match="location must be a string"):
        mem.update(entry_id, location=5)
    with pytest.raises(InputError, match="out of range"):
        mem.update(entry_id, expires_at="9999-12-31T23:59:59-05:00")
    assert mem.get(entry_id)[0].text == "A fact." and len(mem.history(entry_id)) == 1


def test_supersede_keeps_the_old_fact_out_of_view(mem: Memory) -> None:
    [berlin] = mem.add([Entry(text="Alice lives in Berlin.", persons=["Alice"])])
    [lisbon] = mem.add([Entry(text="Alice moved to Lisbon.", persons=["Alice"])], supersedes=[berlin], actor="bot")
    new, old = mem.get([lisbon, berlin])
    assert new.supersedes == [berlin] and old.superseded_by == lisbon
    for preset in PRESETS:
        assert berlin not in {h.id for h in mem.search("Alice Berlin", k=5, preset=preset)}, preset
        assert berlin in {h.id for h in mem.search("Alice Berlin", k=5, preset=preset, include_superseded=True)}
    assert [e.id for e in mem.list()] == [lisbon]
    assert {e.id for e in mem.list(include_superseded=True)} == {lisbon, berlin}
    assert mem.count() == 1 and mem.count(include_superseded=True) == 2
    assert [e.event for e in mem.history(berlin)] == ["ADD", "UPDATE"]
    assert mem.history(berlin)[1].new.superseded_by == lisbon and mem.history(berlin)[1].actor == "bot"
    # Adding the old text again does not bring it back: the link belongs to the store.
    assert mem.add([Entry(text="Alice lives in Berlin.", persons=["Alice"])]) == [berlin]
    assert mem.get(berlin)[0].superseded_by == lisbon and mem.count() == 1


def test_a_question_about_before_or_a_past_time_sees_what_was_superseded(mem: Memory) -> None:
    """A supersede link hid the old fact from every question, so "Where did I live before?" and
    "Where did I live in 2023?" could not be answered once the move was recorded as the docs say."""
    [dublin] = mem.add([Entry(text="I live in Dublin.", timestamp="2023-01-20")])
    mem.add(["My sister lives in Lisbon.", "I like oat flat whites.", "The wifi password is hunter2."])
    [vancouver] = mem.add([Entry(text="Moved to Vancouver with my family.", timestamp="2024-07-01")],
                          supersedes=[dublin])
    for question, why in (("Where did I live before?", "a question about a former state"),
                          ("我以前住在哪里？", "a question about a former state"),
                          ("Where did I live in 2023?", "a past time window")):
        result = mem.search(question, k=3, explain=True)
        assert dublin in [h.id for h in result.hits], question
        assert result.trace["stages"][0]["include_superseded"] == why
    for question in ("Where do I live?", "Where do I live now?", "What did I do in July 2024?"):
        result = mem.search(question, k=5, explain=True)
        assert dublin not in [h.id for h in result.hits] and vancouver in [h.id for h in result.hits], question
        assert "include_superseded" not in result.trace["stages"][0]


def test_asked_about_now_with_superseded_entries_in_view_the_successor_ranks_first(mem: Memory) -> None:
    """With include_superseded, "Where do I live now?" ranked the superseded "I live in Dublin."
    first: the link says what became of it, whatever the two texts' likeness."""
    [dublin] = mem.add([Entry(text="I live in Dublin.", timestamp="2023-01-20")])
    mem.add(["My sister lives in Lisbon.", "I like oat flat whites."])
    [vancouver] = mem.add([Entry(text="Moved to Vancouver with my family.", timestamp="2024-07-01")],
                          supersedes=[dublin])
    result = mem.search("Where do I live now?", k=3, include_superseded=True, explain=True)
    ids = [h.id for h in result.hits]
    assert dublin in ids and ids.index(vancouver) < ids.index(dublin)
    assert result.hits[0].id == vancouver and result.hits[0].channels["recency"].rank >= 2
    recency = next(s for s in result.trace["stages"] if s["stage"] == "recency")
    assert recency["superseded_moved"] and recency["superseded_moved"][0]["to"] == 1
    plain = mem.search("Where do I live?", k=3, include_superseded=True, explain=True)  # not about now: untouched
    assert "superseded_moved" not in next(s for s in plain.trace["stages"] if s["stage"] == "recency")


def test_an_old_truth_that_holds_again_is_reinstated_not_hidden(mem: Memory) -> None:
    """Berlin, then Lisbon, then Berlin again: the stored Berlin entry comes back with its
    fields, and the two do not supersede each other (a cycle would hide both)."""
    [berlin] = mem.add([Entry(text="Alice lives in Berlin.", persons=["Alice"], timestamp="2020-01-01",
                              metadata={"src": "form"})])
    [lisbon] = mem.add([Entry(text="Alice moved to Lisbon.", persons=["Alice"])], supersedes=[berlin])
    [again] = mem.add([Entry(text="Alice lives in Berlin.")], supersedes=[lisbon])
    assert again == berlin
    back = mem.get(berlin)[0]
    assert (back.superseded_by, back.timestamp, back.metadata, back.persons) == \
        (None, "2020-01-01T00:00:00+00:00", {"src": "form"}, ["Alice"])
    assert lisbon in back.supersedes
    # Each link on both sides: Lisbon no longer lists Berlin, so following `supersedes` ends.
    assert (mem.get(lisbon)[0].superseded_by, mem.get(lisbon)[0].supersedes) == (berlin, [])
    assert mem.count() == 1 and [h.id for h in mem.search("Where does Alice live?", k=3)] == [berlin]
    assert [e.event for e in mem.history(berlin)] == ["ADD", "UPDATE", "UPDATE"]
    # Over more than one step: Berlin, Lisbon, Porto, then Berlin again (named with Porto only:
    # Lisbon, which superseded it before, lets it go too).
    [porto] = mem.add("Alice moved to Porto.", supersedes=[berlin])
    mem.add("Alice lives in Berlin.", supersedes=[porto])
    assert mem.count() == 1 and [h.id for h in mem.search("Where does Alice live?", k=3)] == [berlin]
    # A chain of three, the first back, naming only the last: Lisbon lets it go in the same write.
    [leeds] = mem.add("Bob lives in Leeds.")
    [york] = mem.add("Bob moved to York.", supersedes=[leeds])
    [hull] = mem.add("Bob moved to Hull.", supersedes=[york])
    assert mem.add("Bob lives in Leeds.", supersedes=[hull]) == [leeds]
    assert (mem.get(york)[0].supersedes, mem.get(leeds)[0].superseded_by) == ([], None)
    every = {e.id: e for e in mem.list(include_superseded=True)}
    for e in every.values():  # every link stored on both sides
        assert all(every[old].superseded_by == e.id for old in e.supersedes), e
        assert e.superseded_by is None or e.id in every[e.superseded_by].supersedes, e


def test_adding_or_importing_the_source_again_keeps_an_update(mem: Memory, tmp_path: Path) -> None:
    """An id derived from a text names what was written from it: a correction made since
    (`update`) survives adding that text again and re-importing an unchanged file."""
    [tea] = mem.add("Bob likes tea.")
    mem.update(tea, text="Bob likes green tea.")
    assert mem.add("Bob likes tea.") == [tea] and mem.get(tea)[0].text == "Bob likes green tea."
    source = tmp_path / "facts.jsonl"
    source.write_text(json.dumps({"text": "The staging DB port is 5432.", "metadata": {"src": "wiki"}}) + "\n")
    mem.import_path(source)
    [port] = [e.id for e in mem.list(filters={"metadata.src": "wiki"})]
    mem.update(port, text="The staging DB port is 5433.", metadata={"src": "wiki", "verified": True})
    again = mem.import_path(source)
    assert again["written"] == 0 and again["unchanged"] == 1
    kept = mem.get(port)[0]
    assert (kept.text, kept.metadata) == ("The staging DB port is 5433.", {"src": "wiki", "verified": True})
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Wifi\nThe office wifi password is hunter2.\n")
    mem.import_path(notes)
    [chunk] = [e.id for e in mem.list(filters={"kind": "chunk"})]
    mem.update(chunk, metadata={"verified": True})
    assert mem.import_path(notes)["written"] == 0 and mem.get(chunk)[0].metadata == {"verified": True}
    # A name the caller chose is not derived from the text: adding new words under it changes them.
    mem.add([Entry(id="motto", text="Measure twice.")])
    mem.add([Entry(id="motto", text="Measure twice, cut once.")])
    assert mem.get("motto")[0].text == "Measure twice, cut once."


def test_an_entry_superseded_already_is_not_linked_one_way(mem: Memory) -> None:
    """Each link is stored on both sides: superseding an entry another stored entry superseded
    already is refused (that entry's `supersedes` would point at an entry pointing elsewhere);
    naming the whole chain keeps it a chain; after its superseder is deleted it may be
    superseded again."""
    [berlin] = mem.add("Alice lives in Berlin.")
    [lisbon] = mem.add("Alice moved to Lisbon.", supersedes=[berlin])
    with pytest.raises(InputError, match=f"{berlin} is already superseded by {lisbon}"):
        mem.add("Alice moved to Porto.", supersedes=[berlin])
    assert mem.count(include_superseded=True) == 2 and mem.get(berlin)[0].superseded_by == lisbon
    [porto] = mem.add("Alice moved to Porto.", supersedes=[berlin, lisbon])
    old, mid, new = mem.get([berlin, lisbon, porto])
    assert (old.superseded_by, mid.supersedes, mid.superseded_by, new.supersedes) == (lisbon, [berlin], porto, [lisbon])
    for entry in (old, mid, new):  # every link seen from both ends
        for target in entry.supersedes:
            assert mem.get(target)[0].superseded_by == entry.id
        if entry.superseded_by:
            assert entry.id in mem.get(entry.superseded_by)[0].supersedes
    assert mem.add("Alice moved to Porto.", supersedes=[lisbon]) == [porto]  # again: the same links
    assert mem.get(porto)[0].supersedes == [lisbon]
    mem.delete(porto)
    [madrid] = mem.add("Alice moved to Madrid.", supersedes=[lisbon])
    assert mem.get(lisbon)[0].superseded_by == madrid and [e.id for e in mem.list()] == [madrid]


def test_supersede_errors_write_nothing(mem: Memory) -> None:
    [old] = mem.add(["An old fact."])
    with pytest.raises(NotFoundError, match="supersedes: not found"):
        mem.add(["A new fact."], supersedes=[old, "missing"])
    with pytest.raises(InputError, match="exactly one new entry"):
        mem.add(["one", "two"], supersedes=[old])
    assert mem.count() == 1 and mem.get(old)[0].superseded_by is None


def test_expired_entries_leave_every_view_and_can_be_purged(mem: Memory) -> None:
    past = mem.add([Entry(text="The door code this week is 4471.", expires_at="2001-01-01")])[0]
    future = mem.add(["The door code next year is 9902."], expires_at="2999-01-01")[0]
    forever = mem.add(["The building has a door code."])[0]
    for preset in [p for p in PRESETS if p != "symbolic"]:  # the question names no one
        found = {h.id for h in mem.search("door code 4471", k=5, preset=preset)}
        assert past not in found, preset
        assert past in {h.id for h in mem.search("door code 4471", k=5, preset=preset, show_expired=True)}
    assert mem.count() == 2 and mem.count(show_expired=True) == 3
    assert {e.id for e in mem.list()} == {future, forever}
    assert mem.get(past)[0].expires_at == "2001-01-01T00:00:00+00:00"  # get still finds it by id
    assert mem.purge_expired(actor="janitor") == 1
    assert mem.count(show_expired=True) == 2
    assert [(e.event, e.actor) for e in mem.history(past)] == [("ADD", None), ("DELETE", "janitor")]
    assert mem.purge_expired() == 0


def test_expiry_does_not_move_the_reference_time(mem: Memory) -> None:
    mem.add_conversation([("Alice", "I flew to Oslo yesterday.")], session_id="s", session_time="2024-03-14T10:00")
    before = mem.reference_time()
    mem.add(["A reminder."], expires_at="2999-01-01")
    assert mem.reference_time() == before


def test_history_survives_delete_and_unknown_ids_are_not_found(mem: Memory) -> None:
    [entry_id] = mem.add(["Short-lived."])
    assert mem.delete(entry_id, actor="alice") == 1
    events = mem.history(entry_id)
    assert [e.event for e in events] == ["ADD", "DELETE"] and events[1].old.text == "Short-lived."
    assert events[1].new is None and events[1].actor == "alice"
    with pytest.raises(NotFoundError):
        mem.history(entry_id, namespace="bob")
    with pytest.raises(NotFoundError):
        mem.history("never-existed")
    with pytest.raises(NotFoundError):
        mem.delete(entry_id)


def test_reimports_log_updates_and_deletes(mem: Memory, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    note = folder / "trip.md"
    note.write_text("# Trip\n\nPack a coat.\n\n# Food\n\nTofu.\n", encoding="utf-8")
    mem.import_path(folder)
    ids = mem.store.ids("default", Filters(path="trip.md"))
    note.write_text("# Trip\n\nPack a coat.\n", encoding="utf-8")
    report = mem.import_path(folder)
    assert report["removed"] == 1
    events = {i: [e.event for e in mem.history(i)] for i in ids}
    assert sorted(events.values()) == [["ADD"], ["ADD", "DELETE"]]


def test_a_previous_release_store_gets_lifecycle_columns(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    shutil.copy(Path(__file__).parent / "fixtures" / "stores" / "store_v2.db", path)
    with Memory(path, namespace="alice") as mem:
        [entry_id] = [h.id for h in mem.search("Where did Alice move?", k=1)]
        assert mem.history(entry_id) == []  # written before the log existed
        mem.update(entry_id, expires_at="2001-01-01")
        assert [e.event for e in mem.history(entry_id)] == ["UPDATE"]
        assert entry_id not in {h.id for h in mem.search("Where did Alice move?", k=5)}


def test_cli_update_history_supersede_expire_purge(tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "cli.db")

    def run(*args: str):
        return runner.invoke(main, ["--db", db, "--embedder", "minilm", *args])

    old = run("add", "Alice lives in Berlin.", "--person", "Alice").output.strip()
    new = run("add", "Alice moved to Lisbon.", "--supersedes", old, "--actor", "bot").output.strip()
    found = json.loads(run("search", "Alice Berlin", "--json").output)
    assert [h["id"] for h in found["hits"]] == [new]
    everything = json.loads(run("search", "Alice Berlin", "--include-superseded", "--json").output)
    assert {h["id"] for h in everything["hits"]} == {old, new}
    updated = json.loads(run("update", new, "--text", "Alice moved to Lisbon in 2024.", "--meta", "verified=true",
                             "--actor", "alice", "--json").output)
    assert updated["id"] == new and updated["metadata"] == {"verified": True}
    events = json.loads(run("history", new, "--json").output)
    assert [(e["event"], e["actor"]) for e in events] == [("ADD", "bot"), ("UPDATE", "alice")]
    assert events[1]["old"]["text"] == "Alice moved to Lisbon." and events[1]["new"]["text"].endswith("2024.")
    assert run("add", "Temporary code 1234.", "--expires", "2001-01-01").exit_code == 0
    listed = json.loads(run("list", "--json").output)["results"]
    assert [e["id"] for e in listed] == [new]
    assert json.loads(run("purge-expired", "--json").output) == {"deleted": 1}
    missing = run("update", "nope", "--text", "x")
    assert missing.exit_code == 1 and missing.output.startswith("error: not found in namespace 'default': nope")
    assert run("update", new).exit_code == 2  # nothing to change: a usage error


def test_an_items_own_supersede_links_are_checked_like_the_argument(mem: Memory) -> None:
    """`superseded_by` in an item would hide it behind any id; `supersedes` in an item is read
    as the `supersedes` argument (checked, both sides linked); links already stored are fine."""
    old = mem.add("Alice lives in Berlin.")[0]
    with pytest.raises(InputError, match="superseded_by is set by the store"):
        mem.add({"text": "Bob likes tea.", "superseded_by": old})
    assert [e.text for e in mem.list()] == ["Alice lives in Berlin."]  # nothing was written
    with pytest.raises(NotFoundError):
        mem.add({"text": "Alice moved to Lisbon.", "supersedes": ["no-such-id"]})
    new = mem.add({"text": "Alice moved to Lisbon.", "supersedes": [old]})[0]
    [was] = mem.get(old)
    assert was.superseded_by == new  # both sides linked, so the old one is hidden from search
    assert old not in [h.id for h in mem.search("where does Alice live", k=5)]
    with pytest.raises(InputError, match="one item added"):
        mem.add([{"text": "x one", "supersedes": [new]}, {"text": "x two"}])
    # An entry read and added back, links and all, is a no-op.
    assert mem.add([was.to_dict(), mem.get(new)[0].to_dict()]) == [old, new]


def test_a_jsonl_file_cannot_set_supersede_links_or_reuse_an_id(mem: Memory, tmp_path: Path) -> None:
    old = mem.add("Alice lives in Berlin.")[0]
    cases = {
        "hide.jsonl": [{"text": "Alice likes tea."}, {"text": "ghost", "superseded_by": old}],
        "one_sided.jsonl": [{"text": "Alice moved to Lisbon.", "supersedes": [old]}],
        "twice.jsonl": [{"id": "n1", "text": "first"}, {"id": "n1", "text": "second"}],
    }
    messages = {"hide.jsonl": ":2: superseded_by is set by the store", "one_sided.jsonl": "supersedes names entries",
                "twice.jsonl": ":2: id n1 is also line 1's"}
    for name, rows in cases.items():
        path = tmp_path / name
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        with pytest.raises(InputError, match=messages[name]):
            mem.import_path(path)
        assert [e.text for e in mem.list()] == ["Alice lives in Berlin."]  # nothing written
    # The same entry twice, or an exported entry with the links it has, imports as before.
    [was] = mem.get(old)
    again = tmp_path / "again.jsonl"
    again.write_text(json.dumps(was.to_dict()) + "\n" + json.dumps({"text": "Alice lives in Berlin."}) + "\n",
                     encoding="utf-8")
    assert mem.import_path(again)["written"] == 0


def test_conversation_writes_record_their_actor(mem: Memory) -> None:
    """`add_turn` and `add_conversation` take an `actor` like every other write (the HTTP turns
    endpoint and MCP pass the key or "mcp"); the turns and the facts drawn from them carry it."""
    report = mem.add_turn("Ana", "I moved the deploy to Friday.", session_id="standup", actor="standup-bot")
    session = mem.add_conversation([("Bo", "I adopted a puppy named Rex yesterday.")], session_id="chat",
                                   session_time="2024-03-14T10:00:00", actor="importer")
    assert report.facts >= 1 and session.facts >= 1
    for sid, actor in (("standup", "standup-bot"), ("chat", "importer")):
        entries = mem.list(filters={"session_id": sid}).results
        assert {e.kind for e in entries} == {"turn", "fact"}
        for entry in entries:
            assert [(h.event, h.actor) for h in mem.history(entry.id or "")] == [("ADD", actor)]
    with pytest.raises(InputError, match="actor"):
        mem.add_turn("Ana", "Another turn.", session_id="standup", actor="")
