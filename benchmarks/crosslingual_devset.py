"""Write the cross-lingual development set (benchmarks/data/crosslingual/, BEIR layout).

Written for Engram (licence: the project's). Each *pair* below is a Chinese memory and an
English memory of a personal agent that share a surface word across the two languages but
state different facts (a production server's memory leak / a laptop RAM upgrade), with

* an English question whose answer is the Chinese memory (``en2zh``): the English memory of
  the pair shares its words, so it is the same-language distractor BM25 and a weak
  cross-lingual embedding prefer;
* a Chinese question whose answer is the English memory (``zh2en``), likewise;
* for some pairs, a same-language control question (``same``) for each memory.

``qrels/test.tsv`` judges every question; ``qrels/en2zh.tsv``, ``qrels/zh2en.tsv`` and
``qrels/same.tsv`` the three kinds apart (``engram eval beir ... --split en2zh``).

Run: ``python benchmarks/crosslingual_devset.py [OUT_DIR]``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# (Chinese memory, English memory, English question -> Chinese memory,
#  Chinese question -> English memory)
PAIRS: list[tuple[str, str, str, str]] = [
    ("生产服务器有内存泄漏，内存占用每天涨两个G，暂时每晚重启一次。",
     "Upgraded my laptop RAM to 32 GB; Docker builds are much faster now.",
     "server keeps using more RAM", "笔记本的内存升级到多大了？"),
    ("妈妈下个月做膝盖手术，我要请一周假回家照顾她。",
     "My knee hurt after the 10k run; the physio said to rest for two weeks.",
     "when is mom's knee surgery", "跑步以后膝盖疼，理疗师怎么说？"),
    ("小林的生日是三月十二号，她喜欢抹茶蛋糕。",
     "Tom's birthday party is on Saturday at the bowling alley.",
     "what cake does Xiao Lin like for her birthday", "汤姆的生日聚会在哪里举行？"),
    ("数据库备份脚本昨晚失败了，磁盘空间不足。",
     "The backup of family photos to the external drive finished on Sunday.",
     "why did the database backup fail", "家庭照片备份到移动硬盘了吗？"),
    ("护照下个月过期，得尽快去出入境管理局续签。",
     "Booked the passport photo appointment for Tuesday at the pharmacy.",
     "my passport expires soon, where do I renew it", "护照照片约在什么时候拍？"),
    ("周五晚上和老王在川菜馆吃饭，他推荐了水煮鱼。",
     "Dinner with Sarah on Friday at the new Italian restaurant downtown.",
     "which dish did Lao Wang recommend at dinner", "和萨拉周五在哪家餐厅吃晚饭？"),
    ("去东京的机票订好了，四月三号早上八点起飞。",
     "The flight to Berlin was delayed four hours because of a storm.",
     "when does my flight to Tokyo leave", "去柏林的航班为什么延误？"),
    ("医生说我的血压偏高，要少吃盐，每天散步半小时。",
     "Dad's blood test results came back normal, no more cholesterol pills.",
     "what did the doctor say about my blood pressure", "爸爸的验血结果怎么样？"),
    ("房东通知下个月房租涨三百块。",
     "Paid the electricity bill for March, it was unusually high because of the heater.",
     "how much is the rent going up", "三月份的电费为什么这么高？"),
    ("支付接口超时，原因是证书过期，已经更新证书。",
     "The login page times out on slow mobile networks; need a retry with backoff.",
     "why did the payment API time out", "登录页面在手机网络上超时怎么办？"),
    ("女儿的钢琴课改到每周三下午四点。",
     "Signed my son up for swimming lessons on Saturday mornings.",
     "when is my daughter's piano lesson now", "儿子的游泳课是什么时候？"),
    ("车的刹车片磨损了，修理厂说下周换。",
     "The car insurance renewal is due on June 1st; compare quotes first.",
     "the brakes on my car are worn", "车险什么时候续保？"),
    ("猫最近不吃东西，明天带它去宠物医院。",
     "Adopted a puppy named Biscuit from the shelter last weekend.",
     "my cat stopped eating, vet appointment", "上周末从收容所领养的小狗叫什么？"),
    ("搬家公司定在二十号上午，押金付了五百。",
     "Moving the office to the fifth floor next Monday; pack the monitors.",
     "when are the movers coming and how much was the deposit", "办公室搬到几楼？"),
    ("老板要求周报每周五下班前发给他。",
     "The quarterly report is due to the board at the end of the month.",
     "deadline for the weekly report to my boss", "季度报告什么时候交给董事会？"),
    ("我对花生过敏，点外卖要备注。",
     "Allergy season started; take the antihistamine before going out.",
     "what food am I allergic to", "过敏季节出门前要吃什么药？"),
    ("在学日语，每天背二十个单词。",
     "Started learning guitar, practising chords for fifteen minutes a day.",
     "how many Japanese words do I memorise every day", "每天练吉他多长时间？"),
    ("张阿姨的电话号码换了，新号码存在通讯录里。",
     "Changed the Wi-Fi password at home; the new one is on the fridge.",
     "Auntie Zhang has a new phone number", "家里的无线网密码换了吗？"),
    ("婚礼定在十月，在杭州西湖边的酒店。",
     "Jake and Emma's wedding is in Scotland in August; book the hotel early.",
     "where is the wedding in October", "杰克和艾玛的婚礼在哪里？"),
    ("上线以后接口延迟翻倍，回滚到上一个版本就好了。",
     "Upgrading Python to 3.12 broke the build because of a removed module.",
     "latency doubled after the release, we rolled back", "升级Python以后为什么构建失败？"),
    ("每天早上喝一杯黑咖啡，下午不喝，不然睡不着。",
     "Switched to green tea in the afternoon; sleeping better since.",
     "when do I stop drinking coffee", "下午改喝什么茶？"),
    ("孩子发烧三十九度，医生开了退烧药。",
     "Caught a cold on the trip; sore throat for three days.",
     "my child has a high fever", "旅行时感冒嗓子疼了几天？"),
    ("下周二去银行办房贷，要带身份证和收入证明。",
     "The credit card was charged twice at the hotel; call the bank to dispute.",
     "documents for the mortgage at the bank", "酒店重复扣款要怎么处理？"),
    ("同事小陈下个月离职，去一家创业公司。",
     "Maria got promoted to engineering manager this quarter.",
     "my colleague is leaving the company next month", "玛丽亚升职做了什么？"),
    ("厨房水管漏水，物业明天派人来修。",
     "The bathroom light keeps flickering; buy a new bulb.",
     "the kitchen pipe is leaking", "浴室的灯一直闪怎么办？"),
    ("读完了《三体》，很喜欢黑暗森林那一部。",
     "Finished reading Dune; the sequel is on my list.",
     "which science fiction novel did I finish", "读完《沙丘》之后打算读什么？"),
    ("健身房年卡到期，考虑换一家离公司近的。",
     "Ran my first half marathon in 2 hours 5 minutes.",
     "my gym membership expired", "第一次半程马拉松跑了多长时间？"),
    ("每个月十五号给父母转两千块生活费。",
     "Set up a monthly transfer of 500 dollars to the savings account.",
     "how much money do I send my parents every month", "每月往储蓄账户转多少钱？"),
    ("硬盘坏了一块，阵列在重建，今晚别部署。",
     "Ordered a new SSD for the gaming PC; arrives Thursday.",
     "a disk failed in the array", "新的固态硬盘什么时候到？"),
    ("奶奶住院了，在人民医院三楼，周末去看她。",
     "Visited grandpa at the nursing home; he asked about the garden.",
     "which hospital is grandma in", "去养老院看爷爷时他问了什么？"),
    ("签证材料交了，大概两周出结果。",
     "The visa interview at the embassy went well; they kept my passport.",
     "when will the visa result come out", "大使馆的签证面试怎么样？"),
    ("老婆想周末去爬山，我建议去香山。",
     "Planning a beach holiday in Thailand for the winter break.",
     "my wife wants to go hiking on the weekend", "寒假打算去哪里度假？"),
    ("牙疼了好几天，约了周四看牙医。",
     "The eye doctor said my glasses prescription changed slightly.",
     "I have a toothache, when is the dentist", "眼科医生对我的眼镜度数怎么说？"),
    ("日志里一直报空指针异常，是配置文件缺了一个字段。",
     "Disk usage alert on the logging cluster; rotate the logs more often.",
     "the null pointer exception in the logs", "日志集群的磁盘告警怎么处理？"),
    ("弟弟考上了研究生，学计算机。",
     "My niece starts kindergarten in September.",
     "my younger brother was admitted to graduate school", "侄女什么时候上幼儿园？"),
    ("冰箱坏了，不制冷，保修期内，厂家下周上门。",
     "Bought a new washing machine, delivery on the 12th.",
     "the fridge is broken and not cooling", "新洗衣机什么时候送货？"),
    ("开会决定把项目截止日期推迟到六月底。",
     "The client meeting moved to Thursday at 3 pm by video call.",
     "the project deadline was postponed", "客户会议改到什么时候了？"),
    ("最近失眠，每晚两三点才睡着。",
     "Trying to wake up at six and go running before work.",
     "I have insomnia lately", "每天早上几点起床去跑步？"),
    ("信用卡账单日是每月五号，还款日是二十三号。",
     "Cancelled the streaming subscription, it renews on the 3rd otherwise.",
     "when is my credit card payment due", "流媒体订阅什么时候自动续费？"),
    ("朋友推荐了一家按摩店，在公司楼下。",
     "Friends recommended a dentist near the train station.",
     "the massage place my friend recommended", "朋友推荐的牙医在哪里？"),
    ("服务器的证书下周三过期，要提前续期。",
     "The domain name renewal failed because the card expired.",
     "the server certificate expires next week", "域名为什么续费失败？"),
    ("周末大扫除，把旧衣服捐给社区。",
     "Donated old books to the library on Saturday.",
     "I donated old clothes to the community", "周六把旧书捐给了哪里？"),
    ("体检报告显示轻度脂肪肝，要戒酒。",
     "The annual checkup showed low vitamin D; take supplements.",
     "my health check showed a fatty liver", "年度体检维生素D低要怎么办？"),
    ("缓存命中率突然下降，是因为有人改了键的前缀。",
     "The search index rebuild takes six hours; schedule it for the weekend.",
     "the cache hit rate dropped suddenly", "搜索索引重建要多长时间？"),
    ("下雨天膝盖会疼，医生让我多晒太阳。",
     "Bought rain boots and a new umbrella for the rainy season.",
     "my knees ache when it rains", "雨季买了什么？"),
    ("给儿子买了一台二手自行车，三百块。",
     "Sold the old sofa online for 80 dollars.",
     "I bought my son a used bicycle", "旧沙发在网上卖了多少钱？"),
    ("邻居家的狗晚上一直叫，打算跟物业反映。",
     "The neighbours' kids are having a birthday party in the garden on Sunday.",
     "the neighbour's dog keeps barking at night", "邻居家孩子的生日派对在哪里？"),
    ("合同下个月到期，公司说会续签一年。",
     "Started a new job as a data analyst at a logistics company.",
     "my employment contract expires next month", "新工作是什么职位？"),
    ("火车票买好了，腊月二十八回老家过年。",
     "Rented a car for the road trip along the coast in July.",
     "train tickets to go home for the New Year", "七月沿海自驾租了什么？"),
    ("手机屏幕摔碎了，官方维修要八百。",
     "The laptop battery drains in two hours; ask for a replacement under warranty.",
     "I cracked my phone screen", "笔记本电池很快没电怎么办？"),
]

# Same-language controls: (pair index, language of the memory) -> a question in that language.
SAME: list[tuple[int, str, str]] = [
    (0, "zh", "服务器内存为什么一直涨？"),
    (0, "en", "how much RAM does my laptop have now"),
    (1, "zh", "妈妈什么时候做手术？"),
    (6, "en", "why was the Berlin flight late"),
    (7, "zh", "医生说血压高要注意什么？"),
    (12, "en", "what is the puppy called"),
    (15, "zh", "我对什么食物过敏？"),
    (19, "en", "what broke the build after the Python upgrade"),
    (24, "zh", "厨房漏水谁来修？"),
    (28, "en", "when does the new SSD arrive"),
    (31, "zh", "周末爬山去哪里？"),
    (35, "en", "when is the washing machine delivered"),
    (40, "zh", "证书什么时候过期？"),
    (43, "en", "how long does rebuilding the search index take"),
    (48, "zh", "什么时候回老家过年？"),
    (49, "en", "what is wrong with the laptop battery"),
]

# Memories no question asks for, in both languages (they share words with the questions).
FILLER: list[tuple[str, str]] = [
    ("zh", "明天早上九点开周会，记得准备上周的数据。"),
    ("zh", "超市的鸡蛋打折，买了两盒。"),
    ("zh", "公司年会在十二月二十号，要表演节目。"),
    ("zh", "服务器机房下周六停电维护。"),
    ("zh", "给妈妈买了一台按摩椅作为生日礼物。"),
    ("zh", "医保卡丢了，要去社保局补办。"),
    ("zh", "飞机上看了一部很好看的电影。"),
    ("zh", "周日去图书馆借了三本书。"),
    ("en", "The weekly team meeting moved to Tuesday mornings."),
    ("en", "Mom's phone needs a software update; help her on Sunday."),
    ("en", "Grocery list: eggs, milk, rice, and coffee beans."),
    ("en", "The train to the airport runs every fifteen minutes."),
    ("en", "Memory card of the camera is full; copy the photos to the laptop."),
    ("en", "The hospital parking is expensive; take the bus instead."),
    ("en", "Renewed the library card; it is valid for three more years."),
    ("en", "The server room door code changed to a new number."),
]


def build() -> tuple[list[dict[str, str]], list[dict[str, str]], dict[str, list[tuple[str, str]]]]:
    """The corpus, the questions and the judgements by split (every one grade 1)."""
    corpus: list[dict[str, str]] = []
    queries: list[dict[str, str]] = []
    qrels: dict[str, list[tuple[str, str]]] = {"en2zh": [], "zh2en": [], "same": []}
    for i, (zh, en, q_en, q_zh) in enumerate(PAIRS, 1):
        corpus += [{"_id": f"zh{i:02d}", "title": "", "text": zh, "metadata": {"lang": "zh"}},
                   {"_id": f"en{i:02d}", "title": "", "text": en, "metadata": {"lang": "en"}}]
        queries += [{"_id": f"e2z{i:02d}", "text": q_en}, {"_id": f"z2e{i:02d}", "text": q_zh}]
        qrels["en2zh"].append((f"e2z{i:02d}", f"zh{i:02d}"))
        qrels["zh2en"].append((f"z2e{i:02d}", f"en{i:02d}"))
    for n, (pair, lang, text) in enumerate(SAME, 1):
        queries.append({"_id": f"same{n:02d}", "text": text})
        qrels["same"].append((f"same{n:02d}", f"{lang}{pair + 1:02d}"))
    for n, (lang, text) in enumerate(FILLER, 1):
        corpus.append({"_id": f"filler{n:02d}", "title": "", "text": text, "metadata": {"lang": lang}})
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
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "data" / "crosslingual")
