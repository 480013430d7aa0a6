"""Write the names-across-scripts development set (benchmarks/data/names/, BEIR layout).

Written for Engram (licence: the project's). A bilingual user's notes name the same Chinese
people in characters (王芳, 老王) and in pinyin (Wang Fang, Lao Wang), and ask in either. Each
*case* below is

* a memory that names a person in one script,
* a distractor in the question's script on the same subject about someone else (only the
  name tells them apart: "Li Na recommended a bookshop ..." for "Which bookshop did Wang
  Fang recommend?"),
* a question in the other script naming the person.

The names cover common surnames, given names of one and two characters, a compound surname
(欧阳, 司马), surnames read otherwise than the word (单 shan, 曾 zeng), ü (吕 lu), 老 / 小
forms, Western order ("Tao Xu", "Fang Wang"), a name that is an English word ("Song", "Long")
and lowercase questions. ``same`` holds control questions in the memory's own script.

Run: ``python benchmarks/names_devset.py [OUT_DIR]``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# (memory, distractor in the question's language, question); en2zh: Chinese memories
EN2ZH: list[tuple[str, str, str]] = [
    ("王芳推荐了一家叫一页的独立书店，在鼓楼附近。",
     "Li Na recommended a bookshop next to the train station.",
     "Which bookshop did Wang Fang recommend?"),
    ("张伟明的新手机号是 138 1234 5678。",
     "Chen Jie changed her phone number last week, the new one ends in 4471.",
     "What is Zhang Weiming's new phone number?"),
    ("老王借了我两千块，说月底还。",
     "I lent Lao Li 500 yuan for the taxi.",
     "How much money did Lao Wang borrow from me?"),
    ("小林下个月去成都出差，住在春熙路附近。",
     "Xiao Chen is going on a business trip to Shanghai next week.",
     "Where is Xiao Lin going on her business trip?"),
    ("欧阳娜娜的女儿在学小提琴，每周六上课。",
     "Zhou Min's son takes piano lessons on Saturdays.",
     "What instrument is Ouyang Nana's daughter learning?"),
    ("刘洋对花生过敏，聚餐时别点宫保鸡丁。",
     "Huang Lei is allergic to shellfish, so no shrimp at the dinner.",
     "What is Liu Yang allergic to?"),
    ("陈静的生日是九月十八号，她喜欢向日葵。",
     "Zhao Min's birthday is on 2 October; she likes lilies.",
     "When is Chen Jing's birthday?"),
    ("赵磊的车是白色的特斯拉，停在B2层。",
     "Sun Tao drives a grey Volkswagen and parks on level 1.",
     "what car does zhao lei drive"),
    ("曾晓红医生让我下周二去复查血常规。",
     "Dr. Gao told me to come back for a blood test in a month.",
     "When did Dr Zeng Xiaohong want me back for the blood test?"),
    ("单丽的婚礼定在五月二十号，在杭州西湖边。",
     "Feng Yu's wedding is in June, on a beach in Xiamen.",
     "Where is Shan Li's wedding?"),
    ("吕明帮我修好了洗衣机，换了一根进水管。",
     "Ma Jun fixed the dishwasher last weekend.",
     "What did Lu Ming fix for me?"),
    ("黄晓东推荐的牙医在人民路，口碑很好。",
     "Tang Hui recommended a dentist in the north of town.",
     "Where is the dentist that Huang Xiaodong recommended?"),
    ("孙悦下周六搬家，需要人帮忙搬钢琴。",
     "Guo Qiang moved house last month and needed help with the boxes.",
     "When is Sun Yue moving house?"),
    ("和徐涛约好周四晚上打羽毛球。",
     "Playing tennis with Jiang Bo on Sunday morning.",
     "When am I playing badminton with Tao Xu?"),
    ("郑凯的猫叫豆豆，是一只橘猫。",
     "Luo Bin has a black cat called Shadow.",
     "What is Zheng Kai's cat called?"),
]

# zh2en: English memories, Chinese distractors and questions
ZH2EN: list[tuple[str, str, str]] = [
    ("Wang Jun's flight to Chengdu leaves at 7am on Friday.",
     "李强的航班周六下午从上海起飞。",
     "王军的航班几点起飞？"),
    ("Li Xiaoyan lent me her camera for the trip to Yunnan.",
     "周敏把她的无人机借给我了。",
     "李晓燕借给我什么了？"),
    ("Zhang Lei's daughter starts primary school in September.",
     "刘伟的儿子九月上初中。",
     "张磊的女儿什么时候上小学？"),
    ("Lao Zhou owes me 300 yuan for the concert tickets.",
     "我欠老李两百块饭钱。",
     "老周欠我多少钱？"),
    ("Xiao Wu recommended the hotpot place on Jianshe Road.",
     "小赵推荐了一家烤肉店。",
     "小吴推荐了哪家火锅店？"),
    ("Chen Hao's wife is expecting twins in March.",
     "杨帆的太太四月生了个女儿。",
     "陈浩的太太什么时候生？"),
    ("Yang Xue is learning to drive; her test is on the 14th.",
     "何亮上个月考过了驾照。",
     "杨雪什么时候考驾照？"),
    ("Dr. Lin Feng said the MRI of my knee looks fine.",
     "韩医生说我的腰椎需要做理疗。",
     "林峰医生怎么说我的核磁共振结果？"),
    ("Gao Yuan sent the contract draft and needs my comments by Monday.",
     "冯涛把报价单发给我了，周三前回复。",
     "高远发的合同草稿什么时候要回复？"),
    ("Huang Li's address is 12 Harbour Street, flat 5.",
     "谢军搬到了滨江路8号。",
     "黄莉住在哪里？"),
    ("Sima Yue is vegetarian, so book the Buddhist restaurant for Friday.",
     "邓超不吃辣，订餐要注意。",
     "司马越有什么饮食要求？"),
    ("Bought Tang Mei a silk scarf for her 40th birthday.",
     "给蔡红买了一束花，祝贺她升职。",
     "给唐梅买了什么生日礼物？"),
    ("Song Jia's band plays at the Blue Note bar on Saturday night.",
     "许晴的合唱团周日在音乐厅演出。",
     "宋佳的乐队在哪里演出？"),
    ("Fang Wang from accounting approved my travel reimbursement.",
     "财务的刘娟还没批我的报销。",
     "王芳批了我的报销吗？"),
    ("Long Fei fixed the leak under the kitchen sink.",
     "钱明帮我通了卫生间的下水道。",
     "龙飞帮我修了什么？"),
]

# Controls: (kind, case number, question in the memory's own script)
SAME: list[tuple[str, int, str]] = [
    ("e2z", 1, "王芳推荐的书店叫什么？"),
    ("z2e", 1, "Where is Wang Jun flying to on Friday?"),
    ("e2z", 3, "老王借了我多少钱？"),
    ("z2e", 3, "When does Zhang Lei's daughter start school?"),
    ("e2z", 6, "刘洋对什么过敏？"),
    ("z2e", 8, "What did Dr. Lin Feng say about my knee?"),
    ("e2z", 13, "孙悦什么时候搬家？"),
    ("z2e", 12, "What present did I buy for Tang Mei?"),
]

# Notes no question asks for.
FILLER: list[str] = [
    "周末去爬了黄山，天气很好，云海很壮观。",
    "Renewed the car insurance; the premium went up by 8 percent.",
    "公司年会定在一月十五号，在滨江酒店。",
    "The boiler service is booked for Thursday between 8 and 12.",
    "买了一台新的空气净化器，放在卧室。",
    "Started reading a novel about the Silk Road; slow but good.",
    "楼下新开了一家面包店，可颂很好吃。",
    "Need to renew my passport before the summer trip.",
]


def build() -> tuple[list[dict[str, object]], list[dict[str, str]], dict[str, list[tuple[str, str]]]]:
    """The corpus, the questions and the judgements by split (every one grade 1)."""
    corpus: list[dict[str, object]] = []
    queries: list[dict[str, str]] = []
    qrels: dict[str, list[tuple[str, str]]] = {"en2zh": [], "zh2en": [], "same": []}
    for kind, split, cases, (memory_lang, question_lang) in (
            ("e2z", "en2zh", EN2ZH, ("zh", "en")), ("z2e", "zh2en", ZH2EN, ("en", "zh"))):
        for i, (memory, distractor, question) in enumerate(cases, 1):
            corpus += [{"_id": f"{kind}{i:02d}", "title": "", "text": memory, "metadata": {"lang": memory_lang}},
                       {"_id": f"{kind}{i:02d}x", "title": "", "text": distractor,
                        "metadata": {"lang": question_lang}}]
            queries.append({"_id": f"q-{kind}{i:02d}", "text": question})
            qrels[split].append((f"q-{kind}{i:02d}", f"{kind}{i:02d}"))
    for n, (kind, case, question) in enumerate(SAME, 1):
        queries.append({"_id": f"q-same{n:02d}", "text": question})
        qrels["same"].append((f"q-same{n:02d}", f"{kind}{case:02d}"))
    for n, text in enumerate(FILLER, 1):
        corpus.append({"_id": f"filler{n:02d}", "title": "", "text": text,
                       "metadata": {"lang": "zh" if any("\u4e00" <= c <= "\u9fff" for c in text) else "en"}})
    return corpus, queries, qrels


def write(out: Path) -> None:
    corpus, queries, qrels = build()
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    for name, rows in (("corpus.jsonl", corpus), ("queries.jsonl", queries)):
        with open(out / name, "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    splits = {**qrels, "test": [row for rows in qrels.values() for row in rows]}
    for split, rows in splits.items():
        with open(out / "qrels" / f"{split}.tsv", "w", encoding="utf-8") as f:
            f.write("query-id\tcorpus-id\tscore\n")
            for query_id, doc_id in rows:
                f.write(f"{query_id}\t{doc_id}\t1\n")


if __name__ == "__main__":
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "data" / "names")
