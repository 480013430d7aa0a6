"""Importing notes folders and JSONL files: chunks, provenance, idempotence, clear errors."""

from __future__ import annotations

import json
import shutil
import os
from pathlib import Path

import pytest

from engramdb import InputError, Memory
from engramdb.text.chunk import chunk_markdown

NOTES = Path(__file__).resolve().parents[1] / "examples" / "notes"


def test_chunks_keep_heading_path_and_respect_size():
    text = "# Top\nintro line\n\n## Sub A\n" + " ".join(["word"] * 400) + ".\n\n## Sub B\nshort\n"
    chunks = chunk_markdown(text, max_size=160)
    assert chunks[0].heading_path == ["Top"] and chunks[0].text == "intro line"
    sub_a = [c for c in chunks if c.heading_path == ["Top", "Sub A"]]
    assert len(sub_a) >= 1
    assert chunks[-1].heading_path == ["Top", "Sub B"] and chunks[-1].text == "short"


def test_a_word_of_any_length_is_cut_into_chunks(tmp_path: Path, mem: Memory):
    """A 300,000-character word (a base64 blob pasted into a note) was one chunk of 300,000
    characters, above the entry text cap, so the note could not be imported at all."""
    from engramdb.text.chunk import WORD_CHARS

    blob = "QUJD" * 75_000
    chunks = chunk_markdown(f"# Key\n\nThe backup key is below.\n\n{blob}\n")
    assert "".join(c.text for c in chunks[1:]) == blob and max(len(c.text) for c in chunks) <= 160 * WORD_CHARS
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "key.md").write_text(f"# Key\n\nThe backup key is below.\n\n{blob}\n", encoding="utf-8")
    assert mem.import_path(folder)["entries"] == len(chunks)
    # a word of ordinary length keeps its chunk (a long URL is one word up to WORD_CHARS)
    url = "https://example.com/" + "a" * 150
    assert [c.text for c in chunk_markdown(f"See {url} for more.")] == [f"See {url} for more."]


def test_a_heading_with_nothing_under_it_is_a_note_of_its_own(tmp_path: Path, mem: Memory) -> None:
    """A note that is only a heading was dropped without a word (files 2, entries 1): a heading
    with no text and no heading under it is a chunk of its heading path; a parent heading is not."""
    assert [(c.text, c.heading_path) for c in chunk_markdown(
        "# Tasks\n## Call the dentist\n## Renew passport\n\n# Done\nPaid the rent.\n")] == [
        ("", ["Tasks", "Call the dentist"]), ("", ["Tasks", "Renew passport"]), ("Paid the rent.", ["Done"])]
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "only.md").write_text("# Dentist appointment Friday 3pm\n", encoding="utf-8")
    (folder / "other.md").write_text("# Shopping\n\nMilk and eggs.\n", encoding="utf-8")
    report = mem.import_path(folder)
    assert report["files"] == 2 and report["entries"] == 2
    hit = mem.search("dentist", k=1)[0]
    assert hit.text == "Dentist appointment Friday 3pm" and hit.entry.source.path == "only.md"
    assert mem.import_path(folder)["written"] == 0


def test_notes_import_is_incremental(tmp_path: Path, mem: Memory):
    folder = tmp_path / "notes"
    shutil.copytree(NOTES, folder)
    first = mem.import_path(folder)
    assert first["files"] == 5 and first["written"] == first["entries"] > 5
    again = mem.import_path(folder)
    assert again["written"] == 0 and again["unchanged"] == first["entries"] and again["removed"] == 0
    count = mem.count()
    # Change one section of one file: only its chunks are rewritten, stale ones removed.
    note = folder / "projects" / "onboarding.md"
    note.write_text(note.read_text(encoding="utf-8").replace("## Access", "## Access and keys"), encoding="utf-8")
    changed = mem.import_path(folder)
    assert changed["written"] == 1 and changed["removed"] == 1
    assert mem.count() == count
    hit = mem.search("production access approval", k=1)[0]
    assert hit.entry.source.path == "projects/onboarding.md"
    assert hit.entry.source.heading_path == ["Onboarding checklist", "Access and keys"]


def test_a_file_deleted_from_the_folder_leaves_the_store_on_reimport(tmp_path: Path, mem: Memory):
    """Re-importing a folder removed an emptied file's chunks but kept a deleted file's for
    ever: "the office wifi password" was still found after wifi.md was gone. Files of another
    folder, and of the folder's parent, stay."""
    folder, other = tmp_path / "notes", tmp_path / "other"
    (folder / "sub").mkdir(parents=True)
    other.mkdir()
    (folder / "wifi.md").write_text("# Wifi\nThe office wifi password is tulip-77.\n", encoding="utf-8")
    (folder / "sub" / "plants.md").write_text("# Plants\nWater the ficus on Mondays.\n", encoding="utf-8")
    (other / "wifi.md").write_text("# Home\nThe home wifi password is rose-12.\n", encoding="utf-8")
    mem.import_path(folder)
    mem.import_path(other)
    mem.add("the office wifi is slow on Fridays")  # not a note: never removed by an import
    (folder / "wifi.md").unlink()
    mem.import_path(folder / "sub")  # a subfolder knows nothing of its parent's files
    assert mem.count() == 4 and any("tulip-77" in e.text for e in mem.list(limit=10))
    again = mem.import_path(folder)
    # wifi.md's chunk; plants.md's keeps its id, its path under the folder imported updated
    assert again["removed"] == 1 and again["files"] == 1 and again["written"] == 1
    assert sorted(e.text for e in mem.list(limit=10)) == [
        "Home\nThe home wifi password is rose-12.", "Plants\nWater the ficus on Mondays.",
        "the office wifi is slow on Fridays"]
    assert mem.import_path(folder)["removed"] == 0


def test_notes_are_known_by_their_file_not_their_name(tmp_path: Path, mem: Memory):
    """Two folders that each hold notes.md are two documents; a subfolder imported after its
    parent replaces its files' chunks instead of adding them again."""
    for folder, text in (("a", "# Wifi\nThe office wifi password is hunter2.\n"),
                         ("b", "# Groceries\nBuy milk and eggs.\n")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "notes.md").write_text(text, encoding="utf-8")
    mem.import_path(tmp_path / "a")
    second = mem.import_path(tmp_path / "b")
    assert second["removed"] == 0 and mem.count() == 2
    assert {h.entry.source.path for h in mem.search("wifi password groceries", k=5)} == {"notes.md"}
    assert len({h.entry.source.doc_id for h in mem.search("wifi password groceries", k=5)}) == 2
    folder = tmp_path / "notes"
    shutil.copytree(NOTES, folder)
    mem.import_path(folder)
    count = mem.count()
    sub = mem.import_path(folder / "projects")
    # the same chunks, ids kept, now under projects/
    assert sub["written"] > 0 and sub["removed"] == 0 and mem.count() == count
    hits = mem.search("production access approval", k=3)
    assert len({h.id for h in hits}) == 3 and len({h.entry.text for h in hits}) == 3
    assert hits[0].entry.source.path == "onboarding.md"  # its path under the folder imported last


def test_notes_imported_by_an_earlier_version_are_replaced_not_duplicated(tmp_path: Path, mem: Memory):
    """Before files were known by their absolute path, a chunk's doc_id was its path under the
    folder imported: re-importing the folder after an upgrade replaces those chunks."""
    from engramdb.ingest.notes import note_entries

    folder = tmp_path / "notes"
    shutil.copytree(NOTES, folder)
    note = folder / "projects" / "onboarding.md"
    legacy = note_entries(note, "projects/onboarding.md", "default")  # as the earlier version stored them
    assert {e.source.doc_id for e in legacy} == {"projects/onboarding.md"}
    mem.writer.write(legacy, namespace="default")
    report = mem.import_path(folder)
    assert report["removed"] == 0  # the chunks keep their ids, their doc_id now the file's
    assert mem.count() == report["entries"]  # one copy of each chunk
    assert all(Path(e.source.doc_id).is_absolute() for e in mem.list(limit=100))
    assert [ev.event for ev in mem.history(legacy[0].id)] == ["ADD", "UPDATE"]
    again = mem.import_path(folder)
    assert again["written"] == again["removed"] == 0


def test_jsonl_import_and_line_numbered_errors(tmp_path: Path, mem: Memory):
    good = tmp_path / "good.jsonl"
    rows = [{"text": "Alice likes tea.", "persons": ["Alice"], "metadata": {"src": "chat"}},
            {"text": "Bob likes coffee.", "kind": "fact", "timestamp": "2024-01-02"}]
    good.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    report = mem.import_path(good)
    assert report["written"] == 2
    assert mem.import_path(good)["written"] == 0

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"text": "fine"}) + "\n" + '{"text": "oops",}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.jsonl:2: invalid JSON"):
        mem.import_path(bad)
    bad.write_text(json.dumps({"text": "fine"}) + "\n" + json.dumps({"text": "x", "kind": "blog"}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.jsonl:2: entry kind must be one of"):
        mem.import_path(bad)
    bad.write_text(json.dumps({"txt": "no text"}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.jsonl:1: unknown field\(s\): txt"):
        mem.import_path(bad)
    # Nothing from the bad files was written.
    assert mem.count() == 2
    with pytest.raises(InputError, match="no such file"):
        mem.import_path(tmp_path / "missing.jsonl")


@pytest.mark.parametrize("bad", [b"caf\xe9 au lait\n", b"nul \x00 here\n"])  # Latin-1, a NUL character
def test_a_bad_note_anywhere_in_a_folder_writes_nothing_and_names_the_file(tmp_path: Path, mem: Memory,
                                                                          bad: bytes) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# A\nAlice lives in Berlin.\n", encoding="utf-8")
    (folder / "b.txt").write_text("Bob likes tea.\n", encoding="utf-8")
    (folder / "c.md").write_bytes(bad)  # sorted last: read after the good ones
    with pytest.raises(InputError, match="c.md"):
        mem.import_path(folder)
    assert mem.count() == 0


def test_a_symlink_beside_its_target_is_one_note_and_a_reimport_settles(tmp_path: Path, mem: Memory) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# A\nAlice lives in Berlin.\n", encoding="utf-8")
    try:
        (folder / "link.md").symlink_to(folder / "a.md")
    except OSError:
        pytest.skip("no symlinks on this file system")
    first = mem.import_path(folder)
    assert (first["files"], first["removed"]) == (1, 0) and mem.count() == 1
    again = mem.import_path(folder)
    assert (again["written"], again["removed"]) == (0, 0) and mem.count() == 1


def test_derived_from_names_entries_of_the_namespace(tmp_path: Path, mem: Memory) -> None:
    """A derived_from id must be an entry of the namespace — stored, or given in the same call —
    checked before the first write; another namespace's id is not one. Links an entry has
    stored already stay (its source may have been deleted since)."""
    [turn] = mem.add([{"text": "Ann: I moved to Oslo.", "kind": "turn"}])
    [elsewhere] = mem.add(["Bob's turn."], namespace="other")
    with pytest.raises(InputError, match=rf"item 1: derived_from names nope, not an entry of namespace 'default'"):
        mem.add(["fine", {"text": "Ann moved to Oslo.", "derived_from": [turn, "nope"]}])
    with pytest.raises(InputError, match=rf"item 0: derived_from names {elsewhere}, not an entry"):
        mem.add([{"text": "Bob said something.", "derived_from": [elsewhere]}])
    with pytest.raises(InputError, match="derived from itself"):
        mem.add([{"id": "me", "text": "Circular.", "derived_from": ["me"]}])
    assert mem.count() == 1 and mem.count(namespace="other") == 1
    [fact] = mem.add([{"text": "Ann moved to Oslo.", "derived_from": [turn]}])
    # In one call, the entry a fact names may come with it, in any order.
    both = mem.add([{"id": "f2", "text": "Ann likes fjords.", "derived_from": ["t2"]},
                    {"id": "t2", "text": "Ann: I like fjords.", "kind": "turn"}])
    assert both == ["f2", "t2"]
    mem.delete(turn)
    assert mem.add([mem.get(fact)[0]]) == [fact]  # stored with that link: adding it back is fine
    path = tmp_path / "facts.jsonl"
    path.write_text(json.dumps({"id": "t3", "text": "Ann: hi", "kind": "turn"}) + "\n"
                    + json.dumps({"text": "Ann said hi.", "derived_from": ["t3"]}) + "\n"
                    + json.dumps({"text": "Ann said bye.", "derived_from": ["t4"]}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"facts.jsonl:3: derived_from names t4, not an entry of namespace"):
        mem.import_path(path)
    assert mem.count() == 3
    path.write_text("\n".join(path.read_text(encoding="utf-8").splitlines()[:2]) + "\n", encoding="utf-8")
    assert mem.import_path(path)["written"] == 2


def test_a_utf8_bom_is_not_part_of_the_text(tmp_path: Path, mem: Memory) -> None:
    """Editors on Windows start UTF-8 files with a byte-order mark: it hid a note's first
    heading and made a JSON or JSONL file's first line invalid JSON."""
    bom = "\ufeff".encode()
    note = tmp_path / "notes" / "trip.md"
    note.parent.mkdir()
    note.write_bytes(bom + "# Trip\nAlice packs a warm coat.\n".encode())
    mem.import_path(note.parent)
    [chunk] = mem.list().results
    assert chunk.source.heading_path == ["Trip"] and chunk.text == "Trip\nAlice packs a warm coat."
    entries = tmp_path / "entries.jsonl"
    entries.write_bytes(bom + json.dumps({"text": "Bob likes tea."}).encode() + b"\n")
    assert mem.import_path(entries)["written"] == 1
    turns = tmp_path / "turns.jsonl"
    turns.write_bytes(bom + json.dumps({"session_id": "s1", "speaker": "Ann", "text": "Hi."}).encode() + b"\n")
    assert mem.import_path(turns, extractor="none")["turns"] == 1
    chat = tmp_path / "chat.json"
    chat.write_bytes(bom + json.dumps([{"role": "user", "content": "Hello there."}]).encode())
    assert mem.import_path(chat, extractor="none")["turns"] == 1
    locomo = tmp_path / "locomo.json"
    locomo.write_bytes(bom + (Path(__file__).parent / "fixtures" / "eval" / "locomo_tiny.json").read_bytes())
    assert mem.import_path(locomo, extractor="none", namespace="locomo")["format"] == "locomo"
    dump = tmp_path / "dump.jsonl"
    dump.write_bytes(bom + "".join(json.dumps(line) + "\n" for line in mem.export()).encode())
    assert mem.import_path(dump, namespace="copy")["format"] == "export"
    assert mem.count(namespace="copy") == mem.count()


def test_a_fenced_code_block_is_text_not_headings():
    """A `# comment` inside a fenced block was read as a heading: the block was cut in pieces and
    the sections after it were filed under the comment ("then run the migrations > Rollback")."""
    text = ("# Deploy guide\n\nRun the installer.\n\n```bash\n# install dependencies first\npip install -r req.txt\n\n"
            "# then run the migrations\n./manage.py migrate\n```\n\n~~~\n# not a heading either\n~~~\n\n"
            "## Rollback\n\nRedeploy the previous tag.\n")
    chunks = chunk_markdown(text)
    assert [c.heading_path for c in chunks] == [["Deploy guide"], ["Deploy guide", "Rollback"]]
    assert "```bash\n# install dependencies first\npip install -r req.txt\n\n# then run the migrations" in chunks[0].text
    assert chunks[0].text.endswith("~~~\n# not a heading either\n~~~")
    # A fence never closed runs to the end of the file, as Markdown renders it.
    assert [c.heading_path for c in chunk_markdown("# A\n\n```\n# b\n\n## c\n")] == [["A"]]


def test_front_matter_is_not_a_chunk():
    for head in ("---\ntitle: Trip\ntags: [travel]\n---\n", "+++\ntitle = 'Trip'\n+++\n"):
        chunks = chunk_markdown(head + "\n# Trip\n\nPack sunscreen.\n")
        assert [(c.heading_path, c.text) for c in chunks] == [(["Trip"], "Pack sunscreen.")]
    # A rule that opens a note and is never closed is text.
    assert [c.text for c in chunk_markdown("---\n\nJust a rule above.\n")] == ["---\n\nJust a rule above."]


@pytest.mark.parametrize("run", [" ".join(["alpha", "beta", "gamma"] * 20_000) + " zebrafinch",
                                 "我们今天讨论了服务器内存泄漏的问题" * 6_000])
def test_a_run_without_sentence_ends_is_cut_to_the_chunk_size(run: str):
    """A minified line or an unpunctuated Chinese paragraph was one chunk of any size (351,328
    characters), of which the embedder reads only the start."""
    from engramdb.text.chunk import text_size

    chunks = chunk_markdown(f"# Log\n\n{run}\n")
    assert len(chunks) > 100 and max(text_size(c.text) for c in chunks) <= 160
    assert "".join(c.text for c in chunks).replace(" ", "") == run.replace(" ", "")  # nothing lost
    assert all(c.heading_path == ["Log"] for c in chunks)


def test_a_section_added_above_keeps_the_ids_of_the_chunks_below(tmp_path: Path, mem: Memory):
    """A chunk's id came from its place in the file: a section added near the top gave every
    chunk after it a new id (DELETE + ADD in their history, ids an agent cited gone)."""
    folder = tmp_path / "notes"
    shutil.copytree(NOTES, folder)
    mem.import_path(folder)
    note = folder / "projects" / "release-v2.3.md"
    before = {e.text: e.id for e in mem.list(limit=100) if e.source.path == "projects/release-v2.3.md"}
    assert len(before) >= 2
    lines = note.read_text(encoding="utf-8").splitlines()
    lines.insert(1, "\n## Summary\n\nA short summary of the release, added later.\n")
    note.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = mem.import_path(folder)
    assert report["removed"] == 0 and report["written"] >= 2  # the new chunk, and the moved ones' places
    after = {e.text: e for e in mem.list(limit=100) if e.source.path == "projects/release-v2.3.md"}
    assert all(after[text].id == entry_id for text, entry_id in before.items())
    assert sorted(e.source.chunk_index for e in after.values()) == list(range(len(after)))
    moved = next(e for e in after.values() if e.source.chunk_index == len(after) - 1)
    assert [ev.event for ev in mem.history(moved.id)] == ["ADD", "UPDATE"]
    assert mem.import_path(folder)["written"] == 0


def test_a_moved_folder_takes_the_place_of_its_old_path(tmp_path: Path, mem: Memory):
    """Files are known by their absolute path: importing a folder after moving it doubled every
    chunk, the old copies (their files gone) tying with the new at half the score."""
    old, new = tmp_path / "notes", tmp_path / "vault"
    shutil.copytree(NOTES, old)
    first = mem.import_path(old)
    ids = {e.id for e in mem.list(limit=100)}
    old.rename(new)
    (tmp_path / "elsewhere").mkdir()
    shutil.copy(NOTES / "mixed-meeting.md", tmp_path / "elsewhere" / "mixed-meeting.md")
    again = mem.import_path(new)
    assert again["removed"] == 0 and mem.count() == first["entries"]
    assert {e.id for e in mem.list(limit=100)} == ids  # the same chunks, ids kept
    assert all(e.source.doc_id.startswith(new.resolve().as_posix()) for e in mem.list(limit=100))
    # A file of the same name in another folder that still exists is a document of its own.
    other = mem.import_path(tmp_path / "elsewhere")
    assert other["removed"] == 0 and mem.count() == first["entries"] + other["entries"]


def test_a_file_that_is_not_text_fails_the_import_unless_skipped(tmp_path: Path, mem: Memory):
    from click.testing import CliRunner

    from engramdb.cli import main

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# A\nAlice lives in Berlin.\n", encoding="utf-8")
    (folder / "b.txt").write_text("# B\nBob likes tea.\n", encoding="utf-8")
    (folder / "unicode.txt").write_text("# Notepad\nCafé au lait in UTF-16.\n", encoding="utf-16")  # with its BOM
    assert mem.import_path(folder)["files"] == 3  # UTF-16 with a byte-order mark is text
    assert any("Café au lait" in e.text for e in mem.list(limit=10))
    (folder / "b.txt").write_bytes(b"# B\nBob likes caf\xe9.\n")  # now Latin-1
    (folder / "c.md").write_text("# C\nCarol plays chess.\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"b.txt: not UTF-8 text .*nothing was imported .*--skip-bad-files"):
        mem.import_path(folder)
    assert not any("chess" in e.text for e in mem.list(limit=10))
    report = mem.import_path(folder, skip_bad_files=True)
    assert report["files"] == 3 and report["skipped_files"] == [
        {"path": "b.txt", "reason": "not UTF-8 text (invalid continuation byte at byte 17)"}]
    texts = [e.text for e in mem.list(limit=10)]
    assert any("chess" in t for t in texts) and any("Bob likes tea." in t for t in texts)  # kept as it was
    (folder / "d.md").write_bytes(b"# D\nnul \x00 here\n")
    result = CliRunner().invoke(main, ["--db", str(mem.store.path), "import", str(folder), "--skip-bad-files",
                                       "-q", "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert [s["path"] for s in printed["skipped_files"]] == ["b.txt", "d.md"] and "NUL" in printed["skipped_files"][1]["reason"]
    assert "warning: skipped" not in result.stdout
    # A file name that is not UTF-8 (a Latin-1 name from an old archive) was a raw UnicodeEncodeError.
    (folder / "d.md").unlink()
    (folder / "b.txt").write_text("# B\nBob likes tea.\n", encoding="utf-8")
    with open(os.path.join(os.fsencode(folder), b"caf\xe9.md"), "wb") as latin:
        latin.write(b"# Cafe\nA note from an old zip.\n")
    with pytest.raises(InputError, match=r"caf\\xe9.md: its name is not UTF-8 .*nothing was imported"):
        mem.import_path(folder)
    report = mem.import_path(folder, skip_bad_files=True)
    assert {"path": "caf\\xe9.md", "reason": "its name is not UTF-8 (a store keeps names as text); rename it"} \
        in report["skipped_files"]
    result = CliRunner().invoke(main, ["--db", str(mem.store.path), "import", str(folder), "--skip-bad-files", "-q"])
    assert result.exit_code == 0 and "skipped caf\\xe9.md: its name is not UTF-8" in result.output, result.output


def test_a_renamed_subfolder_keeps_its_files_chunk_ids(tmp_path: Path, mem: Memory):
    """Renaming a subfolder inside an imported folder gave every chunk under it a new id (the
    old ones ended in DELETE), though the files and their text were the same."""
    folder = tmp_path / "notes"
    shutil.copytree(NOTES, folder)
    mem.import_path(folder)
    before = {e.text: e.id for e in mem.list(limit=100)}
    (folder / "projects").rename(folder / "work-projects")
    (folder / "生活" / "读书笔记.md").rename(folder / "读书笔记.md")  # a file moved to another folder
    report = mem.import_path(folder)
    assert report["removed"] == 0 and mem.count() == len(before)
    after = {e.text: e for e in mem.list(limit=100)}
    assert {text: e.id for text, e in after.items()} == before
    assert {e.source.path for e in after.values()} >= {"work-projects/onboarding.md", "读书笔记.md"}
    assert mem.import_path(folder)["written"] == 0
