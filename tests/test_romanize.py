"""Names across scripts: a Chinese person named in characters (王芳, 老王) or in pinyin (Wang
Fang, Lao Wang) is found whichever script the question uses (text/romanize.py, the name keys
the writer indexes, the lexical and symbolic channels that look them up)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from engramdb import Memory
from engramdb.text.bilingual import translate_query
from engramdb.text.romanize import (chinese_names, latin_names, name_key, name_keys, person_keys, query_keys,
                                    query_names, romanize)
from engramdb.writer import entry_terms
from engramdb.model import Entry

from test_linear_input import MAX_GROWTH, _growth, _repeat


@pytest.mark.parametrize(("name", "key", "forms"), [
    ("王芳", "wangfang", ("wang fang",)),
    ("张伟明", "zhangweiming", ("zhang weiming", "zhang wei ming")),
    ("欧阳娜娜", "ouyangnana", ("ouyang nana", "ouyang na na")),
    ("单丽", "shanli", ("shan li",)),  # 单 "single" is dan; the surname is shan
    ("曾晓红", "zengxiaohong", ("zeng xiaohong", "zeng xiao hong")),
    ("吕明", "luming", ("lu ming",)),  # ü written u, as English text writes it
    ("老王", "laowang", ("lao wang",)),
    ("小林", "xiaolin", ("xiao lin",)),
])
def test_a_chinese_name_is_read_in_pinyin_surname_first(name: str, key: str, forms: tuple[str, ...]) -> None:
    assert name_key(name) == key
    assert romanize(name) == forms


def test_no_surname_no_name() -> None:
    assert name_key("服务器") is None and romanize("服务器") == () and name_key("王") is None


@pytest.mark.parametrize(("text", "names"), [
    ("我和王芳昨天在北京吃了烤鸭，张伟也来了", ["王芳", "张伟"]),
    ("欧阳娜娜的生日是五月三号", ["欧阳娜娜"]),  # jieba cuts 欧阳 | 娜娜
    ("梁志强下个月退休，大家凑钱", ["梁志强"]),  # 梁 | 志强
    ("周五晚上和老王在川菜馆吃饭", ["老王"]),
    # ordinary words that open with a surname's character are not names
    ("王国的历史很长，我很高兴", []), ("小麦价格涨了", []), ("黎明时分出发", []), ("曾任教于北大", []),
    ("The server is down", []),
    # 小 / 老 before a given name's character, as friends call each other; not 小时, 小心, 老师, nor
    # a 小 and a word that meet across a word boundary (大小 | 明显, 从小 | 美术, 很小 | 明天)
    ("我和小美去看电影", ["小美"]), ("小明昨天生病了", ["小明"]), ("小芳和老王一起吃饭", ["小芳", "老王"]),
    ("大小明显不同", []), ("从小美术就很好", []), ("他的个子很小明天再说", []), ("我们小时候住在这里", []),
    ("老师说小心", []), ("小白兔很可爱", []),
])
def test_chinese_names_in_a_text(text: str, names: list[str]) -> None:
    assert chinese_names(text) == names


@pytest.mark.parametrize(("text", "name"), [
    ("孙丽华换手机号了", "孙丽华"), ("王芳教我做饭", "王芳"), ("孙丽开了一家店", "孙丽"), ("陈静带孩子去公园", "陈静"),
])
def test_a_name_jieba_glued_to_the_next_word_is_found_too(text: str, name: str) -> None:
    assert name in chinese_names(text)


@pytest.mark.parametrize(("text", "name"), [("诸葛明组织羽毛球", "诸葛明"), ("欧阳峰是谁？", "欧阳峰"), ("司马光砸缸", "司马光")])
def test_a_compound_surname_takes_whatever_given_name_follows(text: str, name: str) -> None:
    assert name in chinese_names(text)


@pytest.mark.parametrize("spelt", ["Lü Ming", "Lyu Ming", "Lv Ming", "Lǚ Míng", "Lu Ming"])
def test_u_umlaut_and_tone_marks_are_read_as_english_text_writes_them(spelt: str) -> None:
    assert [key for key, _, _ in latin_names(spelt)] == ["luming"] and name_key("吕明") == "luming"
    assert {key for key, _, _ in latin_names("Wáng Fāng")} == {"wangfang", "fangwang"}


def test_a_name_does_not_run_on_over_punctuation() -> None:
    keys = {key for key, _, _ in latin_names("Wang Fang, Li Na and Chen Jing")}
    assert {"wangfang", "lina", "chenjing"} <= keys and not any(k.startswith("wangfangli") for k in keys)
    assert [key for key, _, caps in latin_names("Zhang Wei-ming") if caps] == ["zhangweiming"]


@pytest.mark.parametrize(("text", "keys"), [
    ("What did Wang Fang recommend?", {"wangfang", "fangwang"}),  # either order: Western or Chinese
    ("When is Weiming Zhang's birthday", {"zhangweiming"}),
    ("ask zhang wei ming", {"zhangweiming"}),
    ("Lao Wang borrowed 2000", {"laowang"}),
    ("the man in the van", set()),
])
def test_names_spelt_in_latin_letters(text: str, keys: set[str]) -> None:
    found = {key for key, _, _ in latin_names(text)}
    assert keys <= found if keys else not found


def test_an_entry_is_indexed_by_the_keys_of_its_names_marked_with_their_script() -> None:
    assert name_keys("和王芳吃了牛肉面") == ["han:wangfang"]
    assert set(name_keys("Fang Wang from accounting approved it")) == {"pinyin:fangwang", "pinyin:wangfang"}
    # a lowercase run of syllables in a text is too often words to be a name
    assert name_keys("a long song for the fans") == []
    terms = entry_terms(Entry(text="和王芳吃了牛肉面", persons=["张伟", "Li Na"]))
    assert "han:wangfang" in terms.body and {"han:zhangwei", "pinyin:lina"} <= set(terms.tags)


def test_a_question_looks_each_person_up_in_either_script() -> None:
    """Every key names the person for the names channel; BM25 looks up a name given in pinyin
    by its key in characters (a Chinese name reaches English entries through the dictionary)."""
    assert query_names("王芳的生日是哪天") == [(("han:wangfang", "pinyin:wangfang"), ())]
    assert query_names("what did wang fang say") == [
        (("han:wangfang", "han:fangwang", "pinyin:wangfang", "pinyin:fangwang"), ("han:wangfang", "han:fangwang"))]
    assert query_keys("Wang Fang 和 李娜") == ["lina", "wangfang", "fangwang"]
    assert person_keys("王芳") == person_keys("Wang Fang") == ["wangfang"] and person_keys("Tom") == []


def test_the_dictionary_does_not_translate_a_name_as_words() -> None:
    # 王芳 is "king" + "fragrant" to CC-CEDICT; Lao Wang would be Laos (老挝)
    assert {"wang", "fang"} <= set(translate_query("王芳推荐了什么")) and "king" not in translate_query("王芳推荐了什么")
    assert "老挝" not in translate_query("What did Lao Wang say?")
    assert "plum" in translate_query("李子很甜")  # a name that is also a word keeps its translation


# (key, memory): each answer has a distractor in the question's script on the same subject about
# someone else, so only the name tells them apart
NOTES = [
    ("debt", "老王借了我两千块，说月底还。"),
    ("debt-other", "I lent Lao Li 500 yuan for the taxi."),
    ("allergy", "刘洋对花生过敏，聚餐时别点宫保鸡丁。"),
    ("allergy-other", "Huang Lei is allergic to shellfish, so no shrimp at the dinner."),
    ("birthday", "陈静的生日是九月十八号，她喜欢向日葵。"),
    ("birthday-other", "Zhao Min's birthday is on 2 October; she likes lilies."),
    ("car", "赵磊的车是白色的特斯拉，停在B2层。"),
    ("car-other", "Sun Tao drives a grey Volkswagen and parks on level 1."),
    ("flight", "Wang Jun's flight to Chengdu leaves at 7am on Friday."),
    ("flight-other", "李强的航班周六下午从上海起飞。"),
    ("camera", "Li Xiaoyan lent me her camera for the trip to Yunnan."),
    ("camera-other", "周敏把她的无人机借给我了。"),
    ("owes", "Lao Zhou owes me 300 yuan for the concert tickets."),
    ("owes-other", "我欠老李两百块饭钱。"),
    ("twins", "Chen Hao's wife is expecting twins in March."),
    ("twins-other", "杨帆的太太四月生了个女儿。"),
]
#: What a small personal store holds besides: no name, no bookshop, flight or debt. In a store of
#: a handful of notes the lexical list is two rows long, and its z-scores set the second of two
#: matches level with no match at all (docs/BENCHMARKS.md, "Names across scripts").
FILLER = [
    "周末去爬了黄山，天气很好，云海很壮观。", "Renewed the car insurance; the premium went up by 8 percent.",
    "公司年会定在一月十五号，在滨江酒店。", "The boiler service is booked for Thursday between 8 and 12.",
    "买了一台新的空气净化器，放在卧室。", "Started reading a novel about the Silk Road; slow but good.",
    "楼下新开了一家面包店，可颂很好吃。", "Need to renew my passport before the summer trip.",
    "孩子的家长会在下周二晚上七点。", "The dentist moved my check-up to the 14th at 9am.",
    "阳台的绿萝该换盆了。", "Backed up the photos from my phone to the external drive.",
    "电费这个月比上个月高了不少。", "Ordered a standing desk; delivery in two weeks.",
    "健身房的年卡下个月到期。", "The wifi password for the cabin is on the fridge.",
]


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory):
    with Memory(tmp_path_factory.mktemp("names") / "n.db") as mem:
        ids = mem.add([text for _, text in NOTES] + FILLER)
        yield mem, dict(zip([key for key, _ in NOTES], ids))


@pytest.mark.parametrize(("question", "answer"), [
    ("How much money did Lao Wang borrow from me?", "debt"),
    ("What is Liu Yang allergic to?", "allergy"),
    ("When is Chen Jing's birthday?", "birthday"),
    ("what car does zhao lei drive", "car"),  # typed in lowercase
    ("王军的航班几点起飞？", "flight"),
    ("李晓燕借给我什么了？", "camera"),
    ("老周欠我多少钱？", "owes"),
    ("陈浩的太太什么时候生？", "twins"),
])
def test_a_question_finds_the_person_named_in_the_other_script(notes, question: str, answer: str) -> None:
    """Only the name tells the answer from its distractor; without the name keys the distractor
    or another note ranked first on each of these."""
    mem, ids = notes
    result = mem.search(question, k=3, explain=True)
    assert result.hits[0].id == ids[answer]
    assert "names" in result.hits[0].channels  # the name is evidence of its own
    (recall,) = [stage for stage in result.trace["stages"] if stage["stage"] == "recall"]
    assert recall["channels"]["names"]["keys"]  # and the trace says what it looked up


#: The same people in notes of both scripts, on different subjects, and other people on the same
#: subjects (from an outside-in round, 2026-12-07).
SAME_PERSON = [
    '王芳在招商银行做客户经理，已经干了六年。',
    "Wang Fang's birthday is October 8; she likes dark chocolate.",
    '王芳的儿子叫乐乐，今年上小学二年级。',
    'Fang Wang is planning a trip to Iceland in February to see the northern lights.',
    '王芳不吃香菜，也不能吃辣。',
    'Wang Fang drives a grey Volkswagen Tiguan.',
    'Zhang Weiming works as a product manager at Tencent.',
    '张伟明的生日是五月二十日，他喜欢喝单一麦芽威士忌。',
    'Weiming Zhang has twin daughters, both in kindergarten.',
    '张伟明打算七月去新疆自驾游。',
    'Zhang Weiming has been vegetarian since last year.',
    '张伟明有高血压，医生让他少吃盐。',
    '欧阳娜娜在上海交响乐团拉大提琴。',
    "Ouyang Nana's birthday is June 15.",
    '欧阳娜娜养了两只布偶猫。',
    'Nana Ouyang is going to Vienna in March for a music festival.',
    '老王是我们楼的楼长，停车位的事情找他。',
    "Lao Wang's grandson is starting university in Wuhan this fall.",
    '老王每天早上在小区门口打太极拳。',
    'Lao Wang lent us his ladder to fix the balcony light.',
    "Xiao Lin is our front-end developer; she's fixing the login bug this sprint.",
    '小林的生日是十二月二十四号，平安夜。',
    'Xiao Lin is going to Chiang Mai for the Songkran festival in April.',
    '小林最近在学潜水，考了OW证。',
    'Li Hua works at ICBC as a loan officer.',
    '陈晨的生日是九月三号，她喜欢巧克力。',
    "Tom's son Leo is in second grade this year.",
    '刘思思计划明年二月去冰岛看极光。',
    "Peter doesn't eat cilantro or anything spicy.",
    '我老公开一辆白色的丰田凯美瑞。',
    '李明在腾讯做产品经理。',
]


def test_a_person_named_in_both_scripts_is_found_by_the_subject_asked_about(tmp_path: Path) -> None:
    """Notes about 王芳, 张伟明 and 老王 in both scripts: a name is evidence for every note that
    names the person, in whichever script, so the subject decides; a name counted only across
    scripts sent these Chinese questions to English notes about the same person (ranks 4, 4, 3)."""
    with Memory(tmp_path / "same.db") as mem:
        ids = mem.add(SAME_PERSON)
        assert mem.search("张伟明的生日是哪天？", k=1).hits[0].id == ids[7]
        assert mem.search("王芳是做什么工作的？", k=1).hits[0].id == ids[0]
        assert mem.search("老王负责什么？", k=1).hits[0].id == ids[16]


def test_presets_without_the_names_channel_do_not_look_names_up(notes) -> None:
    mem, ids = notes
    result = mem.search("What is Liu Yang allergic to?", k=3, preset="molore", explain=True)
    (recall,) = [stage for stage in result.trace["stages"] if stage["stage"] == "recall"]
    assert "names" not in recall["channels"] and all("names" not in hit.channels for hit in result.hits)


def test_a_person_tag_is_found_by_the_name_in_the_other_script(tmp_path: Path) -> None:
    """A turn tagged with its speaker 张伟明 does not name him in its text: the gazetteer knows
    the tag's name by its key, so the symbolic channel finds the turn from "Zhang Weiming", and
    the tag's key is indexed with the tags, so the names channel does too."""
    with Memory(tmp_path / "t.db") as mem:
        tagged, *_ = mem.add([{"text": "我下周三要去医院复查，会议改到周四。", "persons": ["张伟明"]},
                              "李强下周三要去北京出差，会议取消。", *FILLER])
        result = mem.search("What did Zhang Weiming say about the meeting?", k=1, explain=True)
        assert result.hits[0].id == tagged and {"symbolic", "names"} <= result.hits[0].channels.keys()
        assert mem.store.match_names(None, "张伟明说了什么") == [("person", "张伟明")]
        assert mem.store.match_names(None, "what did zhang weiming say") == [("person", "张伟明")]


def test_both_backends_find_names_across_scripts_alike(store_target: str) -> None:
    with Memory(store_target) as mem:
        ids = dict(zip([key for key, _ in NOTES], mem.add([text for _, text in NOTES] + FILLER)))
        assert mem.search("How much money did Lao Wang borrow from me?", k=1).hits[0].id == ids["debt"]
        assert mem.search("老周欠我多少钱？", k=1).hits[0].id == ids["owes"]


@pytest.mark.parametrize("make", [_repeat("Wang Fang "), _repeat("wangfangzhangweiming"), _repeat("王芳张伟老王"),
                                  _repeat("zhang wei ming li ")], ids=["names", "one-word", "zh", "syllables"])
def test_names_are_read_in_linear_time(make: Callable[[int], str]) -> None:
    assert _growth(query_names, make, 4000, repeats=3) < MAX_GROWTH


def test_a_names_key_adds_nothing_to_the_length_bm25_normalises_by() -> None:
    """A name's key stands for words the entry already counts: indexing it must not move the
    BM25 score of a question that does not look it up (channels.row_length)."""
    from collections import Counter

    from engramdb.store.channels import row_length, term_frequencies

    plain = term_frequencies(["王芳", "推荐", "书店"], ["张伟"])
    keyed = term_frequencies(["王芳", "推荐", "书店", "han:wangfang"], ["张伟", "han:zhangwei"])
    assert row_length(keyed) == row_length(plain) == 3.6 and row_length(Counter()) == 0.0


def test_both_backends_score_a_question_without_names_alike_with_or_without_keys(store_target: str) -> None:
    """Two entries of as many words, one naming 王芳 (so also indexed by her key) and one a friend
    (朋友), give a question that names nobody the same BM25 score."""
    with Memory(store_target) as mem:
        named, plain = mem.add(["王芳推荐了一家书店，就在鼓楼附近。", "朋友推荐了一家书店，就在鼓楼附近。"])
        rows = {r.id: r for r in mem.search("推荐的书店在哪里", k=2, preset="lexical").hits}
        assert rows[named].channels["lexical"].score == pytest.approx(rows[plain].channels["lexical"].score)


def test_the_names_channel_is_a_bonus_not_a_view_to_average_over(notes) -> None:
    """Its weight stays out of the calibrated mean's divisor: counted in, it pulled every
    candidate's mean down alike and the right note read p ~0.1 (docs/BENCHMARKS.md)."""
    mem, ids = notes
    result = mem.search("How much money did Lao Wang borrow from me?", k=3, explain=True)
    (fuse,) = [stage for stage in result.trace["stages"] if stage["stage"] == "fuse"]
    assert "names" not in fuse["counted"] and "names" in fuse["weights"]
    assert result.hits[0].id == ids["debt"] and result.hits[0].score > 0.5 > result.hits[1].score


def test_a_question_of_many_names_is_translated_in_linear_time() -> None:
    """Thousands of distinct Chinese names in one dialogue context: each word's name check is a
    set probe, not a scan of the names found."""
    surnames, given = "王李张刘陈杨黄赵周吴", "伟芳娜敏静丽强磊军洋勇艳杰娟涛明超秀霞平刚"

    def many_names(n: int) -> str:
        names = [s + g1 + g2 for s in surnames for g1 in given for g2 in given]
        return "，".join(names[i % len(names)] + "说" for i in range(n // 5))[:n]

    assert _growth(translate_query, many_names, 2000, repeats=3) < MAX_GROWTH


def _written_before_names(mem: Memory, texts: list[str]) -> None:
    """Entries as a version without name keys wrote them: the same upsert, terms without keys."""
    from engramdb.store.base import EntryTerms
    from engramdb.text.tokenize import analyze

    ids = mem.add(texts)
    entries = mem.get(ids)
    vectors = mem.store.stored_vectors("default", {e.id: e.text for e in entries})
    import numpy as np

    mem.store.upsert("default", entries, np.stack([vectors[e.id] for e in entries]),
                     [EntryTerms(body=tuple(analyze(e.text)), tags=()) for e in entries],
                     replace=[e.id for e in entries], log=False)


def test_reindex_gives_entries_written_before_their_name_keys(store_target: str) -> None:
    """`Memory.reindex` (engram reindex): the index terms written again, on both backends;
    vectors, history and the entries themselves unchanged."""
    with Memory(store_target) as mem:
        _written_before_names(mem, [text for _, text in NOTES] + FILLER)
        question = "How much money did Lao Wang borrow from me?"
        before = mem.search(question, k=3, explain=True)
        assert all("names" not in hit.channels for hit in before.hits)
        listed = [(e.id, e.text, e.created_at) for e in mem.list(limit=100)]
        events = {e.id: len(mem.history(e.id)) for e in mem.list(limit=100)}
        report = mem.reindex()
        assert report == {"entries": len(listed), "reindexed": len(listed), "skipped": 0, "namespaces": ["default"]}
        after = mem.search(question, k=3, explain=True)
        assert after.hits[0].text == NOTES[0][1] and "names" in after.hits[0].channels
        assert sorted((e.id, e.text, e.created_at) for e in mem.list(limit=100)) == sorted(listed)
        assert {e.id: len(mem.history(e.id)) for e in mem.list(limit=100)} == events
        assert mem.reindex()["reindexed"] == len(listed)  # idempotent


def test_engram_reindex_reports_what_it_did(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from engramdb.cli import main

    db = tmp_path / "cli.db"
    with Memory(db) as mem:
        _written_before_names(mem, [NOTES[0][1], NOTES[1][1]])
        mem.add(["Bob keeps his own notes."], namespace="bob")
    runner = CliRunner()
    out = runner.invoke(main, ["--db", str(db), "reindex", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output) == {"entries": 2, "reindexed": 2, "skipped": 0, "namespaces": ["default"]}
    out = runner.invoke(main, ["--db", str(db), "reindex", "--all-namespaces", "-q"])
    assert out.exit_code == 0 and out.output.startswith("reindexed 3 of 3 entries in 2 namespaces"), out.output
    missing = runner.invoke(main, ["--db", str(tmp_path / "nowhere.db"), "reindex"])
    assert missing.exit_code != 0 and "nowhere.db" in missing.output


def test_a_nickname_of_a_given_name_is_found_across_scripts(tmp_path: Path) -> None:
    """小美 and 小明 were no names (only 小 before a surname was: 小李), so "Xiao Mei" and "Xiao
    Ming" found the English notes about Xiao Chen and Xiao Ming first, and 小明 the Chinese ones."""
    with Memory(tmp_path / "nick.db") as mem:
        ids = mem.add(["小美上周开始学钢琴，每周二上课。", "Xiao Chen started guitar lessons last month.",
                       "小明的生日是十月三号。", "Jenny's birthday is on 3 May.", "Xiao Ming moved to Chengdu for a new job.",
                       "小李在成都找到了新工作。"])
        assert mem.search("What instrument is Xiao Mei learning?", k=1).hits[0].id == ids[0]
        assert mem.search("When is Xiao Ming's birthday?", k=1).hits[0].id == ids[2]
        assert mem.search("小明搬去哪里了？", k=1).hits[0].id == ids[4]


def test_the_written_out_surname_spellings_are_what_the_readings_give() -> None:
    """LATIN_SURNAMES is written out (deriving it imported pypinyin on every process's first
    search); it must stay what `_readings` derives from SURNAMES."""
    from engramdb.text.romanize import LATIN_SURNAMES, _derived_latin_surnames

    assert LATIN_SURNAMES == _derived_latin_surnames()
    assert {"wang", "zhang", "ouyang", "zhuge", "lu"} <= LATIN_SURNAMES
