"""The offline extractor's names: what a fact is tagged with is what a question matches
symbolically, so a capitalised function word must not become an entity."""

from __future__ import annotations

from pathlib import Path

import pytest

from engramdb import Memory
from engramdb.conversation.extract import _names, split_sentences


def test_a_title_does_not_end_a_sentence() -> None:
    assert split_sentences("My teacher is Ms. Chen. She is great. Dr. Zhou agreed.") == [
        "My teacher is Ms. Chen.", "She is great.", "Dr. Zhou agreed."]


@pytest.mark.parametrize(("text", "entities"), [
    ('Asked "Did they fill it?", Alice said: "Not yet, I go back in January."', []),  # quoted openers
    ("Not yet.", []),
    ("Our Q1 numbers beat the plan.", []),  # a letter before a digit
    ("Did Bob call NASA?", ["Bob", "NASA"]),  # the word after a stripped opener is a name
    ("I met Ms. Chen at the Eiffel Tower.", ["Ms. Chen", "Eiffel Tower"]),
])
def test_function_words_letters_and_titles_are_not_entities(text: str, entities: list[str]) -> None:
    assert _names(text, {"Alice"})[1] == entities


def test_facts_from_a_chat_are_not_tagged_with_its_function_words(tmp_path: Path) -> None:
    with Memory(tmp_path / "facts.db", embedder="minilm") as mem:
        mem.add_conversation([("Alice", "I had a dentist appointment, they found a small cavity."),
                              ("Assistant", "Sorry to hear that. Did they fill it?"),
                              ("Alice", "Not yet, I go back in January. My teacher is Ms. Chen.")],
                             session_id="s1", session_time="2024-12-02T09:30:00")
        facts = [e for e in mem.list(filters={"kind": "fact"}, limit=100)]
        assert facts
        tags = {t.lower() for e in facts for t in e.entities}
        assert not tags & {"did", "not", "ms", "q"}, tags
        assert any(e.text.endswith("Ms. Chen.") for e in facts)  # not cut after "Ms."


def test_a_chinese_acknowledgement_is_not_a_fact(tmp_path: Path) -> None:
    """"好的，我记住了" says nothing to remember (jieba splits it into 好 / 记住, two terms, as
    "Thanks, got it" would be); what it acknowledges, and a remembered birthday, are facts."""
    with Memory(tmp_path / "zh.db", embedder="minilm") as mem:
        mem.add_conversation([("小王", "我下周三要去上海出差，住在外滩附近。"),
                              ("Assistant", "好的，我记住了。没问题，我会记下来的！"),
                              ("小王", "哈哈，太好了，谢谢！"),
                              ("Assistant", "我会记住你的生日是五月三日。")],
                             session_id="zh", session_time="2024-12-02T09:30:00")
        facts = [e.text for e in mem.list(filters={"kind": "fact"}, limit=100)]
        assert any("上海出差" in f for f in facts), facts
        assert any("五月三日" in f for f in facts), facts
        assert not any("记住了" in f or "记下来" in f or "太好了" in f for f in facts), facts


def test_a_facts_keywords_are_its_words_as_written(tmp_path: Path) -> None:
    """Keywords were the index's stems ("alic", "puppi", "decemb"): a `keyword:puppy` filter
    found nothing and the page showed stems. Now words, without the persons and calendar names."""
    with Memory(tmp_path / "kw.db", embedder="minilm") as mem:
        mem.add_conversation([("Alice", "I adopted a puppy from the shelter in December! His name is Max."),
                              ("小王", "我下周三要去上海出差，住在外滩附近。")],
                             session_id="kw", session_time="2024-12-02T09:30:00")
        facts = mem.list(filters={"kind": "fact"}, limit=10)
        english = next(f for f in facts if "puppy" in f.text)
        assert "puppy" in english.keywords and "shelter" in english.keywords, english.keywords
        assert not {"alice", "alic", "puppi", "december", "decemb"} & set(english.keywords)
        assert [f.id for f in mem.list(filters={"keyword": "puppy"})] == [english.id]
        chinese = next(f for f in facts if "上海" in f.text)
        assert {"上海", "出差"} <= set(chinese.keywords) and "周三" not in chinese.keywords, chinese.keywords


def test_a_chats_roles_are_not_names_in_its_facts(tmp_path: Path) -> None:
    """An OpenAI-style chat's speakers are roles: its facts say "the user" (用户 in Chinese),
    not "user's name is Carla"; "Nice to meet you" is small talk."""
    with Memory(tmp_path / "roles.db", embedder="minilm") as mem:
        mem.add_conversation([{"role": "user", "content": "Hi! My name is Carla and I moved to Paris last month."},
                              {"role": "assistant", "content": "Nice to meet you, Carla! How do you like Paris?"},
                              {"role": "user", "content": "I love it, but my apartment is tiny."},
                              {"role": "user", "content": "我下周要去北京出差。"}],
                             session_id="c1", session_time="2024-05-02T10:00:00")
        facts = sorted(e.text for e in mem.list(filters={"kind": "fact"}, limit=20))
        assert "The user's name is Carla and the user moved to Paris in April 2024." in facts, facts
        assert "The user loves it, but the user's apartment is tiny." in facts, facts
        assert any(f.startswith("用户") and "北京出差" in f and "说：" not in f for f in facts), facts
        assert not any("meet" in f for f in facts), facts
        assert all("user" not in e.keywords and "用户" not in e.keywords
                   for e in mem.list(filters={"kind": "fact"}, limit=20))
