"""Scope is a hard boundary: an id belongs to its namespace, for every operation and importer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from engramdb import Entry, InputError, Memory
from engramdb.errors import NotFoundError
from engramdb.cli import main


@pytest.fixture()
def two(store_target: str):
    """Alice's and Bob's namespaces in one store (on each backend); Alice holds an entry with
    a chosen id."""
    with Memory(store_target, namespace="alice", embedder="minilm") as mem:
        mem.add([Entry(id="shared-id", text="Alice's secret: the vault code is 4321.", persons=["Alice"])])
        mem.add(["Alice likes green tea."])
        yield mem


def alice_entry(mem: Memory) -> Entry:
    return mem.get("shared-id", namespace="alice")[0]


def test_get_of_another_namespace_is_not_found(two: Memory) -> None:
    assert two.get("shared-id", namespace="bob") == []
    with Memory(two.path, namespace="bob") as bob:
        assert bob.get(["shared-id"]) == []
        assert bob.count() == 0


def test_delete_of_another_namespace_changes_nothing(two: Memory) -> None:
    with pytest.raises(NotFoundError, match="not found in namespace 'bob': shared-id"):
        two.delete("shared-id", namespace="bob")
    assert two.delete(filters={"person": "Alice"}, namespace="bob") == 0
    assert two.delete(namespace="bob", all=True) == 0
    assert alice_entry(two).text.startswith("Alice's secret")
    assert two.count() == 2


def test_same_id_written_in_another_namespace_is_a_distinct_entry(two: Memory) -> None:
    before = alice_entry(two).to_dict()
    ids = two.add([Entry(id="shared-id", text="Bob's note that reuses the id.")], namespace="bob")
    assert ids == ["shared-id"]
    assert alice_entry(two).to_dict() == before  # not moved, not replaced
    assert two.get("shared-id", namespace="bob")[0].text == "Bob's note that reuses the id."
    assert two.count(all_namespaces=True) == 3
    # Each namespace's search sees only its own version.
    alice_hits = two.search("vault code", k=5, preset="lexical")
    bob_hits = two.search("note reuses the id", k=5, namespace="bob")
    assert {h.entry.namespace for h in alice_hits} == {"alice"}
    assert {h.entry.namespace for h in bob_hits} == {"bob"}
    # Deleting Bob's copy leaves Alice's.
    assert two.delete("shared-id", namespace="bob") == 1
    assert alice_entry(two).to_dict() == before


def test_entry_naming_another_namespace_is_refused_not_moved(two: Memory) -> None:
    with pytest.raises(InputError, match="differs from the namespace it is written to"):
        two.add([Entry(text="sneaky", namespace="alice")], namespace="bob")
    with pytest.raises(InputError, match="item 1: entry namespace 'mallory'"):
        two.add(["fine", {"text": "sneaky", "namespace": "mallory"}])
    assert two.count(namespace="bob") == 0 and two.count(namespace="mallory") == 0
    assert two.count() == 2
    # Naming the namespace it is written to is fine.
    two.add([Entry(text="explicit", namespace="bob")], namespace="bob")
    assert two.count(namespace="bob") == 1


def test_jsonl_import_cannot_touch_another_namespace(two: Memory, tmp_path: Path) -> None:
    before = alice_entry(two).to_dict()
    dump = tmp_path / "bob.jsonl"
    dump.write_text(json.dumps({"id": "shared-id", "text": "Bob's imported line."}) + "\n", encoding="utf-8")
    two.import_path(dump, namespace="bob")
    assert alice_entry(two).to_dict() == before
    assert two.get("shared-id", namespace="bob")[0].text == "Bob's imported line."
    # A line that names another namespace is refused, naming the line, and nothing is written.
    sneaky = tmp_path / "sneaky.jsonl"
    sneaky.write_text(json.dumps({"text": "ok line"}) + "\n"
                      + json.dumps({"text": "x", "namespace": "alice", "id": "shared-id"}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"sneaky.jsonl:2: entry namespace 'alice' differs"):
        two.import_path(sneaky, namespace="bob")
    assert two.count(namespace="bob") == 1
    assert alice_entry(two).to_dict() == before


def test_notes_and_conversations_replace_only_their_own_namespace(two: Memory, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# Trip\nAlice packs a warm coat.\n\n# Food\nTofu.\n", encoding="utf-8")
    two.import_path(folder)  # alice
    (folder / "a.md").write_text("# Trip\nBob packs sandals.\n", encoding="utf-8")
    report = two.import_path(folder, namespace="bob")
    assert report["removed"] == 0  # Alice's chunks of the same path are not Bob's stale chunks
    assert two.count(filters={"path": "a.md"}) == 2
    assert two.count(filters={"path": "a.md"}, namespace="bob") == 1
    two.add_conversation([("Alice", "I moved to Lisbon.")], session_id="s1")
    two.add_conversation([("Bob", "I stay in Berlin.")], session_id="s1", namespace="bob")
    alice_turns = two.count(filters={"session_id": "s1", "kind": "turn"})
    assert alice_turns == 1
    assert "Lisbon" in two.search("where does Alice live", k=1, filters={"session_id": "s1"})[0].text
    two.add_turn("Bob", "Actually, Munich.", session_id="s1", namespace="bob")
    assert two.count(filters={"session_id": "s1", "kind": "turn"}) == 1  # Alice's session untouched
    assert two.count(filters={"session_id": "s1", "kind": "turn"}, namespace="bob") == 2


def test_cli_scope(two: Memory, tmp_path: Path) -> None:
    runner = CliRunner()

    def run(*args: str):
        return runner.invoke(main, ["--db", two.path, *args])

    shown = run("-n", "alice", "get", "shared-id")
    assert shown.exit_code == 0 and "vault code" in shown.output
    hidden = run("-n", "bob", "get", "shared-id")
    assert hidden.exit_code == 1 and "vault code" not in hidden.output
    assert "error: not found in namespace 'bob': shared-id" in hidden.output
    removed = run("-n", "bob", "delete", "shared-id", "--json")
    assert removed.exit_code == 1 and removed.output.startswith("error: not found in namespace 'bob': shared-id")
    found = run("-n", "bob", "search", "vault code", "--json")
    assert found.exit_code == 0 and json.loads(found.output)["hits"] == []
    assert alice_entry(two).text.startswith("Alice's secret")


def test_a_dump_goes_into_the_namespace_a_memory_is_bound_to(two: Memory, tmp_path: Path) -> None:
    """`Memory(namespace="bob").import_path(alice's dump)` writes into bob, as `engram -n bob
    import` does; a Memory (or a CLI call) that names no namespace restores the dump's own."""
    dump = tmp_path / "alice.jsonl"
    dump.write_text("".join(json.dumps(line) + "\n" for line in two.export()), encoding="utf-8")
    before = {e.id: e.to_dict() for e in two.list().results}
    with Memory(two.path, namespace="bob") as bob:
        report = bob.import_path(dump)
        assert report["namespaces"] == ["bob"] and report["written"] == 2
        assert sorted(e.text for e in bob.list().results) == sorted(e["text"] for e in before.values())
        assert bob.get("shared-id")[0].namespace == "bob"
        assert [h.event for h in bob.history("shared-id")] == ["ADD"]  # its history came along, into bob
    assert {e.id: e.to_dict() for e in two.list().results} == before  # alice's untouched
    with Memory(two.path, namespace="carol") as carol:
        assert carol.import_path(dump, namespace="dave")["namespaces"] == ["dave"]  # the call's namespace wins
        assert carol.count() == 0
    with Memory(two.path) as unbound:  # no namespace named: the dump's own, alice (already there)
        assert unbound.import_path(dump)["namespaces"] == ["alice"]
        assert unbound.count(namespace="default") == 0
    runner = CliRunner()
    copied = runner.invoke(main, ["--db", two.path, "-n", "erin", "import", str(dump), "--json"])
    assert copied.exit_code == 0 and json.loads(copied.output)["namespaces"] == ["erin"]
    restored = runner.invoke(main, ["--db", two.path, "import", str(dump), "--json"])
    assert restored.exit_code == 0 and json.loads(restored.output)["namespaces"] == ["alice"]
