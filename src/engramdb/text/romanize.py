"""Chinese personal names in Latin letters, so a name is found whichever script it is written in.

A bilingual user writes "Lunch with 王芳" in one note and asks "What did Wang Fang
recommend?" in English, or keeps "Wang Fang's birthday is 3 May" and asks 王芳生日是哪天.
BM25 shares no term across the scripts, CC-CEDICT translates words, not names (王芳's
characters become "king" and "fragrant"), and e5-small rarely ties the two. So:

* an entry is also indexed by the **key** of each Chinese name it holds: the name's toneless
  pinyin run together, surname first (王芳 -> ``wangfang``, 张伟明 -> ``zhangweiming``;
  :func:`name_key`), marked with the script it is written in (``han:wangfang`` for 王芳,
  ``pinyin:wangfang`` for "Wang Fang" written with capitals; :func:`name_keys`). One key per
  name, not its syllables: "song", "long" and "fan" are English words as well as syllables;
* a question is read for the names it holds: Chinese names, and two or three neighbouring
  words that spell a surname and a given name in pinyin, in either order ("Wang Fang", "Fang
  Wang", "Zhang Weiming", "Zhang Wei Ming"; "Lao Wang" for 老王; Lü, Lyu, Wáng; not across
  punctuation; :func:`latin_names`), and looks each up by its keys in both scripts, so the
  name is evidence for every note about the person (:func:`query_names`); a name in pinyin
  also by its key in characters for BM25, which nothing else gives the entries written so;
* a Chinese question's names become their pinyin for the dictionary channel (:func:`romanize`:
  "wang fang", "zhang weiming"), the words an English entry writes them with.

What counts as a Chinese name: a token jieba segments (its HMM finds names its dictionary
lacks) of two to four characters that starts with a common Chinese surname and is either
unknown to jieba's dictionary or tagged there as a person's name (``nr``) and not a common word
(jieba tags many ordinary words ``nr``: 古老, 文明, 高峰; and 马拉松, 麦克风, which CC-CEDICT
knows only as common words: :func:`common_words`); a compound surname jieba cuts from
its given name (欧阳 | 娜娜) is joined back, and a two-character name jieba glued to a verb
(王芳教) is read as well; 老王 and 小林 (a surname after "old" or "little", as friends name
each other) are names too, and so are 小美 and 小明 (小 / 老 before a given name's character: a
jieba token whose first two characters are no dictionary word, so not 小时 or 老师; "Xiao Mei",
"Xiao Ming" in Latin letters when capitalised). A surname is read as a surname (单 shan, 曾 zeng); the given name
as pypinyin reads it, ü as u (吕 lu). A false name costs little: its key only matches a
question that names that very person.

``pypinyin`` (MIT) ships its reading tables in its wheel, so nothing is downloaded.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache
from typing import Iterable

from .tokenize import STOPWORDS_EN, get_jieba

__all__ = ["HAN", "PINYIN", "SURNAMES", "chinese_names", "common_words", "is_common_word", "is_name",
           "latin_name_keys", "latin_names", "name_key", "name_keys", "person_keys", "query_keys", "query_names",
           "romanize", "tag_keys"]

_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_LATIN_WORD = re.compile(r"[A-Za-z]+")
_BREAK = re.compile(r"[^\s'’-]")  # anything but spaces, apostrophes and hyphens between two words
#: ü as English text spells it: Lü, Lv (pinyin input), Lyu (passports) -> lu, as 吕 is read here.
_U_SPELLINGS = {"lv": "lu", "lyu": "lu", "nv": "nu", "nyu": "nu", "lve": "lue", "nve": "nue"}


def _latin(text: str) -> str:
    """Latin letters without their marks: Wáng Fāng -> Wang Fang, Lǚ -> Lu (ü is read as u)."""
    if text.isascii():
        return text
    import unicodedata

    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))

#: Two-character surnames and their readings.
_COMPOUND = {"欧阳": "ouyang", "司马": "sima", "诸葛": "zhuge", "上官": "shangguan", "司徒": "situ",
             "东方": "dongfang", "皇甫": "huangfu", "尉迟": "yuchi", "公孙": "gongsun", "慕容": "murong",
             "令狐": "linghu", "长孙": "zhangsun", "宇文": "yuwen", "夏侯": "xiahou", "端木": "duanmu",
             "万俟": "moqi", "独孤": "dugu", "南宫": "nangong", "西门": "ximen", "轩辕": "xuanyuan"}

#: Compound surnames that are no everyday word: whatever one or two characters follow are the
#: given name (诸葛 | 明, 欧阳 | 峰), where 东方 ("east") or 西门 ("west gate") need a name-like one.
_RARE_WORD_COMPOUND = frozenset(("欧阳", "诸葛", "司徒", "皇甫", "尉迟", "慕容", "令狐", "宇文", "夏侯", "端木", "万俟",
                                 "独孤", "轩辕"))

#: Common one-character surnames (together the great majority of Chinese people). Characters
#: that are mostly function words (和, 于, 时, 向, 应, 全, 常, 成) are left out: a token such as
#: 时说 that jieba's HMM glues together would read as a name far more often than it is one.
_SINGLE = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘蒋蔡余杜叶程苏魏吕"
    "丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付傅方白邹孟熊秦邱江尹薛闫阎段雷侯龙史陶黎贺顾毛郝龚邵万钱严"
    "覃武戴莫孔汤温康施文牛樊葛邢安齐易乔伍庞颜倪庄聂章鲁岳翟殷詹申欧耿关兰焦俞左柳甘祝包宁尚符舒阮"
    "柯纪梅童凌毕单季裴霍涂苗谷盛曲翁冉骆蓝游辛靳管柴蒙鲍华喻祁蒲房滕屈饶解牟艾尤穆农司卓古吉缪简"
    "项麦褚娄窦戚岑景党宫费卜冷晏席卫米柏宗瞿桂佟臧闵苟邬边卞姬仇栾隋刁荣巫寇桑郎甄丛仲虞敖巩佘池"
    "查麻苑迟邝朴洪阳鞠乐")

#: Surnames read otherwise than the word they also are (单 "single" dan, as a surname shan).
_SURNAME_READING = {"单": "shan", "曾": "zeng", "解": "xie", "仇": "qiu", "查": "zha", "区": "ou",
                    "乐": "yue", "覃": "qin", "盖": "ge", "缪": "miao", "朴": "piao", "柏": "bai",
                    "翟": "zhai", "尉": "yu", "万": "wan", "沈": "shen", "贾": "jia", "葛": "ge"}

#: 老王, 小林: a surname after 老 ("old") or 小 ("little") is how friends and colleagues are
#: named; jieba segments these unevenly (老王 | 来, 小王来), so they are found by pattern.
_NICKNAME_PREFIX = {"老": "lao", "小": "xiao"}
#: Words of that shape that are not names (wheat, millet, pony, calf, cub, ...).
_NOT_NICKNAMES = frozenset("小麦 小米 小康 小白 小龙 小马 小牛 小熊 小金 小叶 小石 小田 小谷 老牛 老黄 老白 老林 小姜".split())

#: Every surname this module reads a name by.
SURNAMES = _SINGLE | frozenset(_COMPOUND)

#: A dictionary word jieba tags ``nr`` counts as a name below this frequency (李娜 438, 李白 374;
#: 黎明 "dawn" 670, 古老 "ancient" 2695), or at any frequency with three characters or more.
_NAME_WORD_FREQUENCY = 500
#: Last characters that end a phrase, not a name (曾任教于, 万人, 李氏们).
_NOT_NAME_END = frozenset("于以人们等说的了着过和与及")

#: One-character verbs and particles jieba's HMM glues onto a two-character name (王芳教我,
#: 孙丽开了, 陈静带): such a token is read as the name too (the three characters stay a
#: candidate, 王芳开 as well as 王芳: a real three-character name ending so is rare).
_GLUED = frozenset("开教带修说去来给让把被在是跟找送帮请叫买吃喝看做写问要想会能都也就还又已才刚")

#: The syllables of Hanyu Pinyin, toneless, ü written u.
_SYLLABLES = frozenset((
    "a ai an ang ao ba bai ban bang bao bei ben beng bi bian biang biao bie bin bing bo bong bu "
    "ca cai can cang cao ce cei cen ceng cha chai chan chang chao che chen cheng chi chong chou "
    "chu chua chuai chuan chuang chui chun chuo ci cong cou cu cuan cui cun cuo da dai dan dang "
    "dao de dei den deng di dia dian diao die din ding diu dong dou du duan dui dun duo e ei en "
    "eng er fa fan fang fei fen feng fiao fo fou fu ga gai gan gang gao ge gei gen geng gong gou "
    "gu gua guai guan guang gui gun guo ha hai han hang hao he hei hen heng hong hou hu hua huai "
    "huan huang hui hun huo ji jia jian jiang jiao jie jin jing jiong jiu ju juan jue jun ka kai "
    "kan kang kao ke kei ken keng kong kou ku kua kuai kuan kuang kui kun kuo la lai lan lang lao "
    "le lei len leng li lia lian liang liao lie lin ling liu lo long lou lu luan lue lun luo ma "
    "mai man mang mao me mei men meng mi mian miao mie min ming miu mo mou mu na nai nan nang nao "
    "ne nei nen neng ni nia nian niang niao nie nin ning niu nong nou nu nuan nue nun nuo o ou pa "
    "pai pan pang pao pei pen peng pi pian piao pie pin ping po pou pu qi qia qian qiang qiao qie "
    "qin qing qiong qiu qu quan que qun ran rang rao re ren reng ri rong rou ru rua ruan rui run "
    "ruo sa sai san sang sao se sen seng sha shai shan shang shao she shei shen sheng shi shou "
    "shu shua shuai shuan shuang shui shun shuo si song sou su suan sui sun suo ta tai tan tang "
    "tao te tei teng ti tian tiao tie ting tong tou tu tuan tui tun tuo wa wai wan wang wei wen "
    "weng wo wong wu xi xia xian xiang xiao xie xin xing xiong xiu xu xuan xue xun ya yan yang "
    "yao ye yi yin ying yo yong you yu yuan yue yun za zai zan zang zao ze zei zen zeng zha zhai "
    "zhan zhang zhao zhe zhei zhen zheng zhi zhong zhou zhu zhua zhuai zhuan zhuang zhui zhun "
    "zhuo zi zong zou zu zuan zui zun zuo "
).split())

_lock = threading.Lock()
_tags: dict[str, str] | None = None


def _word_tags() -> dict[str, str]:
    """jieba's part-of-speech tag of each dictionary word (loaded once, ~0.3 s)."""
    global _tags
    if _tags is None:
        with _lock:
            if _tags is None:
                get_jieba()
                import jieba.posseg

                _tags = jieba.posseg.dt.word_tag_tab
    return _tags


@lru_cache(maxsize=1)
def common_words() -> frozenset[str]:
    """The words of three characters or more that jieba's dictionary tags as a person's name
    (``nr``) and CC-CEDICT knows only as common words, every reading lower-case: 马拉松
    (marathon), 小龙虾 (crayfish), 麦克风, 安全带 (~1,400). A name has a capitalised reading
    there (周恩来 Zhou1 En1 lai2) or no entry (张伟明). Two characters are left out: a
    surname and one character are as often a name as an obscure word (龙飞 "to promote", 高强
    "excellent"). Read from the installed CC-CEDICT once per process (~0.2 s), only when a text
    holds such a word; without the file, no word is vetoed."""
    from .bilingual import dictionary_path  # bilingual imports this module: read lazily

    tags = _word_tags()
    capitalised: dict[str, bool] = {}
    try:
        with dictionary_path().open(encoding="utf-8") as lines:
            for line in lines:  # "馬拉松 马拉松 [ma3 la1 song1] /marathon (loanword)/"
                head, _, rest = line.partition(" [")
                word = head[head.find(" ") + 1:]
                if rest and len(word) >= 3 and tags.get(word, "").startswith("nr"):
                    reading = rest[:rest.find("]")]
                    capitalised[word] = capitalised.get(word, False) or any(s[:1].isupper() for s in reading.split())
    except OSError:
        return frozenset()
    return frozenset(word for word, proper in capitalised.items() if not proper)


def is_common_word(token: str) -> bool:
    """Whether jieba's ``nr`` tag on `token` is wrong by CC-CEDICT (see :func:`common_words`;
    a shorter token never is, and never loads the list)."""
    return len(token) >= 3 and _word_tags().get(token, "").startswith("nr") and token in common_words()


def _nicknames(run: str) -> list[str]:
    """老王, 小林 ... in a run of Chinese characters."""
    return [run[i:i + 2] for i in range(len(run) - 1)
            if run[i] in _NICKNAME_PREFIX and run[i + 1] in _SINGLE and run[i:i + 2] not in _NOT_NICKNAMES]


def _given_nickname(token: str) -> str | None:
    """小美, 小明, 老K…: "little" or "old" before a given name's character, as friends call each
    other, read from a jieba token (小明, or 小美去 with a verb glued on) whose first two
    characters are no dictionary word (小时, 小心, 老师 are); a surname after 小 / 老 is read by
    `_nicknames` already."""
    if not 2 <= len(token) <= 3 or token[0] not in _NICKNAME_PREFIX or not _CJK_RUN.fullmatch(token):
        return None
    pair = token[:2]
    if (len(token) == 3 and token[2] not in _GLUED) or pair[1] in _SINGLE or pair in _NOT_NICKNAMES \
            or get_jieba().dt.FREQ.get(pair, 0):
        return None
    return pair


def _surname(token: str) -> str | None:
    if token[:2] in _COMPOUND and len(token) >= 3:
        return token[:2]
    return token[0] if token[0] in _SINGLE else None


def is_name(token: str) -> bool:
    """Whether a jieba token reads as a Chinese personal name (see the module's doc)."""
    if not 2 <= len(token) <= 4 or not _CJK_RUN.fullmatch(token) or _surname(token) is None:
        return False
    if token[-1] in _NOT_NAME_END or (token[0] == "曾" and len(token) == 2):  # 曾任, 曾经: "once"
        return False
    frequency = get_jieba().dt.FREQ.get(token, 0)
    if not frequency or (token[:2] in _RARE_WORD_COMPOUND and len(token) > 2):
        return True
    tag = _word_tags().get(token, "")
    if len(token) >= 3:
        return tag.startswith("nr") and token not in common_words()
    return tag.startswith("nr") and frequency < _NAME_WORD_FREQUENCY


def _given_name(token: str) -> bool:
    """Whether a token after a lone surname reads as its given name: not a dictionary word,
    or one jieba tags as (part of) a name (志强)."""
    if not _CJK_RUN.fullmatch(token) or token in "的了是在和与说":
        return False
    return not get_jieba().dt.FREQ.get(token, 0) or _word_tags().get(token, "").startswith("nr")


def _plain(syllable: str) -> str:
    """ü (pypinyin's v) as u: English text writes 吕 Lu and 女 nu."""
    return syllable.replace("ü", "u").replace("v", "u")


@lru_cache(maxsize=4096)
def _readings(name: str) -> tuple[str, tuple[str, ...]] | None:
    """(surname reading, given-name syllables) of a Chinese name, None for a non-name."""
    from pypinyin import Style, lazy_pinyin

    if len(name) == 2 and name[0] in _NICKNAME_PREFIX and (name[1] in _SINGLE or _given_nickname(name) == name):
        return _NICKNAME_PREFIX[name[0]], (_SURNAME_READING.get(name[1]) or _plain(lazy_pinyin(name[1], style=Style.NORMAL)[0]),)
    surname = _surname(name) if name and _CJK_RUN.fullmatch(name) else None
    if surname is None or len(name) == len(surname):
        return None

    family = _COMPOUND.get(surname) or _SURNAME_READING.get(surname) or _plain(lazy_pinyin(surname, style=Style.NORMAL)[0])
    given = tuple(_plain(s) for s in lazy_pinyin(name[len(surname):], style=Style.NORMAL))
    if not all(s.isascii() and s.isalpha() for s in (family, *given)):
        return None
    return family, given


def romanize(name: str) -> tuple[str, ...]:
    """The Latin spellings of a Chinese name, lower-case: the surname and the given name run
    together, then (a given name of two syllables or more) each syllable apart.
    ``romanize("张伟明") == ("zhang weiming", "zhang wei ming")``; ``()`` for a non-name."""
    readings = _readings(name)
    if readings is None:
        return ()
    family, given = readings
    forms = [f"{family} {''.join(given)}"]
    if len(given) > 1:
        forms.append(" ".join([family, *given]))
    return tuple(forms)


def name_key(name: str) -> str | None:
    """The index key of a Chinese name: its pinyin run together, surname first (``wangfang``)."""
    readings = _readings(name)
    return None if readings is None else readings[0] + "".join(readings[1])


def chinese_names(text: str) -> list[str]:
    """The Chinese personal names in `text` (jieba's accurate segmentation), each once, in order."""
    runs = _CJK_RUN.findall(text)
    if not runs:
        return []
    jieba = get_jieba()
    found: dict[str, None] = {}
    for run in runs:
        tokens = jieba.lcut(run)
        for i, token in enumerate(tokens):
            following = tokens[i + 1] if i + 1 < len(tokens) else ""
            if (1 <= len(following) <= 2 and _CJK_RUN.fullmatch(following) and following[-1] not in _NOT_NAME_END
                    and (token in _RARE_WORD_COMPOUND or (token in _COMPOUND or token in _SINGLE)
                         and _given_name(following))):
                token = token + following  # 欧阳 | 娜娜, 诸葛 | 明, 梁 | 志强: jieba cut the surname off
            elif len(token) == 4 and token[:2] not in _COMPOUND and is_name(token[:3]):
                found.setdefault(token[:3], None)  # 孙丽华换: jieba glued the next word on
            if len(token) >= 3 and token[2] in _GLUED and token[:2] not in _COMPOUND and is_name(token[:2]):
                found.setdefault(token[:2], None)  # 王芳教, 孙丽开: a two-character name and a verb
            if token not in found and is_name(token):
                found[token] = None
            if (nickname := _given_nickname(token)) is not None:
                found.setdefault(nickname, None)
        for nickname in _nicknames(run):
            found.setdefault(nickname, None)
    return list(found)


#: Index terms of a name written in characters (``han:wangfang``) and in pinyin
#: (``pinyin:wangfang``): the names channel looks up both, BM25 only a pinyin name's
#: ``han:`` key (see :func:`query_names`).
HAN, PINYIN = "han:", "pinyin:"


def name_keys(text: str) -> list[str]:
    """The index terms of the Chinese names `text` holds: ``han:`` + the key of each name in
    characters, ``pinyin:`` + the key of each it spells in Latin letters with capitals ("Fang
    Wang from accounting"; a lowercase run of syllables is too often words); each once."""
    keys = dict.fromkeys(HAN + k for k in (name_key(n) for n in chinese_names(text)) if k)
    keys.update(dict.fromkeys(PINYIN + key for key, _, _ in latin_names(text, capitalised_only=True)))
    return list(keys)


def tag_keys(persons: Iterable[str]) -> list[str]:
    """The index terms of an entry's person tags (a conversation turn's speaker): as
    :func:`name_keys`, marked with the script each tag is written in."""
    keys: dict[str, None] = {}
    for person in persons:
        mark = HAN if _CJK_RUN.search(person) else PINYIN
        keys.update(dict.fromkeys(mark + key for key in person_keys(person)))
    return list(keys)


def person_keys(name: str) -> list[str]:
    """The keys of a person's name as a tag holds it (王芳, "Wang Fang", "fang wang"), unmarked."""
    name = name.strip()
    if _CJK_RUN.fullmatch(name or "-"):
        key = name_key(name)
        return [key] if key else []
    joined = name.replace(" ", "").lower()
    return [joined] if joined in latin_name_keys(name) else []


def query_names(text: str) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """The Chinese people a question names, each as (every index term that names them, in
    either script; the terms BM25 should look up): 王芳 -> ((``han:wangfang``,
    ``pinyin:wangfang``), ()) — the dictionary channel spells a Chinese name for English
    entries already; "Wang Fang", capitals or not ("what car does zhao lei drive") ->
    ((``han:wangfang``, ``han:fangwang``, ``pinyin:…``), (``han:wangfang``, ``han:fangwang``)):
    either order may be the surname first, and nothing else finds the name in characters."""
    names: dict[tuple[str, ...], tuple[str, ...]] = {}
    for name in chinese_names(text):
        if key := name_key(name):
            names[(HAN + key, PINYIN + key)] = ()
    spans: dict[tuple[str, ...], list[str]] = {}
    for key, words, _ in latin_names(text):
        spans.setdefault(words, []).append(key)
    for keys in spans.values():
        han = tuple(HAN + key for key in keys)
        names[han + tuple(PINYIN + key for key in keys)] = han
    return list(names.items())


def query_keys(text: str) -> list[str]:
    """The unmarked keys of every Chinese person a question names, in either script (for names
    the store knows from tags: `store.gazetteer`)."""
    keys = dict.fromkeys(k for k in (name_key(n) for n in chinese_names(text)) if k)
    keys.update(dict.fromkeys(latin_name_keys(text)))
    return list(keys)


def _syllables(word: str, most: int = 3) -> bool:
    """Whether `word` spells one to `most` pinyin syllables (a given name run together)."""
    if not word:
        return True
    if most == 0:
        return False
    return any(word[:n] in _SYLLABLES and _syllables(word[n:], most - 1) for n in range(min(6, len(word)), 0, -1))


#: The pinyin of every surname of `SURNAMES` as `_readings` gives it (tests/test_romanize.py
#: checks the two agree): written out, because deriving it imports pypinyin's dictionaries,
#: ~0.1-0.2 s of every process's first search with a capitalised word in it ("What …").
LATIN_SURNAMES = frozenset({
    "ai", "an", "ao", "bai", "bao", "bi", "bian", "bo", "cai", "cao", "cen", "chai", "chen", "cheng", "chi",
    "chu", "cong", "cui", "dai", "dang", "deng", "diao", "ding", "dong", "dongfang", "dou", "du", "duan",
    "duanmu", "dugu", "fan", "fang", "fei", "feng", "fu", "gan", "gao", "ge", "geng", "gong", "gongsun", "gou",
    "gu", "guan", "gui", "guo", "han", "hao", "he", "hong", "hou", "hu", "hua", "huang", "huangfu", "huo",
    "ji", "jia", "jian", "jiang", "jiao", "jin", "jing", "ju", "kang", "ke", "kong", "kou", "kuang", "lan",
    "lang", "lei", "leng", "li", "liang", "liao", "lin", "ling", "linghu", "liu", "long", "lou", "lu", "luan",
    "luo", "ma", "mai", "mao", "mei", "meng", "mi", "miao", "min", "mo", "moqi", "mou", "mu", "murong",
    "nangong", "ni", "nie", "ning", "niu", "nong", "ou", "ouyang", "pan", "pang", "pei", "peng", "piao", "pu",
    "qi", "qian", "qiao", "qin", "qiu", "qu", "ran", "rao", "ren", "rong", "ruan", "sang", "shan", "shang",
    "shangguan", "shao", "she", "shen", "sheng", "shi", "shu", "si", "sima", "situ", "song", "su", "sui",
    "sun", "tan", "tang", "tao", "teng", "tian", "tong", "tu", "wan", "wang", "wei", "wen", "weng", "wu", "xi",
    "xia", "xiahou", "xiang", "xiao", "xie", "ximen", "xin", "xing", "xiong", "xu", "xuanyuan", "xue", "yan",
    "yang", "yao", "ye", "yi", "yin", "you", "yu", "yuan", "yuchi", "yue", "yuwen", "zang", "zeng", "zha",
    "zhai", "zhan", "zhang", "zhangsun", "zhao", "zhen", "zheng", "zhong", "zhou", "zhu", "zhuang", "zhuge",
    "zhuo", "zong", "zou", "zuo",
})


def _derived_latin_surnames() -> frozenset[str]:
    """`LATIN_SURNAMES` as `_readings` derives it."""
    return frozenset(r[0] for r in (_readings(s + "一") for s in SURNAMES) if r)


def latin_names(text: str, capitalised_only: bool = False) -> list[tuple[str, tuple[str, ...], bool]]:
    """(key, words, capitalised) of each Chinese name `text` spells in Latin letters: two or
    three neighbouring words, a surname's pinyin first or last and the rest one or two
    syllables ("Wang Fang", "Weiming Zhang", "zhang wei ming", "Lao Wang"); `capitalised`
    when every word of it starts with a capital, as a name written with care does (with
    `capitalised_only`, the only ones read)."""
    text = _latin(text)
    matches = list(_LATIN_WORD.finditer(text))
    words = [_U_SPELLINGS.get(w, w) for w in (m.group(0).lower() for m in matches)]
    capital = [m.group(0)[0].isupper() for m in matches]
    for i in range(1, len(matches)):  # Zhang Wei-ming: the part after a hyphen is the word's
        if text[matches[i - 1].end():matches[i].start()] == "-":
            capital[i] = capital[i - 1]
    # a name does not run on over punctuation ("Wang Fang, Li Na and Chen Jing")
    joined = [i + 1 < len(matches) and not _BREAK.search(text, matches[i].end(), matches[i + 1].start())
              for i in range(len(matches))]
    surnames = LATIN_SURNAMES
    surname = [w in surnames for w in words]
    found: dict[str, tuple[str, tuple[str, ...], bool]] = {}
    named: set[int] = set()  # the words of a three-word name ("Zhang Wei Ming"): not two names too
    for size in (3, 2):
        for start in range(len(words) - size + 1):
            end = start + size - 1
            prefixed = size == 2 and words[start] in ("lao", "xiao")
            if not (surname[start] or surname[end] or prefixed) or (size == 2 and {start, end} <= named):
                continue
            if not all(joined[start:end]):
                continue
            caps = all(capital[start:end + 1])
            if capitalised_only and not caps:
                continue
            span = words[start:end + 1]
            keys = []
            # "Lao Wang", and "Xiao Ming" / "Xiao Mei" written with capitals (小明: a given name)
            if prefixed and (surname[end] or (capital[start] and capital[end] and span[1] in _SYLLABLES)):
                keys.append(span[0] + span[1])
            for family, given in ((span[0], span[1:]), (span[-1], span[:-1])):
                # A given name is one or two characters; a surname that is also an English
                # function word ("he", "you") is one only when capitalised ("He Ping").
                if (family in surnames and all(len(w) > 1 for w in given) and _syllables("".join(given), 2)
                        and (caps or family not in STOPWORDS_EN)):
                    keys.append(family + "".join(given))
            for key in keys:
                if key not in found or caps and not found[key][2]:
                    found[key] = (key, tuple(span), caps)
            if keys and size == 3:
                named.update(range(start, start + 3))
    return list(found.values())


def latin_name_keys(text: str) -> list[str]:
    """The name keys of the Chinese names `text` spells in Latin letters (:func:`latin_names`):
    "Wang Fang", "Fang Wang" -> ``wangfang``, ``fangwang``; "Zhang Wei Ming" -> ``zhangweiming``."""
    return [key for key, _, _ in latin_names(text)]
