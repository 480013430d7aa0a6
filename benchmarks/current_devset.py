"""Write the current-state development set (benchmarks/data/current/, BEIR layout with times).

Written for Engram (licence: the project's); nothing in it comes from a public data set. One
person's memory, in English and Chinese, kept over four years: things that changed (a job,
an address, a phone number, a manager, a car, a dose) are stored as what was said at the
time, old and new side by side, as an agent that never sets ``supersedes`` keeps them. Mixed
in: facts that never changed, and everyday notes, many of them recent, that share words with
the questions ("Tom's new address is ...", "the office wifi was down").

Every memory has a ``timestamp`` (when it was said); every question is asked ``now`` =
2026-12-01. Splits (``qrels/<split>.tsv``):

* ``current``: asks for the present state with a cue word ("now", "currently", "these days",
  "still", 现在, 目前, 如今): the answer is the newest statement; the older states are judged
  not relevant (grade 0), since an agent that reads them first answers wrongly;
* ``past``: asks for a former state ("before", "used to", 以前, 之前): the answer is the old
  statement, so a preference for the newest must not fire;
* ``stable``: a cue word, but the fact never changed: the newest unrelated notes must not
  overtake the one answer;
* ``plain``: a changed fact asked with no cue ("Where does Alice live?"); judged like
  ``current`` (a person asking means today), reported apart: nothing marks it as about now;
* ``test``: ``current`` + ``past`` + ``stable``.

Run: ``python benchmarks/current_devset.py [OUT_DIR]``; then
``engram eval beir benchmarks/data/current --split current --preset default,semantic,lexical``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

NOW = "2026-12-01T12:00:00"

# A changing fact: its states (date, text), oldest first; the question asking for the present
# state (with a cue word); a question for the first (old) state or None; a question with no
# cue or None.
Change = tuple[list[tuple[str, str]], str, "str | None", "str | None"]

CHANGES_EN: list[Change] = [
    ([("2023-02-10", "I work at Google as a backend engineer on the Ads team."),
      ("2025-09-01", "Last day at Google today. On Monday I start at Stripe on the payments team.")],
     "Where do I work now?", "Where did I work before Stripe?", "Which company do I work for?"),
    ([("2022-06-15", "Moved into a two-bedroom flat on Elm Street in Leeds."),
      ("2024-05-01", "Moved from Leeds to Bristol, renting a house near the harbour."),
      ("2026-03-20", "We finally moved to Manchester; the new address is 14 Canal Road.")],
     "What's my current address?", "Which street was my flat in Leeds on?", "Where do I live?"),
    ([("2023-01-05", "My phone number is 0176 555 0143."),
      ("2025-11-12", "Changed my phone number to 0151 555 0199 after the contract ended.")],
     "What is my phone number now?", "What was my old phone number?", None),
    ([("2021-08-01", "Bought a used red Honda Civic, my first car."),
      ("2026-05-30", "Sold the Honda and bought an electric Kia EV6.")],
     "What car do I drive these days?", "What car did I have before the Kia?", "What car do I drive?"),
    ([("2023-04-10", "I eat meat with almost every meal; steak is my favourite."),
      ("2026-01-02", "Went vegetarian for the new year, no meat at all anymore.")],
     "Do I still eat meat?", None, None),
    ([("2024-01-15", "Joined the FitLife gym near the office, going three times a week."),
      ("2026-06-01", "Cancelled FitLife; I run in the park every morning instead.")],
     "How do I exercise currently?", None, None),
    ([("2024-02-01", "My manager is Priya; weekly one-on-ones on Tuesdays."),
      ("2026-08-15", "Priya left the company. My new manager is Daniel.")],
     "Who is my manager now?", "Who was my manager before Daniel?", "Who is my manager?"),
    ([("2023-05-20", "Started dating Mark, we met at the climbing gym."),
      ("2025-10-10", "Broke up with Mark. I'm seeing Leo, a chef.")],
     "Who am I dating at the moment?", None, None),
    ([("2022-03-03", "My laptop is a 2019 MacBook Pro with 16 GB of RAM."),
      ("2026-02-14", "New laptop: a ThinkPad X1 Carbon with 32 GB, running Linux.")],
     "What laptop am I using now?", None, None),
    ([("2023-09-09", "I drink three cups of coffee a day, always with milk."),
      ("2026-07-01", "Quit coffee on the doctor's advice; green tea only.")],
     "What do I drink these days, coffee or tea?", None, None),
    ([("2024-03-01", "Learning Spanish on Duolingo, twenty minutes a day."),
      ("2026-04-04", "Stopped Spanish; I'm taking Japanese evening classes.")],
     "Which language am I learning currently?", None, None),
    ([("2022-11-11", "My salary goes into my Barclays current account."),
      ("2025-12-01", "Switched banks to Monzo; the salary is paid there from December.")],
     "Which bank is my salary paid into now?", None, None),
    ([("2023-07-07", "My GP is Dr. Evans at the Hillside practice."),
      ("2026-04-18", "Registered with a new GP after the move: Dr. Okafor at Riverside Medical.")],
     "Who is my GP now?", None, None),
    ([("2024-05-05", "Taking 50 mg of sertraline each morning."),
      ("2026-09-09", "The doctor raised my sertraline to 100 mg a day.")],
     "What dose of sertraline am I on now?", None, None),
    ([("2023-09-01", "Emma started at Oakfield Primary School."),
      ("2026-09-02", "Emma moved up to Greenwood Secondary this September.")],
     "Which school does Emma go to now?", None, "Which school does Emma go to?"),
    ([("2024-06-06", "The home wifi password is sunflower42."),
      ("2026-10-10", "Reset the router; new wifi password bluejay77.")],
     "What is the home wifi password currently?", None, None),
    ([("2022-10-10", "Practising guitar every evening, learning Wonderwall."),
      ("2026-03-03", "Gave the guitar to my nephew; I play the piano these days.")],
     "What instrument do I play now?", None, None),
    ([("2023-03-03", "I'm a junior designer at Pixel & Co."),
      ("2026-01-20", "Got promoted to design lead at Pixel & Co., managing four people.")],
     "What is my job title now?", None, None),
    ([("2023-08-08", "Rent is 1,200 pounds a month, paid to the landlord Mr. Patel."),
      ("2026-08-01", "The rent went up to 1,350 pounds a month from August.")],
     "How much is my rent now?", "How much was the rent when I moved in?", None),
    ([("2021-04-04", "We have a cat called Miso."),
      ("2026-05-05", "Miso died in the spring; we adopted a beagle puppy named Biscuit.")],
     "What pet do we have now?", None, None),
    ([("2024-02-02", "I go to bed around 1 am most nights."),
      ("2026-10-01", "New routine: lights out by 10:30 pm, up at 6.")],
     "What time do I go to bed these days?", None, None),
    ([("2023-06-06", "Sam works as a nurse at St Mary's Hospital."),
      ("2026-02-02", "Sam left nursing and teaches biology at a secondary school.")],
     "What does Sam do for work now?", "Where did Sam work as a nurse?", "What does Sam do for a living?"),
    ([("2022-05-05", "I write code in Sublime Text."),
      ("2025-07-07", "Moved all my coding to VS Code with the Vim extension.")],
     "Which code editor do I use now?", None, None),
    ([("2023-10-10", "I commute by train, 45 minutes each way."),
      ("2026-06-15", "Working from home full time, no more trains.")],
     "How do I commute to work at the moment?", None, None),
    ([("2023-01-01", "Our favourite restaurant is Luigi's, the pizza place on High Street."),
      ("2026-09-20", "Luigi's closed down. We love Saffron, the Indian place by the river.")],
     "What's our favourite restaurant these days?", None, None),
    ([("2024-04-04", "Car insurance is with Admiral, renews in April."),
      ("2026-04-02", "Switched car insurance to Direct Line, 200 pounds cheaper.")],
     "Who is my car insurance with now?", None, None),
    ([("2022-02-02", "Personal email: jane.doe@hotmail.com."),
      ("2025-05-05", "Moved to a new address, jane@doe.family; the Hotmail one is closed.")],
     "What is my current email address?", "What was my Hotmail address?", None),
    ([("2024-09-09", "Training for my first 10k race."),
      ("2026-10-20", "Signed up for the Berlin marathon next year; training for the full distance.")],
     "What race am I training for now?", None, None),
    ([("2025-01-10", "The book club is reading 'Dune'."),
      ("2026-11-05", "This month the book club picked 'Piranesi'.")],
     "Which book is the book club reading now?", None, None),
    ([("2023-03-15", "Alice lives in Boston and works at a biotech startup."),
      ("2026-04-10", "Alice moved to Seattle for a job at Amazon.")],
     "Where does Alice live now?", "Where did Alice live before Seattle?", "Where does Alice live?"),
    ([("2023-05-05", "The production database runs on PostgreSQL 13."),
      ("2026-03-30", "Upgraded the production database to PostgreSQL 17 over the weekend.")],
     "Which PostgreSQL version is production on now?", None, None),
    ([("2024-01-08", "We deploy with Jenkins, a nightly pipeline."),
      ("2026-06-22", "Migrated deployments from Jenkins to GitHub Actions; they run on every merge.")],
     "What do we use to deploy currently?", None, None),
]

CHANGES_ZH: list[Change] = [
    ([("2023-03-01", "我在阿里巴巴做前端开发。"),
      ("2026-05-10", "从阿里离职了，下周一去字节跳动上班，做后端。")],
     "我现在在哪家公司上班？", "我之前在哪个公司工作？", "我在哪家公司上班？"),
    ([("2022-09-01", "搬到了杭州西湖区的出租屋，离公司很近。"),
      ("2026-04-15", "我们搬回了南京，新家在鼓楼区。")],
     "我目前住在哪个城市？", "我以前在杭州住哪个区？", "我住在哪个城市？"),
    ([("2023-02-02", "我的手机号是138 0013 8000。"),
      ("2026-01-08", "换了新号码：139 1234 5678，旧号已经停用。")],
     "我现在的手机号是多少？", "我以前的手机号是多少？", None),
    ([("2021-07-07", "买了一辆白色的大众朗逸。"),
      ("2026-08-18", "把朗逸卖了，换了一辆比亚迪电动车。")],
     "我现在开什么车？", None, None),
    ([("2023-06-06", "我每天早上喝一杯加糖的咖啡。"),
      ("2026-03-03", "医生说血糖偏高，早上改喝无糖豆浆了。")],
     "我现在早上喝什么？", None, None),
    ([("2024-02-20", "在公司楼下的健身房办了年卡，一周去三次。"),
      ("2026-07-01", "健身卡到期没续，每天晚上去江边跑步。")],
     "我目前怎么锻炼身体？", None, None),
    ([("2024-03-03", "我的直属领导是张经理，每周五开周会。"),
      ("2026-09-01", "张经理调去上海分公司了，新领导是刘总监。")],
     "我现在的领导是谁？", "我以前的领导是谁？", None),
    ([("2023-09-01", "儿子上了实验小学一年级。"),
      ("2026-09-01", "儿子转学到了外国语学校，读四年级。")],
     "儿子现在在哪个学校上学？", None, None),
    ([("2023-08-01", "房租每月三千五，押一付三。"),
      ("2026-08-01", "房东把房租涨到了每月四千二。")],
     "现在房租每月多少钱？", None, None),
    ([("2022-05-05", "家里养了一只橘猫，叫大黄。"),
      ("2026-06-06", "大黄走了，今年领养了一只柯基，叫豆豆。")],
     "我们家现在养的是什么宠物？", None, None),
    ([("2024-01-01", "每天在手机上学二十分钟日语。"),
      ("2026-03-15", "日语先放下了，报了一个法语晚班。")],
     "我目前在学什么语言？", None, None),
    ([("2023-04-04", "工资卡是工商银行的。"),
      ("2026-02-01", "公司换了代发银行，工资打到招商银行卡上。")],
     "工资现在发到哪个银行的卡上？", None, None),
    ([("2024-07-07", "家里的无线网密码是 hello2024。"),
      ("2026-10-01", "重置了路由器，无线网密码改成了 qwer8888。")],
     "家里无线网现在的密码是什么？", None, None),
    ([("2022-11-11", "女儿在学小提琴，每周六上课。"),
      ("2026-04-04", "女儿不拉小提琴了，改学钢琴。")],
     "女儿现在学什么乐器？", None, None),
    ([("2023-05-05", "我是销售部的普通专员。"),
      ("2026-01-15", "升职了，做了销售部的区域经理。")],
     "我现在是什么职位？", None, None),
    ([("2024-06-01", "降压药每天吃一片氨氯地平。"),
      ("2026-09-20", "医生把降压药换成了缬沙坦，每天一片。")],
     "我目前吃的降压药是哪种？", None, None),
    ([("2023-04-01", "小王在北京读研究生。"),
      ("2026-07-01", "小王毕业后去深圳的华为工作了。")],
     "小王如今在哪里？", "小王以前在哪里读书？", "小王在哪里？"),
    ([("2023-03-03", "线上服务用的是 MySQL 5.7。"),
      ("2026-05-20", "线上数据库升级到了 MySQL 8.0。")],
     "线上数据库现在是什么版本？", None, None),
    ([("2023-10-10", "每天坐地铁二号线上班，单程四十分钟。"),
      ("2026-06-01", "公司搬到了家附近，骑电动车十分钟就到。")],
     "我现在怎么去上班？", None, None),
    ([("2023-12-12", "我们最常去的是楼下那家兰州拉面。"),
      ("2026-10-10", "拉面馆关门了，常去隔壁新开的湘菜馆。")],
     "我们现在最常去哪家饭店？", None, None),
    ([("2024-04-04", "车险在平安保险买的。"),
      ("2026-04-01", "今年车险换到了人保，便宜了六百。")],
     "车险目前是在哪家买的？", None, None),
    ([("2022-02-02", "我的工作邮箱是 wang@oldcorp.cn。"),
      ("2026-05-12", "换部门后邮箱变成了 wang@newtech.cn。")],
     "我现在的工作邮箱是什么？", None, None),
]

# Facts that never changed, asked with a cue word: (date, text, question).
STABLE: list[tuple[str, str, str]] = [
    ("2021-01-01", "I'm allergic to peanuts; I carry an EpiPen.", "Am I still allergic to peanuts?"),
    ("2023-02-02", "My sister Laura lives in Dublin with her two kids.", "Where does Laura live now?"),
    ("2024-03-03", "Our dentist is Dr. Kim on Park Avenue.", "Who is our dentist currently?"),
    ("2023-11-11", "My shoe size is 42 EU, wide fit.", "What's my shoe size these days?"),
    ("2022-08-08", "Dad's birthday is on 9 March; he likes whisky.", "When is Dad's birthday now?"),
    ("2024-05-05", "The spare house key is with the neighbour at number 12.", "Who has the spare key at the moment?"),
    ("2022-03-03", "我对青霉素过敏。", "我现在还对青霉素过敏吗？"),
    ("2023-07-07", "姐姐一家住在成都，离我们挺远。", "姐姐现在住在哪里？"),
    ("2024-01-01", "我们的家庭医生是社区医院的李医生。", "目前我们的家庭医生是谁？"),
    ("2023-05-20", "公司的年假是每年十五天。", "公司现在年假有几天？"),
]

# Everyday notes no question asks for; many are recent and share words with the questions.
NOTES: list[tuple[str, str]] = [
    ("2026-11-28", "Tom's new address is 9 Park Lane, he moved last week."),
    ("2026-11-27", "The office wifi was down all morning."),
    ("2026-11-25", "Lent my old phone to my niece while hers is being repaired."),
    ("2026-11-24", "Watched a documentary about electric cars and batteries."),
    ("2026-11-22", "Bought a coffee grinder as a gift for Dad."),
    ("2026-11-20", "Had lunch with Tom at the new ramen bar."),
    ("2026-11-18", "My colleague Raj switched to a standing desk at work."),
    ("2026-11-15", "The car needs new tyres before winter."),
    ("2026-11-12", "Raj's manager approved his transfer to the Dublin office."),
    ("2026-11-10", "Booked a dentist check-up for the kids in January."),
    ("2026-11-08", "The bank app asked me to update my password."),
    ("2026-11-05", "Emma's school play is on the 12th; she plays a tree."),
    ("2026-11-02", "Fixed the leaking kitchen tap myself."),
    ("2026-10-30", "Leo cooked risotto for my parents on Sunday."),
    ("2026-10-28", "Read an article about the best code editors for Rust."),
    ("2026-10-25", "Our neighbours got a new dog, a very loud terrier."),
    ("2026-10-15", "Sam's school is looking for a new head teacher."),
    ("2026-09-30", "Signed the kids up for swimming lessons on Saturday mornings."),
    ("2026-09-12", "Paid the council tax for the year."),
    ("2026-08-08", "Weekend trip to the Lake District, rained the whole time."),
    ("2025-12-20", "Christmas dinner at Laura's in Dublin."),
    ("2025-06-06", "Ran a half marathon in 2 hours 5 minutes."),
    ("2024-08-08", "Holiday in Crete, the food was amazing."),
    ("2023-12-01", "Started a vegetable patch in the garden."),
    ("2026-11-29", "周末带儿子去科技馆，看了机器人展。"),
    ("2026-11-26", "同事小李换了新手机，是华为的。"),
    ("2026-11-23", "公司楼下新开了一家咖啡店，拿铁还不错。"),
    ("2026-11-21", "老张的新家在江宁区，下周去他家吃饭。"),
    ("2026-11-19", "物业通知下周三停水一天。"),
    ("2026-11-16", "在网上给妈妈买了一台按摩椅。"),
    ("2026-11-13", "小李说他们部门的领导又换了。"),
    ("2026-11-09", "女儿的钢琴老师说她进步很大。"),
    ("2026-11-06", "车子该做保养了，约了周六。"),
    ("2026-11-03", "银行打电话推销信用卡，拒绝了。"),
    ("2026-10-29", "邻居家的柯基很喜欢我们家豆豆。"),
    ("2026-10-20", "看了一部关于日本料理的纪录片。"),
    ("2026-10-12", "公司年会定在一月中旬。"),
    ("2026-09-25", "国庆去黄山玩了三天。"),
    ("2025-11-11", "双十一买了一台扫地机器人。"),
    ("2024-10-10", "第一次去西安，吃了肉夹馍。"),
]


def build() -> tuple[list[dict[str, object]], list[dict[str, str]], dict[str, list[tuple[str, str]]]]:
    corpus: list[dict[str, object]] = []
    queries: list[dict[str, str]] = []
    qrels: dict[str, list[tuple[str, str]]] = {"current": [], "past": [], "stable": [], "plain": []}

    def add_doc(prefix: str, n: int, date: str, text: str, lang: str) -> str:
        doc_id = f"{prefix}{n}"
        corpus.append({"_id": doc_id, "title": "", "text": text, "timestamp": date, "metadata": {"lang": lang}})
        return doc_id

    def add_query(qid: str, text: str, split: str, relevant: str, not_relevant: list[str]) -> None:
        queries.append({"_id": qid, "text": text, "now": NOW})
        qrels[split].append((qid, relevant))
        qrels[split].extend((qid, f"-{d}") for d in not_relevant)  # grade 0, see main()

    for lang, changes in (("en", CHANGES_EN), ("zh", CHANGES_ZH)):
        for i, (states, current, past, plain) in enumerate(changes, start=1):
            ids = [add_doc(f"{lang}{i}s", j, date, text, lang) for j, (date, text) in enumerate(states, start=1)]
            add_query(f"{lang}{i}-current", current, "current", ids[-1], ids[:-1])
            if past:
                add_query(f"{lang}{i}-past", past, "past", ids[0], ids[1:])
            if plain:
                add_query(f"{lang}{i}-plain", plain, "plain", ids[-1], ids[:-1])
    for i, (date, text, question) in enumerate(STABLE, start=1):
        lang = "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in text) else "en"
        doc = add_doc("stable", i, date, text, lang)
        add_query(f"stable{i}", question, "stable", doc, [])
    for i, (date, text) in enumerate(NOTES, start=1):
        add_doc("note", i, date, text, "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in text) else "en")
    return corpus, queries, qrels


def main(out: Path) -> None:
    corpus, queries, qrels = build()
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for doc in corpus:
            f.write(json.dumps(doc, ensure_ascii=False) + "\n")
    with (out / "queries.jsonl").open("w", encoding="utf-8") as f:
        for q in queries:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")

    def rows(split: str) -> list[str]:
        # "-id" marks a judged non-relevant state (grade 0): kept in the file as a record of
        # what an older state is, scored as not relevant.
        return [f"{q}\t{d[1:]}\t0" if d.startswith("-") else f"{q}\t{d}\t1" for q, d in qrels[split]]

    for split in ("current", "past", "stable", "plain"):
        (out / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(rows(split)) + "\n",
                                                    encoding="utf-8")
    test = rows("current") + rows("past") + rows("stable")
    (out / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(test) + "\n", encoding="utf-8")
    counts = {s: sum(1 for _, d in qrels[s] if not d.startswith("-")) for s in qrels}
    print(f"{len(corpus)} memories, {len(queries)} questions -> {out}: {counts}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "data" / "current")
