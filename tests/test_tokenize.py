from engramdb.text.tokenize import analyze, query_terms


def test_chinese_sentence_is_segmented_into_words():
    terms = analyze("上周爱丽丝在上海参加了支持小组")
    assert "上海" in terms
    assert "支持" in terms and "小组" in terms
    # FTS5's default tokenizer would see the whole sentence as one token.
    assert len(terms) >= 5
    assert "了" not in terms  # Chinese stopword


def test_english_is_stemmed_and_stopwords_dropped():
    assert analyze("She painted the sunrises") == ["paint", "sunris"]
    assert analyze("the of and") == []


def test_mixed_chinese_and_english():
    terms = analyze("Product XYZ 产品下个月开始收费")
    assert "product" in terms and "xyz" in terms
    assert "收费" in terms


def test_identifiers_are_kept_whole_and_split():
    assert analyze("v2.3.1") == ["v2_3_1", "v2", "3", "1"]
    terms = analyze("error ERR_CONN_RESET at 3f2a9c1")
    assert "err_conn_reset" in terms and "conn" in terms
    assert "3f2a9c1" in terms


def test_full_width_text_is_normalised():
    assert analyze("ＡＢＣ１２３") == analyze("abc123")


def test_query_terms_are_distinct():
    assert query_terms("paint painting painted") == ["paint"]
    assert query_terms("上海 上海 shanghai") == ["上海", "shanghai"]


def test_chinese_chat_fillers_are_stopwords_like_their_english_counterparts():
    # "really", "yeah", "very" are English stopwords; 真的, 对呀, 特别 weigh as little in Chinese
    # chatter ("我真的特别喜欢画画，对呀" is about liking painting).
    assert analyze("I really like painting, yeah") == ["paint"]
    terms = analyze("我真的特别喜欢画画，对呀！哇，超级好玩")
    assert not {"真的", "特别", "对呀", "哇", "超级"} & set(terms)
    assert {"喜欢", "画画", "好玩"} <= set(terms)


def test_words_that_say_when_rather_than_what_are_stopwords():
    # "What's my current address?" matched "my Barclays current account", and 目前 / 现在
    # translated to "current" / "now" did the same from Chinese: the cue says when, not what.
    assert query_terms("What's my current address these days, now that I still live here?") == \
        ["address", "day", "live"]
    assert query_terms("Which editor do I currently use nowadays, and what did I use previously?") == \
        ["editor", "use"]
    assert analyze("我现在住在南京，以前住在杭州，目前仍然在南京") == ["住", "南京", "住", "杭州", "南京"]
