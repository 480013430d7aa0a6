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
    "Thanks, got it" would be); what it acknowledges is a fact. What the agent says back (a
    remembered birthday) is its own turn, stored and found, but restates no fact."""
    with Memory(tmp_path / "zh.db", embedder="minilm") as mem:
        mem.add_conversation([("小王", "我下周三要去上海出差，住在外滩附近。"),
                              ("Assistant", "好的，我记住了。没问题，我会记下来的！"),
                              ("小王", "哈哈，太好了，谢谢！"),
                              ("Assistant", "我会记住你的生日是五月三日。")],
                             session_id="zh", session_time="2024-12-02T09:30:00")
        facts = [e.text for e in mem.list(filters={"kind": "fact"}, limit=100)]
        assert any("上海出差" in f for f in facts), facts
        assert not any("五月三日" in f or "5月3日" in f for f in facts), facts
        assert "生日是五月三日" in mem.search("我的生日是哪天？", k=3).hits[0].text
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
        mem.add_conversation([{"role": "user", "content": "Hi! I moved to Paris last month."},
                              {"role": "assistant", "content": "Nice to meet you! How do you like Paris?"},
                              {"role": "user", "content": "I love it, but my apartment is tiny."},
                              {"role": "user", "content": "我下周要去北京出差。"}],
                             session_id="c1", session_time="2024-05-02T10:00:00")
        facts = sorted(e.text for e in mem.list(filters={"kind": "fact"}, limit=20))
        assert "The user moved to Paris in April 2024." in facts, facts
        assert "The user loves it, but the user's apartment is tiny." in facts, facts
        assert any(f.startswith("用户") and "北京出差" in f and "说：" not in f for f in facts), facts
        assert not any("meet" in f for f in facts), facts
        assert all("user" not in e.keywords and "用户" not in e.keywords
                   for e in mem.list(filters={"kind": "fact"}, limit=20))


def test_a_role_that_says_its_name_is_named_in_its_facts(tmp_path: Path) -> None:
    """A chat export's user who says "My name is Carla" (我叫陈静) is Carla in its facts: "The user
    adopted a cat" shared no word or name with "What pet did Carla get?" (an outside check). "Call
    me back" and "I'm British" name no one, and a role giving two names keeps neither."""
    from engramdb.conversation.extract import introductions
    from engramdb.conversation.model import Conversation, Turn

    with Memory(tmp_path / "named.db", embedder="minilm") as mem:
        mem.add_conversation([{"role": "user", "content": "Hi! My name is Carla and my dentist is Dr. Weber."},
                              {"role": "assistant", "content": "Nice to meet you, Carla!"},
                              {"role": "user", "content": "I adopted a cat last Saturday."}],
                             session_id="c1", session_time="2024-04-01T10:00:00")
        mem.add_conversation([{"role": "user", "content": "我叫陈静，在杭州工作。"},
                              {"role": "user", "content": "我上周养了一只橘猫。"}],
                             session_id="c2", session_time="2024-04-01T10:00:00")
        facts = {e.text: e for e in mem.list(filters={"kind": "fact"}, limit=20)}
        assert "Carla adopted a cat on 30 March 2024." in facts and "Carla" in facts[
            "Carla adopted a cat on 30 March 2024."].persons, sorted(facts)
        assert any(f.startswith("陈静") and "橘猫" in f for f in facts), sorted(facts)
        assert mem.search("What pet did Carla get?", k=1).hits[0].text == "Carla adopted a cat on 30 March 2024."

    def roles(*texts: str) -> dict[str, str]:
        return introductions(Conversation(session_id="s", turns=[Turn(speaker="user", text=t) for t in texts]))

    assert roles("Call me back later, I'm British.") == {}
    assert roles("My name is Carla.", "Actually, call me Carly.") == {}  # two names: neither
    assert roles("You can call me Mia Wong!") == {"user": "Mia Wong"}


@pytest.mark.parametrize(("text", "persons"), [
    ("我和老王周末去跑马拉松了，还吃了小龙虾", ["老王"]),  # jieba tags 马拉松 and 小龙虾 nr
    ("小李说他买了一个麦克风", ["小李"]),  # 麦克风 too; 小李 is no jieba name, but a friend's
    ("王芳教我做饭", ["王芳"]),  # not 王芳教: jieba's HMM glued the verb on
    ("昨天和爱丽丝去看了成龙的电影", ["爱丽丝", "成龙"]),  # a transliteration; CC-CEDICT's Jackie Chan
])
def test_chinese_persons_are_names_not_common_words(text: str, persons: list[str]) -> None:
    from engramdb.conversation.extract import _names_zh

    assert _names_zh(text, set())[0] == persons


def test_a_word_cedict_knows_only_as_a_common_word_is_no_name() -> None:
    from engramdb.text.romanize import chinese_names, common_words, is_common_word

    assert {"马拉松", "小龙虾", "麦克风"} <= common_words()
    assert is_common_word("马拉松") and not is_common_word("王芳") and not is_common_word("成龙")
    assert chinese_names("张伟明周末跑了马拉松，王芳去了") == ["张伟明", "王芳"]


@pytest.mark.parametrize(("turn", "fact_says", "not_said"), [
    ("我下周去上海出差，你知道那边天气怎么样吗？", "上海出差", "天气"),
    ("I'm moving to Berlin next month, any tips on neighborhoods?", "moving to Berlin", "tips"),
    ("I adopted a puppy named Max, do you want to see a photo?", "puppy named Max", "photo"),
])
def test_news_a_question_opens_with_is_a_fact(tmp_path: Path, turn: str, fact_says: str, not_said: str) -> None:
    """A turn that ends in a question kept no fact at all, though what it opens with is news."""
    with Memory(tmp_path / "q.db", embedder="minilm") as mem:
        mem.add_conversation([("Lin", turn), ("Assistant", "OK.")], session_id="s",
                             session_time="2024-12-02T09:30:00")
        facts = [e.text for e in mem.list(filters={"kind": "fact"}, limit=100)]
        assert any(fact_says in f for f in facts), facts
        assert not any(not_said in f for f in facts), facts


@pytest.mark.parametrize("turn", ["What did you cook, was it good?", "你去哪儿了，怎么没来？",
                                  "So, what's next for your music?", "Hey, how are you?"])
def test_a_question_that_only_asks_is_no_fact(tmp_path: Path, turn: str) -> None:
    with Memory(tmp_path / "q.db", embedder="minilm") as mem:
        mem.add_conversation([("Lin", turn), ("Assistant", "OK.")], session_id="s",
                             session_time="2024-12-02T09:30:00")
        assert [e.text for e in mem.list(filters={"kind": "fact"}, limit=100)] == []


def test_common_words_load_first_in_a_fresh_process() -> None:
    """common_words() reads jieba's tags itself: called before anything else loaded them, a
    version that held the module's lock meanwhile deadlocked (the timeout only stops a hung run)."""
    import subprocess
    import sys

    code = "from engramdb.text.romanize import common_words; print(len(common_words()) > 1000)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.stdout.strip() == "True", done.stderr[-2000:]
