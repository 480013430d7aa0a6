"""Conversation memory: formats, offline restatement, provenance, idempotence and reference time."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest

from engramdb import Memory
from engramdb.conversation import detect_format, read_conversations
from engramdb.conversation.restate import resolve_pronouns, resolve_time
from engramdb.errors import InputError

FIXTURES = Path(__file__).parent / "fixtures" / "conversations"
LOCOMO = Path(__file__).parent / "fixtures" / "eval" / "locomo_tiny.json"
SAID = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)  # a Monday

# (sentence as said on Monday 8 May 2023, restated text, event start as YYYY-MM-DD or None)
RESTATEMENTS = [
    ("Caroline went there yesterday.", "Caroline went there on 7 May 2023.", "2023-05-07"),
    ("Yesterday Caroline ran.", "On 7 May 2023 Caroline ran.", "2023-05-07"),
    ("Melanie painted it two days ago.", "Melanie painted it on 6 May 2023.", "2023-05-06"),
    ("Melanie went camping last week.", "Melanie went camping in the week of 1 May 2023.", "2023-05-01"),
    ("Caroline moves next month.", "Caroline moves in June 2023.", "2023-06-01"),
    ("Jon raced last Saturday.", "Jon raced on 6 May 2023.", "2023-05-06"),
    ("They married last year.", "They married in 2022.", "2022-01-01"),
    ("We went to the beach last summer.", "We went to the beach in summer 2022.", "2022-06-01"),
    ("Jon starts the course in May 2023.", "Jon starts the course in May 2023.", "2023-05-01"),
    ("Nothing about time here.", "Nothing about time here.", None),
    ("小王昨天去了黄山。", "小王2023年5月7日去了黄山。", "2023-05-07"),
    ("小李上周搬家了。", "小李2023年5月1日那一周搬家了。", "2023-05-01"),
    ("小李下个月去北京。", "小李2023年6月去北京。", "2023-06-01"),
    ("前天开会了。", "2023年5月6日开会了。", "2023-05-06"),
    ("I met her on the 2nd of June.", "I met her on 2 June 2023.", "2023-06-02"),
    ("On June 2nd we met.", "On 2 June 2023 we met.", "2023-06-02"),
    ("I went there in the last week.", "I went there in the week of 1 May 2023.", "2023-05-01"),
    ("我4月12日去了北京。", "我2023年4月12日去了北京。", "2023-04-12"),
    ("Kim昨天去了北京。", "Kim 2023年5月7日去了北京。", "2023-05-07"),  # a Latin name and the year apart
    ("他12月去了北京。", "他12月去了北京。", None),  # a month alone may be past or future: kept
    # after a bound word the date goes without its preposition
    ("I had finished it before yesterday.", "I had finished it before 7 May 2023.", "2023-05-07"),
    ("Since last month I run daily.", "Since April 2023 I run daily.", "2023-04-01"),
    # after "of" too (an outside check: "First of next month" read "First of in December 2026")
    ("First of next month.", "First of June 2023.", "2023-06-01"),
    ("I fly out on the first of next month.", "I fly out on the first of June 2023.", "2023-06-01"),
    ("我5月之前去过北京。", "我5月之前去过北京。", None),  # a month alone, under a bound: kept
    ("I'm moving in two weeks.", "I'm moving in the week of 22 May 2023.", "2023-05-22"),
    ("I learned to swim in two weeks.", "I learned to swim in two weeks.", None),  # a duration: kept
    ("我过两天去北京。", "我2023年5月10日去北京。", "2023-05-10"),
    ("大后天考试。", "2023年5月11日考试。", "2023-05-11"),
]


@pytest.mark.parametrize(("said", "restated", "start"), RESTATEMENTS)
def test_relative_time_becomes_absolute(said: str, restated: str, start: str | None) -> None:
    text, window = resolve_time(said, SAID)
    assert text == restated
    assert (window.start.date().isoformat() if window else None) == start


PRONOUNS = [
    ("I went to a support group.", "Caroline went to a support group."),
    ("I'm so proud of you!", "Caroline is so proud of Melanie!"),
    ("I love my kids and your painting.", "Caroline loves Caroline's kids and Melanie's painting."),
    ("You were great and we have fun.", "Melanie was great and Caroline and others have fun."),
    ("我上周跟你的朋友去了黄山。", "Caroline上周跟Melanie的朋友去了黄山。"),
    # a greeting is not a person (你好 read "Melanie好"), but 你好像 is "you seem"
    ("你好！我上周去了黄山。", "你好！Caroline上周去了黄山。"),
    ("您好，你的快递到了。", "您好，Melanie的快递到了。"),
    ("你好像很累。", "Melanie好像很累。"),
    # "read" is its own past, like "put": left as said ("Caroline reads Sapiens" told of March was wrong)
    ("Back in March I read Sapiens.", "Back in March Caroline read Sapiens."),
    # a question's inverted verb agrees with the name, but not with "you and ..." (plural)
    ("Are you going back in 2025?", "Is Melanie going back in 2025?"),
    ("Do you have a dog? Why don't you come?", "Does Melanie have a dog? Why doesn't Melanie come?"),
    ("Where were you? Are you and Bob coming?", "Where was Melanie? Are Melanie and Bob coming?"),
    # the verb after "I" agrees for everyday verbs too, past an adverb; not after a modal or "do"
    ("Tomorrow I fly to Oslo.", "Tomorrow Caroline flies to Oslo."),
    ("I usually drive, but I try to walk and I buy my bread there.",
     "Caroline usually drives, but Caroline tries to walk and Caroline buys Caroline's bread there."),
    ("I watch films and I don’t eat meat.", "Caroline watches films and Caroline doesn’t eat meat."),
    ("Can I go too? Do I need a visa? Am I late?", "Can Caroline go too? Does Caroline need a visa? Is Caroline late?"),
    ("Why didn't I fly? I put it away.", "Why didn't Caroline fly? Caroline put it away."),
    # a subject of two at the start of a sentence takes a plural verb; "and I" after a clause does not
    ("Bob and I go hiking every Sunday.", "Bob and Caroline go hiking every Sunday."),
    ("My sister and I are planning a trip. It is far and I go anyway.",
     "Caroline's sister and Caroline are planning a trip. It is far and Caroline goes anyway."),
    ("Every Sunday, my best friend and I usually cook.", "Every Sunday, Caroline's best friend and Caroline usually cook."),
    ("He and I love jazz. I think so.", "He and Caroline love jazz. Caroline thinks so."),
    ("The weather is nice and I walk. Yeah and I love it.",
     "The weather is nice and Caroline walks. Yeah and Caroline loves it."),
]


@pytest.mark.parametrize(("said", "restated"), PRONOUNS)
def test_first_and_second_person_become_names(said: str, restated: str) -> None:
    assert resolve_pronouns(said, "Caroline", "Melanie") == restated


def test_formats_are_recognised_by_their_fields() -> None:
    assert detect_format(FIXTURES / "turns.jsonl") == "turns"
    assert detect_format(FIXTURES / "openai_chat.json") == "openai"
    assert detect_format(LOCOMO) == "locomo"
    sessions = read_conversations(LOCOMO)
    assert [len(s.turns) for s in sessions][:2] == [6, 6]
    assert sessions[0].turns[0].turn_id == "D1:1" and sessions[0].turns[0].timestamp is not None


def test_openai_messages_skip_instructions_and_keep_names_and_time() -> None:
    (chat,) = read_conversations(FIXTURES / "openai_chat.json")
    assert chat.session_id == "chat-42"
    assert [t.speaker for t in chat.turns] == ["user", "assistant", "Alice"]
    assert chat.turns[1].text.startswith("Congratulations on the move")
    assert chat.turns[0].timestamp == SAID


def test_malformed_turn_is_reported_with_its_line_and_nothing_is_written(mem: Memory) -> None:
    with pytest.raises(InputError, match=r"bad_turns\.jsonl:3: missing 'speaker'"):
        mem.import_path(FIXTURES / "bad_turns.jsonl")
    assert mem.count(all_namespaces=True) == 0


def test_a_mistyped_speaker_or_an_out_of_range_year_is_named_as_such(mem: Memory, tmp_path: Path) -> None:
    """A JSONL turn whose speaker is a number is told its speaker must be a string (not that it
    is missing), and a year past 9999 that it is out of range (not that it is not ISO 8601),
    naming the line; add_conversation says the same of its turns."""
    cases = [({"speaker": 5, "text": "hi"}, "'speaker' must be a string, not int"),
             ({"role": ["user"], "text": "hi"}, "'role' must be a string, not list"),
             ({"speaker": "  ", "text": "hi"}, "'speaker' is blank"),
             ({"speaker": "Ann", "text": "hi", "timestamp": "10000-01-01"},
              "timestamp '10000-01-01' has year 10000, out of range (years 1 to 9999)")]
    for line, expected in cases:
        path = tmp_path / "turns.jsonl"
        path.write_text(json.dumps({"speaker": "Bob", "text": "fine"}) + "\n" + json.dumps(line) + "\n")
        with pytest.raises(InputError) as caught:
            mem.import_path(path)
        assert str(caught.value) == f"{path}:2: {expected}"
        with pytest.raises(InputError) as caught:
            mem.add_conversation([{"speaker": "Bob", "text": "fine"}, line], session_id="s")
        assert str(caught.value) == f"turn 1: {expected}"
    assert mem.count(all_namespaces=True) == 0


def test_import_writes_turns_and_facts_linked_to_them(mem: Memory) -> None:
    report = mem.import_path(FIXTURES / "turns.jsonl")
    assert report["format"] == "turns" and report["sessions"] == 2 and report["turns"] == 5
    assert report["facts"] >= 4 and report["failures"] == []
    turns = {e.source.turn_id: e for e in mem.get(mem.store.ids("default", mem_filters(kinds=["turn"])))}
    facts = mem.get(mem.store.ids("default", mem_filters(kinds=["fact"])))
    assert len(turns) == 5 and len(facts) == report["facts"]
    by_text = {f.text: f for f in facts}
    group = by_text["Caroline went to a LGBTQ support group on 7 May 2023. It was so powerful."]
    # Provenance: the fact names the turn entry it came from, and that entry is stored.
    (source,) = mem.get(group.derived_from)
    assert source.kind == "turn" and source.source.turn_id == "s1:1"
    assert group.timestamp == "2023-05-07T00:00:00+00:00" and group.timestamp_end == "2023-05-08T00:00:00+00:00"
    assert group.metadata["said_at"] == "2023-05-08T13:56:00+00:00"
    assert "Caroline" in group.persons and "LGBTQ" in group.entities
    # The second turn had no timestamp: it takes its session's, so "next week" resolves.
    assert turns["s1:2"].timestamp == "2023-05-08T13:56:00+00:00"
    assert any(f.text.startswith("Melanie is painting a sunrise with Melanie's kids in the week of 15 May 2023")
               for f in facts)
    vet = next(f for f in facts if "Boston" in f.text)
    assert any(f.text == 'Melanie asked "Did Caroline take him to the vet?" and Caroline answered "Yes, on 8 June 2023."'
               for f in facts)
    assert vet.location == "Boston"
    # Questions are not facts; no fact keeps a first-person pronoun.
    assert not any(f.text.endswith("?") for f in facts)
    assert not any(re.search(r"\b(I|my|me)\b", f.text) for f in facts)


def mem_filters(**kwargs):  # type: ignore[no-untyped-def]
    from engramdb.store.base import Filters

    return Filters(**kwargs)


def test_reimport_is_idempotent_and_a_changed_session_is_replaced(mem: Memory, tmp_path: Path) -> None:
    first = mem.import_path(FIXTURES / "turns.jsonl")
    count = mem.count()
    again = mem.import_path(FIXTURES / "turns.jsonl")
    assert again["sessions_unchanged"] == 2 and again["written"] == 0 and mem.count() == count
    edited = tmp_path / "edited.jsonl"
    lines = (FIXTURES / "turns.jsonl").read_text().splitlines()
    lines[0] = lines[0].replace("support group", "book club")
    edited.write_text("\n".join(lines) + "\n")
    third = mem.import_path(edited)
    assert third["sessions_unchanged"] == 1 and third["removed"] >= 2
    texts = [e.text for e in mem.get(mem.store.ids("default", mem_filters()))]
    assert not any("support group" in t for t in texts)
    assert any("book club on 7 May 2023" in t for t in texts)
    assert mem.count() == count and third["facts"] == 2 and first["facts"] == 5


@pytest.mark.parametrize("suffix, render", [
    (".json", lambda turns: __import__("json").dumps([{"role": r, "content": t} for r, t in turns])),
    (".jsonl", lambda turns: "\n".join(__import__("json").dumps({"speaker": r, "text": t}) for r, t in turns)),
])
def test_files_without_session_ids_do_not_replace_each_other(mem: Memory, tmp_path: Path, suffix: str,
                                                              render) -> None:  # type: ignore[no-untyped-def]
    """Two files whose turns name no session: each is its own session (named after its first
    turns), and importing one again, also with a turn appended, replaces only itself."""
    locker = [("user", "Remember: my locker code is 5521."), ("assistant", "Noted."), ("user", "Thanks!")]
    weather = [("user", "What is the weather like in Oslo?"), ("assistant", "Cold.")]
    (tmp_path / f"a{suffix}").write_text(render(locker))
    (tmp_path / f"b{suffix}").write_text(render(weather))
    mem.import_path(tmp_path / f"a{suffix}", extractor="none")
    second = mem.import_path(tmp_path / f"b{suffix}", extractor="none")
    assert second["removed"] == 0
    texts = sorted(e.text for e in mem.get(mem.store.ids("default", mem_filters(kinds=["turn"]))))
    assert any("locker code is 5521" in t for t in texts) and any("Oslo" in t for t in texts) and len(texts) == 5
    sessions = {e.source.session_id for e in mem.get(mem.store.ids("default", mem_filters(kinds=["turn"])))}
    assert len(sessions) == 2 and all(s.startswith("session-") for s in sessions)
    (tmp_path / f"a{suffix}").write_text(render([*locker, ("user", "And my bike is blue.")]))
    third = mem.import_path(tmp_path / f"a{suffix}", extractor="none")
    assert third["removed"] == 0 and mem.count() == 6  # the same session (its first three turns), one turn longer
    assert {e.source.session_id for e in mem.get(mem.store.ids("default", mem_filters(kinds=["turn"])))} == sessions


@pytest.mark.parametrize("suffix, render", [
    (".json", lambda turns, sid=None: __import__("json").dumps(
        {**({"session_id": sid} if sid else {}), "messages": [{"role": r, "content": t} for r, t in turns]})),
    (".jsonl", lambda turns, sid=None: "\n".join(__import__("json").dumps(
        {**({"session_id": sid} if sid else {}), "speaker": r, "text": t}) for r, t in turns)),
])
def test_a_session_an_earlier_version_named_session_1_is_replaced_on_reimport(
        mem: Memory, tmp_path: Path, suffix: str, render) -> None:  # type: ignore[no-untyped-def]
    """Before sessions without ids were named after their first turns, every one was
    "session_1": re-importing the file after an upgrade replaces that session, not adds to it;
    a "session_1" holding another conversation stays."""
    locker = [("user", "Remember: my locker code is 5521."), ("assistant", "Noted."), ("user", "Thanks!")]
    old = tmp_path / f"old{suffix}"
    old.write_text(render(locker, "session_1"))  # what the earlier version stored
    stored = mem.import_path(old)
    assert stored["facts"] >= 1
    (tmp_path / f"a{suffix}").write_text(render([*locker, ("user", "And my bike is blue.")]))
    report = mem.import_path(tmp_path / f"a{suffix}")
    assert report["removed"] == stored["written"]
    sessions = {e.source.session_id for e in mem.list(limit=100)}
    assert len(sessions) == 1 and sessions.pop().startswith("session-")
    assert mem.count(filters={"kind": "turn"}) == 4
    other = [("user", "What is the weather like in Oslo?"), ("assistant", "Cold.")]
    (tmp_path / f"old{suffix}").write_text(render(other, "session_1"))
    mem.import_path(tmp_path / f"old{suffix}")
    again = mem.import_path(tmp_path / f"a{suffix}")
    assert again["removed"] == again["written"] == 0
    assert mem.count(filters={"kind": "turn", "session_id": "session_1"}) == 2


def test_one_file_of_conversations_that_start_alike_keeps_them_apart(tmp_path: Path) -> None:
    import json

    same_start = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello! How can I help?"}]
    chats = [{"messages": [*same_start, {"role": "user", "content": topic}]} for topic in ("Book a flight", "Cook rice")]
    (tmp_path / "chats.json").write_text(json.dumps(chats))
    sessions = read_conversations(tmp_path / "chats.json")
    assert len({s.session_id for s in sessions}) == 2
    assert all(t.session_id == s.session_id and t.turn_id.startswith(s.session_id + ":") for s in sessions for t in s.turns)


def test_add_turn_sent_twice_is_stored_once(mem: Memory) -> None:
    def turns() -> list[str]:
        return [e.text for e in mem.get(mem.store.ids("default", mem_filters(kinds=["turn"], session_id="s2")))]

    first = mem.add_turn("Caroline", "I adopted a puppy last Saturday", session_id="s2", timestamp="2023-06-10T10:00")
    retry = mem.add_turn("Caroline", "I adopted a puppy last Saturday", session_id="s2", timestamp="2023-06-10T10:00")
    assert first.turns == 1 and first.facts == 1 and (retry.turns, retry.written) == (0, 0)
    count = mem.count()
    mem.add_turn("Melanie", "Congrats!", session_id="s2")
    assert mem.add_turn("Melanie", "Congrats!", session_id="s2").written == 0  # no timestamp: still a retry
    mem.add_turn("Caroline", "Congrats!", session_id="s2")  # someone else saying it is a new turn
    later = mem.add_turn("Caroline", "I adopted a puppy last Saturday", session_id="s2", timestamp="2023-06-17T10:00")
    assert later.turns == 1 and mem.count() == count + 3 + later.facts
    assert len(turns()) == 4


def test_a_retry_of_a_turn_stamped_before_the_latest_is_stored_once(mem: Memory) -> None:
    """With its time given, a retry was recognised only as the session's latest turn: a turn
    stamped before it (a batch whose other turn took the wall clock) was stored again, with a
    second copy of its fact, on every retry."""
    mem.add_turn("user", "I booked a table at Kirin for Friday.", session_id="s", timestamp="2025-01-04T09:05:00")
    first = mem.add_turn("user", "My sister arrives on Sunday.", session_id="s", timestamp="2025-01-04T09:00:00")
    count = mem.count()
    again = mem.add_turn("user", "My sister arrives on Sunday.", session_id="s", timestamp="2025-01-04T09:00:00")
    assert (first.turns, again.turns, again.written, again.sessions_unchanged) == (1, 0, 0, 1)
    assert mem.count() == count
    later = mem.add_turn("user", "My sister arrives on Sunday.", session_id="s", timestamp="2025-01-04T09:10:00")
    assert later.turns == 1  # said again later: a turn of its own


def test_a_retried_turn_reports_its_session_unchanged(mem: Memory) -> None:
    """A retry (the latest turn again, or a turn id with the same words) says the session is
    unchanged — it said sessions_unchanged: 0, as if nothing had been looked at."""
    first = mem.add_turn("Ann", "I fly to Oslo tomorrow.", session_id="r", turn_id="r1")
    assert (first.turns, first.sessions_unchanged) == (1, 0)
    for again in (mem.add_turn("Ann", "I fly to Oslo tomorrow.", session_id="r"),
                  mem.add_turn("Ann", "I fly to Oslo tomorrow.", session_id="r", turn_id="r1")):
        assert (again.turns, again.written, again.sessions_unchanged) == (0, 0, 1)
        assert again.to_dict()["sessions_unchanged"] == 1


def test_a_turn_without_a_time_takes_the_sessions_or_stays_undated_from_a_file(mem: Memory, tmp_path: Path) -> None:
    """As CONVERSATIONS.md says: add_conversation and add_turn date a turn without a timestamp
    at session_time, by default now; a file's turn without one takes its session's time (a
    turns line's session_time, or the first timestamp given on an earlier line of the
    session) and, with none, stays undated, its relative words as said."""
    before = datetime.now(timezone.utc).replace(microsecond=0)
    mem.add_conversation([("Ann", "Hello.")], session_id="live")
    [live] = mem.get(mem.store.ids("default", mem_filters(kinds=["turn"], session_id="live")))
    assert live.timestamp is not None and datetime.fromisoformat(live.timestamp) >= before
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in [
        {"session_id": "a", "speaker": "Ann", "text": "I moved to Oslo last month."},
        {"session_id": "b", "speaker": "Ann", "text": "Hi.", "timestamp": "2024-06-12T09:00:00"},
        {"session_id": "b", "speaker": "Ann", "text": "I sold my bike yesterday."},
        {"session_id": "c", "speaker": "Ann", "text": "Hi.", "session_time": "2024-01-05T10:00:00"}]) + "\n")
    mem.import_path(path)
    stamps = {(t.source.session_id, t.text): t.timestamp
              for t in mem.get(mem.store.ids("default", mem_filters(kinds=["turn"])))}
    assert stamps[("a", "Ann: I moved to Oslo last month.")] is None
    assert stamps[("b", "Ann: I sold my bike yesterday.")] == "2024-06-12T09:00:00+00:00"
    assert stamps[("c", "Ann: Hi.")] == "2024-01-05T10:00:00+00:00"


def test_a_turn_id_names_a_turn_a_retry_writes_nothing_a_correction_replaces_it(mem: Memory) -> None:
    mem.add_turn("Ann", "I bought a red car yesterday.", session_id="s9", turn_id="t1", timestamp="2023-06-10T10:00:00")
    mem.add_turn("Ben", "Nice, which model?", session_id="s9", turn_id="t2", timestamp="2023-06-10T10:01:00")
    assert mem.add_turn("Ann", "I bought a red car yesterday.", session_id="s9", turn_id="t1").written == 0
    fixed = mem.add_turn("Ann", "I bought a blue car yesterday.", session_id="s9", turn_id="t1")
    assert fixed.turns == 1 and fixed.removed >= 2  # the old turn and its fact
    turns = mem.get(mem.store.ids("default", mem_filters(kinds=["turn"])))
    assert [(t.source.turn_id, t.text, t.timestamp) for t in turns] == [
        ("t1", "Ann: I bought a blue car yesterday.", "2023-06-10T10:00:00+00:00"),  # its place and its time
        ("t2", "Ben: Nice, which model?", "2023-06-10T10:01:00+00:00")]
    facts = [f.text for f in mem.get(mem.store.ids("default", mem_filters(kinds=["fact"])))]
    assert "Ann bought a blue car on 9 June 2023." in facts and not any("red car" in f for f in facts)


def test_add_turn_after_a_conversation_written_at_one_time_reads_its_last_turn(mem: Memory) -> None:
    """add_conversation gives every turn the session's time: the latest turn is the one
    written last, for the retry check and for the question a new turn answers."""
    mem.add_conversation([("Melanie", "Hi!"), ("Caroline", "Hello, how are you?"), ("Melanie", "Fine, I painted a lake.")],
                         session_id="s1", session_time="2023-06-10T10:00:00")
    at = "2023-06-10T10:00:00"
    assert mem.add_turn("Melanie", "Fine, I painted a lake.", session_id="s1", timestamp=at).turns == 0
    assert mem.add_turn("Melanie", "Hi!", session_id="s1", timestamp=at).turns == 1  # not the latest: a new turn
    mem.add_conversation([("Melanie", "Did you take your dog to the vet?"), ("Caroline", "Yes, two days ago."),
                          ("Caroline", "We walked along the river yesterday.")], session_id="s2",
                         session_time="2023-06-10T10:00:00")
    mem.add_turn("Caroline", "I am going to Paris next month.", session_id="s2", timestamp="2023-06-11T09:00:00")
    facts = [e.text for e in mem.get(mem.store.ids("default", mem_filters(kinds=["fact"])))]
    assert not any("vet" in f and "Paris" in f for f in facts)  # not paired with the first turn's question


def test_a_time_said_after_a_pronoun_is_dated_in_the_fact(mem: Memory) -> None:
    """The offline extractor restated the subject before reading the time, and 过两天 after a name
    reads as a verb's (小王过两天…): "我过两天去上海" was stored as "小王过两天去上海", undated."""
    mem.add_conversation([("小王", "我过两天去上海。"), ("小李", "我们再过一个月见面吧。"),
                          ("Ann", "I'm moving in two weeks.")], session_id="s", session_time="2023-05-08T10:00:00")
    facts = {e.text: (e.timestamp or "")[:10] for e in mem.list(filters={"kind": "fact"}).results}
    assert facts.get("小王2023年5月10日去上海。") == "2023-05-10", facts
    assert any(text.startswith("小李") and "2023年6月" in text and day == "2023-06-01" for text, day in facts.items()), facts
    assert facts.get("Ann is moving in the week of 22 May 2023.") == "2023-05-22", facts


def test_add_conversation_and_add_turn(mem: Memory) -> None:
    report = mem.add_conversation(
        [("Alice", "I started a new job at Zalando yesterday."), ("Bob", "Congrats! I'm moving to Berlin next month.")],
        session_id="chat", session_time="2023-05-08T09:00:00",
    )
    assert report.turns == 2 and report.facts == 2
    later = mem.add_turn("Alice", "You should visit me in Berlin!", session_id="chat", timestamp="2023-05-09T10:00:00")
    assert later.turns == 1 and later.facts == 1
    facts = {e.text for e in mem.get(mem.store.ids("default", mem_filters(kinds=["fact"])))}
    assert "Bob should visit Alice in Berlin!" in facts
    assert "Alice started a new job at Zalando on 7 May 2023." in facts
    question = mem.add_turn("Alice", "Will you visit me in Berlin?", session_id="chat",
                            timestamp="2023-05-09T11:00:00")
    assert question.facts == 0  # a question alone is not a fact
    answer = mem.add_turn("Bob", "Sure, next Friday.", session_id="chat", timestamp="2023-05-10T10:00:00")
    assert answer.facts == 1 and answer.turns == 1  # the previous turn is context, not written again
    facts = {e.text: e for e in mem.get(mem.store.ids("default", mem_filters(kinds=["fact"])))}
    qa = facts['Alice asked "Will Bob visit Alice in Berlin?" and Bob answered "Sure, on 12 May 2023."']
    assert [t.source.turn_id for t in mem.get(qa.derived_from)] == ["chat:4", "chat:5"]
    turn = mem.get(mem.store.ids("default", mem_filters(kinds=["turn"], speaker="Alice")))
    assert sorted(t.source.turn_id for t in turn) == ["chat:1", "chat:3", "chat:4"]
    with pytest.raises(InputError, match="turn 0: missing 'speaker'"):
        mem.add_conversation([{"text": "orphan"}], session_id="x")


def test_questions_read_relative_time_against_the_conversation(mem: Memory) -> None:
    mem.import_path(FIXTURES / "turns.jsonl")
    res = mem.search("what happened last week?", k=5)
    # Default reference time: the newest entry (10 June 2023), so "last week" is 29 May - 4 June.
    assert res.trace["now"] == {"value": "2023-06-10T10:00:00+00:00", "from": "newest entry"}
    plan = res.trace["stages"][0]
    assert plan["time_window"]["start"].startswith("2023-05-29") and plan["time_window"]["end"].startswith("2023-06-05")
    temporal = [h for h in res.hits if "temporal" in h.channels]
    assert temporal and all("puppy" in h.text for h in temporal)  # the 3 June adoption, and only it
    earlier = mem.search("what happened last week?", k=5, now="2023-05-10T12:00:00")
    assert earlier.trace["now"]["from"] == "given"
    assert {h.text for h in earlier.hits if "temporal" in h.channels} == {
        "Caroline went to a LGBTQ support group on 7 May 2023. It was so powerful."
    }


def test_a_file_that_lost_turns_replaces_its_session(mem: Memory, tmp_path: Path) -> None:
    import json

    turns = [("Ann", "I adopted a puppy yesterday."), ("Ben", "What is its name?"), ("Ann", "His name is Max."),
             ("Ben", "I went to Tokyo last month.")]
    path = tmp_path / "s.jsonl"

    def write(rows: list[tuple[str, str]]) -> None:
        path.write_text("".join(json.dumps({"session_id": "s1", "speaker": s, "text": t,
                                            "timestamp": f"2023-06-10T10:0{i}:00"}) + "\n"
                                for i, (s, t) in enumerate(rows)))

    write(turns)
    mem.import_path(path)
    write(turns[:3])
    report = mem.import_path(path)
    assert report["sessions_unchanged"] == 0 and report["removed"] >= 2  # the turn and its fact
    assert not [h for h in mem.search("Tokyo", k=5) if "Tokyo" in h.text]
    assert mem.count(filters={"kind": "turn"}) == 3
    again = mem.import_path(path)
    assert again["sessions_unchanged"] == 1 and again["written"] == again["removed"] == 0


def test_relative_time_is_read_on_the_calendar_of_the_given_offset(mem: Memory) -> None:
    # 23:30 on 22 May in UTC-8 is already 23 May in UTC: "yesterday" is still 21 May there.
    said_at = "2023-05-22T23:30:00-08:00"
    mem.add_conversation([{"speaker": "Bob", "text": "Yesterday I went hiking with Carol.", "timestamp": said_at}],
                         session_id="tz")
    (fact,) = mem.get(mem.store.ids("default", mem_filters(kinds=["fact"])))
    assert fact.text == "On 21 May 2023 Bob went hiking with Carol."
    assert (fact.timestamp, fact.timestamp_end) == ("2023-05-21T08:00:00+00:00", "2023-05-22T08:00:00+00:00")
    (turn,) = mem.get(mem.store.ids("default", mem_filters(kinds=["turn"])))
    assert turn.timestamp == "2023-05-23T07:30:00+00:00"  # stored in UTC, as every timestamp
    mem.add_turn("小王", "我昨天去了黄山。", session_id="tz-zh", timestamp="2023-05-08T07:00:00+08:00")
    assert "小王2023年5月7日去了黄山。" in {f.text for f in mem.get(mem.store.ids("default", mem_filters(kinds=["fact"])))}
    for query, now in (("What did Bob do yesterday?", said_at), ("小王昨天做了什么", "2023-05-08T07:00:00+08:00")):
        res = mem.search(query, now=now)
        assert res.trace["now"] == {"value": now, "from": "given"}
        window = res.trace["stages"][0]["time_window"]
        start = datetime.fromisoformat(window["start"])
        assert start.utcoffset() == datetime.fromisoformat(now).utcoffset()
        assert start.date() == datetime.fromisoformat(now).date().replace(day=datetime.fromisoformat(now).day - 1)


def test_chinese_dialogue_is_restated_in_chinese(mem: Memory) -> None:
    report = mem.add_conversation(
        [("小王", "我昨天去了黄山，山顶很冷。"), ("小李", "你带羽绒服了吗？"), ("小王", "是的，带了一件羽绒服。"),
         ("小李", "下个月公司要在杭州开年会。")],
        session_id="zh", session_time="2023-05-08T20:00:00",
    )
    facts = {f.text: f for f in mem.get(mem.store.ids("default", mem_filters(kinds=["fact"])))}
    assert report.facts == len(facts) == 3
    huangshan = facts["小王2023年5月7日去了黄山，山顶很冷。"]
    assert huangshan.timestamp == "2023-05-07T00:00:00+00:00" and huangshan.location == "黄山"
    assert "小王问“小王带羽绒服了吗？”，小王回答“是的，带了一件羽绒服。”" not in facts
    assert "小李问“小王带羽绒服了吗？”，小王回答“是的，带了一件羽绒服。”" in facts
    assert facts["小李说：2023年6月公司要在杭州开年会。"].location == "杭州"


def test_reference_time_ignores_facts_about_the_future(mem: Memory) -> None:
    mem.add_conversation([("Priya", "Next month I want to plan a trip to Kyoto.")], session_id="s",
                         session_time="2024-04-20T10:00:00")
    fact = mem.get(mem.store.ids("default", mem_filters(kinds=["fact"])))[0]
    assert fact.timestamp == "2024-05-01T00:00:00+00:00"  # the event lies after the conversation
    assert mem.reference_time() == (datetime(2024, 4, 20, 10, 0, tzinfo=timezone.utc), "newest entry")


def test_reference_time_is_never_after_the_clock(mem: Memory) -> None:
    """A store of facts with one planned event must not read "last week" in the future."""
    mem.add([{"text": "Alice adopted a puppy.", "timestamp": "2020-05-09T10:00:00"},
             {"text": "Dentist appointment for Alice.", "timestamp": "2999-03-05T09:00:00"}])
    assert mem.reference_time() == (datetime(2020, 5, 9, 10, 0, tzinfo=timezone.utc), "newest entry")
    res = mem.search("What did Alice do this week?", k=1)
    assert res.trace["now"]["value"] == "2020-05-09T10:00:00+00:00"
    assert res.hits[0].text == "Alice adopted a puppy."
    only_future = mem.add({"text": "Bob's wedding.", "timestamp": "2999-06-01"}, namespace="plans")
    assert only_future and mem.reference_time("plans")[1] == "clock"


def test_reference_time_moves_when_the_clock_passes_a_future_entry(mem: Memory) -> None:
    """The newest time is cached per write; a future-dated entry that the clock reaches
    counts from then on, with no write in between."""
    newest = getattr(mem.store, "_newest", None) or mem.store._time._newest  # type: ignore[attr-defined]
    clock = [datetime(2021, 1, 1, tzinfo=timezone.utc).timestamp()]
    newest.clock = lambda: clock[0]
    mem.add([{"text": "Ann moved to Oslo.", "timestamp": "2020-05-09"},
             {"text": "Ann's concert in Bergen.", "timestamp": "2022-03-05"}])
    assert mem.reference_time()[0] == datetime(2020, 5, 9, tzinfo=timezone.utc)
    clock[0] = datetime(2022, 3, 6, tzinfo=timezone.utc).timestamp()
    assert mem.reference_time()[0] == datetime(2022, 3, 5, tzinfo=timezone.utc)


def test_reference_time_follows_writes_and_deletes(mem: Memory, store_target: str) -> None:
    """The newest time is cached per write sequence: every write or delete, here or from
    another connection to the file, must show in the next search."""
    mem.add({"text": "Ann moved to Oslo.", "timestamp": "2024-01-05"})
    assert mem.reference_time()[0] == datetime(2024, 1, 5, tzinfo=timezone.utc)
    newer = mem.add({"text": "Ann visited Bergen.", "timestamp": "2024-03-09"})
    assert mem.reference_time()[0] == datetime(2024, 3, 9, tzinfo=timezone.utc)
    mem.delete(newer)
    assert mem.reference_time()[0] == datetime(2024, 1, 5, tzinfo=timezone.utc)
    with Memory(store_target, embedder="minilm") as other:
        other.add({"text": "Ann flew to Tromsø.", "timestamp": "2024-06-30"})
    assert mem.reference_time()[0] == datetime(2024, 6, 30, tzinfo=timezone.utc)


NO_GROUP = {"extends": "default", "group": {"derived": False}}


def test_a_fact_and_the_turn_it_restates_take_one_place_in_the_hits(mem: Memory) -> None:
    mem.import_path(FIXTURES / "turns.jsonl")
    question = "When did Caroline go to the LGBTQ support group?"
    both = mem.search(question, k=10, preset=NO_GROUP, now="2023-06-01")
    one = mem.search(question, k=10, now="2023-06-01", explain=True)

    def evidence(hit):  # type: ignore[no-untyped-def]
        return set(hit.entry.derived_from) or {hit.id}

    # without the rule, the fact and its source turn are both among the hits ...
    pairs = [(a, b) for i, a in enumerate(both.hits) for b in both.hits[i + 1:] if evidence(b) <= evidence(a)
             or evidence(a) <= evidence(b)]
    assert pairs, "the fixture should give a fact and its turn"
    # ... with it (the default), no hit stands for turns a better hit already stood for
    shown: set[str] = set()
    for hit in one.hits:
        assert not evidence(hit) <= shown
        shown |= evidence(hit)
    # the better-ranked of the two is the one kept, and the others keep their order
    kept = [h.id for h in both.hits if h.id in {x.id for x in one.hits}]
    assert kept == [h.id for h in one.hits][: len(kept)]
    group = next(s for s in one.trace["stages"] if s["stage"] == "group")
    assert group["derived_dropped"] >= 1


def test_a_fact_from_a_question_and_its_answer_takes_the_questions_place(mem: Memory) -> None:
    """"Do you still live with Mei?" ranked first and the fact that says the answer second: a fact
    from two turns was kept beside one of them, so the two took two places."""
    mem.add_conversation([("Sam", "Do you still live with Mei?"), ("Lin", "No, Mei moved to Seattle in January."),
                          ("Sam", "Next month I'm running the Oakland half marathon.")],
                         session_id="s2", session_time="2024-03-25T09:00:00")
    question = "Where does Mei live these days?"
    both = mem.search(question, k=3, preset=NO_GROUP).hits
    assert both[0].entry.kind == "turn" and both[0].text.endswith("Do you still live with Mei?")  # the case
    hits = mem.search(question, k=3).hits
    assert hits[0].entry.kind == "fact" and "Seattle" in hits[0].text
    assert hits[0].score == both[0].score  # the question's rank, and its score
    assert [h.entry.kind for h in hits[1:]] == ["turn"] and "marathon" in hits[1].text


def test_a_turn_said_in_the_window_about_a_day_before_it_is_not_in_the_window(mem: Memory) -> None:
    """"I went to the dentist yesterday", said on 11 March, is about the 10th (its fact says so);
    asked what Kim did on the 11th, the turn got the window's boost by when it was said and ranked
    above "I bought a new bike today"."""
    mem.add_conversation([("Kim", "I went to the dentist yesterday."), ("Lee", "Poor you.")], session_id="a",
                         session_time="2024-03-11T20:00:00")
    mem.add_conversation([("Kim", "I bought a new bike today."), ("Lee", "Nice one.")], session_id="b",
                         session_time="2024-03-11T21:00:00")
    mem.add_conversation([("Kim", "I'm cooking pasta tonight."), ("Lee", "Enjoy.")], session_id="c",
                         session_time="2024-03-12T18:00:00")
    for question in ("What did Kim do yesterday?", "Kim昨天做了什么？"):
        result = mem.search(question, k=3, now="2024-03-12T19:00:00", explain=True)
        assert "bike" in result.hits[0].text, [h.text for h in result.hits]
        assert not any("dentist" in h.text and h.entry.kind == "turn" for h in result.hits)
        group = next(s for s in result.trace["stages"] if s["stage"] == "group")
        assert group["dated_elsewhere"] == 1
    on_the_tenth = mem.search("What did Kim do on 10 March 2024?", k=1, now="2024-03-12T19:00:00").hits
    assert "dentist" in on_the_tenth[0].text  # the fact, dated the day it tells of


def test_openai_messages_without_text_are_counted_not_dropped_silently(mem: Memory, tmp_path: Path) -> None:
    """A tool-call-only or empty message is skipped, and the report says how many and why;
    content-part lists (Chat Completions, Responses, Assistants shapes) are read as text."""
    chat = tmp_path / "tools.json"
    chat.write_text(json.dumps({"id": "t1", "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What's the weather in Oslo?"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "4°C, rain"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "It is 4°C and raining in Oslo."}]},
        {"role": "user", "content": ""},
        {"role": "user", "content": [{"type": "input_text", "text": "Thanks."},
                                     {"type": "image_url", "image_url": {"url": "x"}}]},
        {"role": "assistant", "content": [{"type": "text", "text": {"value": "You're welcome.", "annotations": []}}]},
    ]}), encoding="utf-8")
    (conv,) = read_conversations(chat)
    assert [t.text for t in conv.turns] == ["What's the weather in Oslo?", "It is 4°C and raining in Oslo.",
                                             "Thanks.", "You're welcome."]
    assert conv.skipped == {"system": 1, "tool": 1, "no text": 2}
    report = mem.import_path(chat, extractor="none")
    assert report["turns"] == 4 and report["skipped"] == {"system": 1, "tool": 1, "no text": 2}
    # A non-text value where text is expected is an error naming the message, not a traceback.
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"role": "user", "content": [{"type": "text", "text": 3}]}]), encoding="utf-8")
    with pytest.raises(InputError, match=r"message 1: .*text"):
        read_conversations(bad)


def test_a_turn_id_names_one_turn_of_its_session(mem: Memory, tmp_path: Path) -> None:
    """Two turns with one id in one session: the same turn twice is stored once; other words
    (or another time) are refused naming the id and both places, before anything is written."""
    def lines(*rows: dict) -> Path:
        path = tmp_path / "dup.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        return path

    first = {"session_id": "s1", "turn_id": "t1", "speaker": "Ann", "text": "I live in Oslo.",
             "timestamp": "2023-05-08T10:00:00"}
    other = {"session_id": "s2", "turn_id": "t1", "speaker": "Ann", "text": "Another session, its own t1."}
    with pytest.raises(InputError, match=r"dup\.jsonl:3: turn id 't1' is also that of line 1, with other words"):
        mem.import_path(lines(first, other, {**first, "text": "I live in Bergen."}), extractor="none")
    with pytest.raises(InputError, match=r"dup\.jsonl:2: turn id 't1' is also that of line 1, at another time"):
        mem.import_path(lines(first, {**first, "timestamp": "2023-05-09T10:00:00"}), extractor="none")
    # A default id taken by a line that names it is the same clash.
    with pytest.raises(InputError, match=r"turn id 's1:1' is also that of"):
        mem.import_path(lines({"session_id": "s1", "speaker": "Ann", "text": "Hi."},
                              {"session_id": "s1", "turn_id": "s1:1", "speaker": "Bo", "text": "Hello."}))
    assert mem.count(all_namespaces=True) == 0
    report = mem.import_path(lines(first, other, first), extractor="none")  # the same line twice: one turn
    assert report["turns"] == 2 and mem.count(filters={"session_id": "s1"}) == 1
    # add_conversation, and two sessions of one file that share an id, the same way.
    with pytest.raises(InputError, match=r"turn 1: turn id 'x' is also that of turn 0, with other words"):
        mem.add_conversation([{"speaker": "Ann", "text": "One.", "turn_id": "x"},
                              {"speaker": "Ann", "text": "Two.", "turn_id": "x"}], session_id="s3")
    chats = tmp_path / "chats.json"
    chats.write_text(json.dumps([{"id": "c1", "messages": [{"role": "user", "content": "First chat."}]},
                                 {"id": "c1", "messages": [{"role": "user", "content": "Second chat."}]}]),
                     encoding="utf-8")
    with pytest.raises(InputError, match=r"session 'c1' is given twice, with other turns"):
        mem.import_path(chats, extractor="none")
    assert mem.count(filters={"session_id": "c1"}) == 0 and mem.count(filters={"session_id": "s3"}) == 0


def test_leaving_or_putting_off_a_chat_is_no_fact(mem: Memory) -> None:
    """"Haha okay, back to work." and "Maybe later." were stored as facts ("The user said: …"), and
    "work" then brought them first for "Where do I work now?" (an outside check); a sentence
    that says more than the closing stays a fact."""
    from engramdb.conversation.extract import is_small_talk

    closings = ["Haha okay, back to work.", "Maybe later.", "Gotta run, talk later!", "See you tomorrow!",
                "Take care and have a good one!"]
    kept = ["I'm going back to work after my surgery next week.", "I hurt my back at work yesterday.",
            "See you at the concert in Berlin on Friday!"]
    assert all(is_small_talk(text) for text in closings) and not any(is_small_talk(text) for text in kept)
    report = mem.add_conversation([("user", text) for text in closings + kept], session_id="s",
                                  session_time="2025-05-01T10:00:00")
    facts = [e.text for e in mem.list(filters={"kind": "fact"}).results]
    assert report.facts == len(facts) == len(kept), facts
    assert any("surgery" in f for f in facts) and any("back at work" in f for f in facts) and any("concert" in f for f in facts)


def test_small_talk_turns_do_not_fill_a_time_window(mem: Memory) -> None:
    """Inside "last weekend" every turn gets the window's boost; "👍" and "haha yes" answer no
    question, so what was done that weekend ranks above them."""
    from engramdb.conversation.extract import is_small_talk

    assert is_small_talk("User: 👍", "User") and is_small_talk("用户: 好的", "用户") and is_small_talk("haha yes")
    assert not is_small_talk("User: We went hiking", "User") and not is_small_talk("Rest well and stretch!")
    # small talk alone is short: a long turn is not even analysed
    assert not is_small_talk("haha yes, thanks so much, wow, that is really great, yes yes, cool!!")
    mem.add_conversation([("User", "ok"), ("Assistant", "👍"), ("User", "haha yes"), ("User", "thanks")],
                         session_id="chat", session_time="2026-11-14T12:00:00")
    mem.add_conversation([("User", "Went to the cinema with Xiao Wang, the effects were great.")],
                         session_id="film", session_time="2026-11-15T20:00:00")
    mem.add_conversation([("User", "I repainted the kitchen.")], session_id="paint", session_time="2026-10-03T10:00:00")
    result = mem.search("what did I do last weekend", k=4, now="2026-11-20T09:00:00")
    texts = [h.entry.text for h in result.hits]
    assert "cinema" in texts[0], texts
    group = next(s for s in result.trace["stages"] if s["stage"] == "group")
    assert group["small_talk"] >= 3
    # off, the same preset lets them take the window's boost in full
    off = {"extends": "default", "group": {"derived": True, "pool_factor": 3, "small_talk": 1.0}}
    scores = {h.entry.text: h.score for h in mem.search("what did I do last weekend", k=8, now="2026-11-20T09:00:00",
                                                        preset=off).hits}
    kept = {h.entry.text: h.score for h in mem.search("what did I do last weekend", k=8, now="2026-11-20T09:00:00").hits}
    assert kept["User: haha yes"] < scores["User: haha yes"]


def test_the_agents_own_turns_are_kept_but_restate_no_facts(mem: Memory) -> None:
    """Facts restated from the assistant's turns ("The assistant said: Ouch, take care.",
    "好的，需要我帮你记住什么吗？") were in the top 3 of 10 of an outside check's 43 questions, and
    an answer quoting memory came back as a fact of its own, above the original."""
    mem.add_conversation([("user", "I sprained my ankle playing football yesterday."),
                          ("assistant", "Ouch, take care. Your physiotherapist Dr. Weber is open on Mondays."),
                          ("user", "Thanks, I will call Dr. Weber tomorrow."),
                          ("助手", "好的，需要我帮你记住什么吗？我可以提醒你明天下午三点给医生打电话。")],
                         session_id="ankle", session_time="2025-03-04T10:00:00")
    facts = [e for e in mem.list(filters={"kind": "fact"}).results]
    assert facts and all("assistant" not in f.text.lower() and "助手" not in f.text for f in facts)
    assert any("sprained" in f.text for f in facts)
    turns = [e.text for e in mem.list(filters={"kind": "turn"}).results]
    assert len(turns) == 4  # every turn is stored, the agent's too
    hit = mem.search("who is my physiotherapist?", k=3).hits[0]
    assert hit.entry.kind == "turn" and "Dr. Weber is open on Mondays" in hit.text
    assert mem.add_turn("Assistant", "Congratulations on the new job at Shopify!", session_id="ankle").facts == 0


def test_a_turn_object_needs_only_who_said_what_and_keeps_its_session(mem: Memory) -> None:
    """`Turn(speaker, text)` required a turn_id and a session_id, and add_conversation replaced a
    Turn's own session_id with the call's (or a generated one) without a word."""
    from engramdb.conversation import Turn

    assert mem.add_conversation([Turn("Ann", "I moved to Porto in May."), Turn("Ben", "Nice!")],
                                session_id="s1").turns == 2
    assert mem.add_conversation([Turn("Ann", "I adopted a cat named Miso.", session_id="chat9"),
                                 Turn("Ben", "Lovely!", session_id="chat9")]).turns == 2
    turns = {(e.source.session_id, e.source.turn_id) for e in mem.list(filters={"kind": "turn"}).results}
    assert turns == {("s1", "s1:1"), ("s1", "s1:2"), ("chat9", "chat9:1"), ("chat9", "chat9:2")}
    with pytest.raises(InputError, match=r"turn 1: its session_id 'b' is not turn 0's \('a'\)"):
        mem.add_conversation([Turn("A", "one", session_id="a"), Turn("B", "two", session_id="b")])
    with pytest.raises(InputError, match=r"turn 0: its session_id 'a' is not the call's \('z'\)"):
        mem.add_conversation([Turn("A", "one", session_id="a")], session_id="z")
    assert mem.count(filters={"session_id": "a"}) == 0
