#!/usr/bin/env python3
"""Write the second current-state set (benchmarks/data/current_apart/, BEIR layout with times).

Written for Engram (licence: the project's); nothing in it comes from a public data set. It was
written apart, on 2026-12-07, by a helper who saw neither Engram's code nor the first set
(benchmarks/current_devset.py), from a one-page brief: facts that change over time, asked about
now, before, or with no cue, in English and Chinese, with traps (newer notes on the same topic
that change nothing). Its first run shaped the `[recency] change_tier` rule, so it is a second
development set now, not an unseen one. See its README.md (written next to the data).

    python benchmarks/current_apart_devset.py     # deterministic (seeded shuffle)
    engram eval beir benchmarks/data/current_apart/big --split current --preset default,semantic
    for d in benchmarks/data/current_apart/tiny/t*; do engram eval beir $d -q; done

Output: big/ (157 notes; splits current, past, stable, plain, test), tiny/t01..t10/ (4-6 notes
each: what a user tries in the first minutes), KEY.md (every question with its answer).
"""
import json
import os
import random
import re
import shutil
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                                                            "current_apart")
NOW = "2026-12-01T12:00:00+00:00"

# ---------------------------------------------------------------- helpers
# A chain is a list of dated statements about one fact (oldest first) plus
# questions about it.  A question is (split, text, rel, answer, keys):
#   rel  = None  -> newest statement only; otherwise list of statement indexes
#   keys = strings that must occur in every relevant statement (sanity check)


def C(cid, notes, *qs):
    return {"id": cid, "notes": notes, "qs": list(qs)}


def cur(text, answer, *keys):
    return ("current", text, None, answer, list(keys))


def plain(text, answer, *keys):
    return ("plain", text, None, answer, list(keys))


def past(text, idx, answer, *keys):
    return ("past", text, list(idx), answer, list(keys))


def stab(text, answer, *keys):
    return ("stable", text, [0], answer, list(keys))


PRESENT = [r"\bnow\b", r"\bcurrently\b", r"\bthese days\b", r"\bat the moment\b",
           r"\bstill\b", r"\banymore\b", "现在", "目前", "如今", "还"]
FORMER = [r"\bbefore\b", r"\bused? to\b", r"\bold\b", r"\bprevious\b", r"\bformer\b",
          r"\boriginally\b", "以前", "之前", "原来", "过去"]


def has_cue(text, cues):
    return any(re.search(c, text, flags=re.I) for c in cues)


# ---------------------------------------------------------------- big store
# Persona: bilingual (English / Chinese) person in the UK.
# Leeds 2022-03 .. 2023-10, Manchester 2023-10 .. 2025-11, Bristol 2025-11 ..
# Northwind Analytics 2022-06 .. 2023-10, Helix Robotics 2023-11 ..

BIG_CHAINS = [
    # ---------------- the user, English
    C("phone", [("2023-02-10", "My phone number is 0176 555 0143, for the forms."),
                ("2025-06-03", "Changed my number, new one is 0151 555 0199. Need to update the bank and the doctor.")],
      cur("What is my phone number now?", "0151 555 0199", "0151 555 0199"),
      past("What was my old phone number?", [0], "0176 555 0143", "0176 555 0143")),
    C("car", [("2022-04-18", "Bought a used Honda Civic, silver, 2016 model. 61k miles on the clock."),
              ("2024-09-12", "Sold the Civic, got a Model 3 — picking it up Friday.")],
      cur("What car do I drive now?", "A Tesla Model 3 (since Sept 2024)", "Model 3")),
    C("city", [("2022-03-01", "Signed the lease on a flat in Leeds, Hyde Park area. Moving in on the 15th."),
               ("2023-10-20", "Moving to Manchester for the new job — flat in Ancoats, keys on Saturday."),
               ("2025-11-08", "Settled into the new place in Bristol, Clifton. Boxes finally unpacked.")],
      cur("Which city do I live in these days?", "Bristol (Clifton)", "Bristol"),
      past("Which city did I live in before Manchester?", [0], "Leeds", "Leeds")),
    C("job", [("2022-06-06", "Started at Northwind Analytics as a junior data analyst."),
              ("2023-11-01", "First day at Helix Robotics tomorrow — team lead for the data platform.")],
      cur("Where do I work at the moment?", "Helix Robotics (team lead, data platform)", "Helix Robotics"),
      past("Which company did I work for before my current one?", [0], "Northwind Analytics", "Northwind")),
    C("coffee", [("2022-02-14", "Can't start the day without two flat whites."),
                 ("2024-07-22", "Three weeks off caffeine and the headaches are gone. Rooibos every morning instead.")],
      cur("Do I drink coffee anymore?", "No — off caffeine since mid-2024; rooibos in the mornings", "caffeine"),
      past("What did I use to drink in the mornings?", [0], "Two flat whites", "flat white")),
    C("laptop", [("2022-07-01", "New work laptop: ThinkPad X1 Carbon, 16GB."),
                 ("2024-02-15", "Got issued a MacBook Pro 14 at work, handed back the old machine.")],
      cur("我现在工作用的是什么电脑？", "MacBook Pro 14", "MacBook Pro 14"),
      past("What was my previous work laptop?", [0], "ThinkPad X1 Carbon", "ThinkPad")),
    C("gp", [("2022-05-11", "My GP is Dr. Harrow at Woodhouse Surgery."),
             ("2025-12-02", "Registered with the practice round the corner; Dr. Mensah is my new GP.")],
      cur("Who is my GP now?", "Dr. Mensah", "Mensah")),
    C("lang", [("2022-01-15", "Started learning Spanish on Duolingo, 10 minutes a day."),
               ("2024-05-07", "Dropped Spanish. Signed up for Japanese classes on Tuesday evenings.")],
      cur("Which language am I learning currently?", "Japanese (Tuesday evening classes)", "Japanese")),
    C("pb", [("2022-10-02", "10k personal best: 52:40. Legs are dead."),
             ("2025-03-16", "New PB at the Bath 10k: 48:15!")],
      cur("What's my 10k personal best now?", "48:15", "48:15"),
      past("What was my previous 10k PB?", [0], "52:40", "52:40")),
    C("email", [("2022-01-20", "Personal email: jing.liu88@hotmail.example"),
                ("2023-05-04", "Moved my personal email to jingliu@outlook.example, hotmail was drowning in spam."),
                ("2025-08-19", "Set up my own domain: hello@jingliu.example is my personal email from now on.")],
      cur("What's my personal email address now?", "hello@jingliu.example", "hello@jingliu.example")),
    C("salary", [("2022-06-07", "Salary: £31,000 to start."),
                 ("2024-04-03", "Raise came through: £58k from this month.")],
      cur("What is my salary these days?", "£58k", "£58k")),
    C("rent", [("2022-03-02", "Rent is £725 a month, bills included."),
               ("2023-10-22", "New flat's rent is £1,050 a month, bills on top."),
               ("2025-11-10", "Rent on the new place: £1,380 a month. Ouch.")],
      cur("How much rent do I pay now?", "£1,380 a month", "£1,380")),
    C("instrument", [("2022-12-27", "Bought a second-hand acoustic guitar off Gumtree, practising chords."),
                     ("2024-11-05", "Sold the guitar. Cello lessons start next week with a teacher from the conservatoire.")],
      cur("What instrument am I playing these days?", "Cello", "Cello")),
    C("insurance", [("2022-04-20", "Car insurance with Admiral, renews every April."),
                    ("2025-04-09", "Moved the car insurance to Direct Line — £140 cheaper.")],
      cur("Who is my car insurance with now?", "Direct Line", "Direct Line")),
    C("takeaway", [("2022-06-24", "Our go-to takeaway is Lotus Garden on Woodhouse Lane."),
                   ("2025-12-20", "New favourite takeaway: Sabai Thai, two streets away. The green curry!")],
      cur("What's my go-to takeaway at the moment?", "Sabai Thai", "Sabai Thai")),
    C("saturday", [("2022-05-14", "Volunteering Saturday mornings at the food bank on Kirkstall Road."),
                   ("2024-04-13", "Gave up my volunteering slot — coaching the under-10s football team on Saturday mornings from this season.")],
      cur("What do I do on Saturday mornings now?", "Coach the under-10s football team", "under-10s")),
    C("kenji", [("2022-03-20", "New flatmate: Kenji, software tester from Osaka. Seems tidy."),
                ("2023-10-29", "Living on my own for the first time ever. Weirdly quiet.")],
      cur("Do I still live with Kenji?", "No — living alone since Oct 2023", "on my own")),
    C("haircolour", [("2023-07-01", "Dyed my hair blue for Glastonbury!"),
                     ("2024-02-10", "Blue is all grown out — back to my natural black.")],
      cur("What colour is my hair at the moment?", "Natural black", "natural black")),
    C("meds", [("2022-05-19", "Taking 10mg cetirizine every morning for hay fever."),
               ("2025-05-06", "Doctor switched me to fexofenadine 180mg, much less drowsy.")],
      cur("Which hay fever tablet am I taking now?", "Fexofenadine 180mg", "fexofenadine"),
      past("What hay fever medicine did I take before?", [0], "Cetirizine 10mg", "cetirizine")),
    C("manager", [("2022-06-08", "My manager is Greg Hollis. Seems decent, very dry humour."),
                  ("2023-11-03", "First one-on-one with my new manager, Aisha Karim."),
                  ("2025-07-14", "After the restructure I report to Ben Ortiz.")],
      cur("Who is my manager now?", "Ben Ortiz", "Ben Ortiz"),
      past("Who were my previous managers?", [0, 1], "Greg Hollis, then Aisha Karim", "manager")),
    # ---------------- the user, Chinese
    C("gym", [("2022-09-05", "办了健身卡，家附近的力健健身房，每周去三次。"),
              ("2024-03-18", "退了力健的卡，改去岩时攀岩馆了，一周两次，比举铁有意思。")],
      cur("我现在去哪家健身场馆锻炼？", "岩时攀岩馆", "岩时")),
    C("diet", [("2023-01-10", "从今天开始吃素，鸡蛋和牛奶也不碰了。"),
               ("2025-04-02", "体检后医生说蛋白质不够，又开始吃鱼和鸡蛋了。")],
      cur("我目前还吃素吗？", "不再纯吃素：2025年4月起又开始吃鱼和鸡蛋", "吃鱼和鸡蛋")),
    C("commute", [("2022-10-10", "每天骑自行车上班，二十分钟就到。"),
                  ("2023-11-06", "搬家以后离公司远了，改坐火车通勤，单程四十分钟。"),
                  ("2025-12-15", "现在基本在家办公，每周三坐大巴去一次办公室。")],
      cur("我现在是怎么去上班的？", "基本在家办公，每周三坐大巴去一次办公室", "大巴")),
    C("weight", [("2022-03-20", "体重 82 公斤，得减肥了。"),
                 ("2024-01-08", "今天称了一下，76 公斤，继续。"),
                 ("2026-02-14", "71 公斤！目标达成。")],
      cur("我现在体重多少？", "71 公斤", "71"),
      past("我以前最重的时候有多少公斤？", [0], "82 公斤", "82")),
    C("sleep", [("2022-11-02", "每天晚上十二点以后才睡，早上起不来。"),
                ("2025-01-12", "最近十点半就上床，早上六点起来拉伸。")],
      cur("我现在一般几点睡觉？", "十点半", "十点半"),
      past("我以前几点才睡？", [0], "十二点以后", "十二点以后")),
    C("handset", [("2022-05-12", "换了新手机，华为 Mate 40，拍照很好。"),
                  ("2024-08-30", "屏幕摔碎了，干脆换了 iPhone 15。")],
      cur("我现在用的是什么手机？", "iPhone 15", "iPhone 15")),
    C("book", [("2025-11-03", "在读《三体》第二部，黑暗森林太精彩了。"),
               ("2026-07-20", "《三体》看完了，开始看《百年孤独》，人名太难记。")],
      cur("我目前在读什么书？", "《百年孤独》", "百年孤独")),
    C("netflix", [("2022-10-20", "订了 Netflix 和爱奇艺两个会员。"),
                  ("2025-10-30", "把 Netflix 退订了，反正没时间看，只留爱奇艺。")],
      cur("我现在还订着 Netflix 吗？", "没有，2025年10月退订了，只留爱奇艺", "退订")),
    C("glasses", [("2022-07-22", "配了新眼镜，近视 300 度。"),
                  ("2024-05-18", "验光：近视 350 度，镜片换了。"),
                  ("2026-06-09", "又验光了，近视涨到 425 度，得少看手机。")],
      cur("我现在近视多少度？", "425 度", "425")),
    C("wifi", [("2022-03-16", "家里 WiFi 密码：maple2022!"),
               ("2025-11-12", "换了新路由器，WiFi 密码改成 tidepool-88。")],
      cur("What's the home WiFi password now?", "tidepool-88", "tidepool-88"),
      past("原来家里的 WiFi 密码是什么？", [0], "maple2022!", "maple2022!")),
    C("students", [("2022-09-18", "周末开始在线教中文，现在有三个学生。"),
                   ("2024-02-25", "又来了两个新学生，一共五个。"),
                   ("2026-03-08", "学生增加到八个了，周日排得满满的。")],
      cur("我目前周末教几个学生？", "八个", "八个")),
    C("chol", [("2023-04-11", "体检：总胆固醇 6.2，偏高，医生让少吃油炸。"),
               ("2025-04-01", "复查结果：总胆固醇 4.9，正常了。")],
      cur("我的胆固醇现在正常吗？", "正常，复查为 4.9", "4.9"),
      past("我之前的胆固醇是多少？", [0], "6.2（偏高）", "6.2")),
    C("carrier", [("2022-03-05", "Phone plan: giffgaff, £10 a month."),
                  ("2025-06-01", "手机套餐换成了 Vodafone，每月 18 镑，流量不限。")],
      cur("我现在用的是哪家的手机套餐？", "Vodafone（每月 18 镑）", "Vodafone")),
    # ---------------- other people, English
    C("mei", [("2022-09-10", "My sister Mei moved to Lisbon for her PhD."),
              ("2025-01-20", "Mei finished the PhD and took a postdoc in Zurich, she flies out in February.")],
      cur("Where does my sister Mei live now?", "Zurich", "Zurich"),
      past("我妹妹 Mei 之前住在哪个城市？", [0], "Lisbon（里斯本）", "Lisbon")),
    C("priya", [("2024-01-15", "Priya is the QA lead on our team now — great news for release quality."),
                ("2025-09-02", "Reorg: Priya moved over to product management and Tom took over as QA lead.")],
      cur("What is Priya's role at the moment?", "Product management", "product management"),
      cur("Who is our team's QA lead currently?", "Tom", "Tom")),
    C("dan", [("2022-05-30", "Dan's new address: 14 Marsh Lane, Sheffield S6 2QR."),
              ("2024-10-12", "Dan and Lucy bought a house! 3 Orchard Close, York YO24 1AB.")],
      cur("What is Dan's address now?", "3 Orchard Close, York YO24 1AB", "3 Orchard Close"),
      past("What was Dan's old address?", [0], "14 Marsh Lane, Sheffield S6 2QR", "14 Marsh Lane")),
    C("sophie", [("2023-06-18", "Sophie got engaged to Marco! Ring is gorgeous."),
                 ("2024-09-21", "Sophie and Marco's wedding in Porto — best weekend of the year.")],
      cur("Is Sophie still engaged to Marco?", "No — they got married (wedding in Porto, Sept 2024)", "wedding")),
    C("olu", [("2022-09-12", "Olu is teaching maths at a secondary school in Leicester."),
              ("2024-01-22", "Olu has started a nursing degree — evenings and weekends, mad schedule."),
              ("2026-08-05", "Olu qualified! Staff nurse at Leicester Royal Infirmary from next month.")],
      cur("What does Olu do these days?", "Staff nurse at Leicester Royal Infirmary", "Staff nurse")),
    C("bookclub", [("2022-04-07", "Book club meets the first Thursday of the month at The Crown."),
                   ("2023-10-25", "Book club has gone online — Zoom, second Tuesday of the month."),
                   ("2025-06-10", "Book club is back in person: last Sunday of the month at Anna's flat.")],
      cur("When does the book club meet these days?", "Last Sunday of the month, at Anna's flat", "last Sunday")),
    # ---------------- other people, Chinese
    C("parents", [("2022-07-15", "爸妈还住在成都的老房子里，不愿意搬。"),
                  ("2024-06-01", "爸妈搬到深圳去了，帮哥哥带孩子。")],
      cur("我爸妈如今住在哪个城市？", "深圳", "深圳"),
      past("我父母以前住在哪里？", [0], "成都（老房子）", "成都")),
    C("brother", [("2022-08-08", "哥哥在华为做硬件工程师，天天加班。"),
                  ("2025-05-25", "哥哥辞职了，在南山区开了一家精品咖啡馆。")],
      cur("What does my brother do for work now?", "Runs his own specialty coffee shop (咖啡馆) in Nanshan", "咖啡馆")),
    C("cousin", [("2023-09-01", "表妹考上了浙江大学，读临床医学。"),
                 ("2024-09-10", "表妹转专业了，从医学转到了计算机。")],
      cur("表妹现在读什么专业？", "计算机", "计算机")),
    C("lina", [("2022-12-01", "李娜去新加坡工作了，在一家银行做风控。"),
               ("2025-03-03", "李娜回国了，现在在杭州阿里上班。")],
      cur("李娜现在在哪里工作？", "杭州，阿里", "杭州")),
    C("mum", [("2022-11-20", "妈妈还在医院当护士，说明年退休。"),
              ("2023-12-28", "妈妈正式退休了，每天在社区跳广场舞。")],
      cur("我妈现在还在上班吗？", "不上班了，2023年底正式退休", "正式退休")),
]

# changed facts asked WITHOUT any time cue (answer = newest)
BIG_PLAIN = [
    C("barber", [("2022-08-03", "Haircut at Snip & Co, asked for Carla again."),
                 ("2025-12-30", "Found a barber near the new flat — Marcus at Fade Room. Best fade I've had.")],
      plain("Who cuts my hair?", "Marcus at Fade Room", "Marcus")),
    C("shoes", [("2022-09-25", "Running in Brooks Ghost 14s, 300 miles so far."),
                ("2024-06-14", "Switched to Hoka Clifton 9s. Knees are thanking me.")],
      plain("Which running shoes do I use?", "Hoka Clifton 9", "Hoka Clifton 9")),
    C("desk", [("2023-11-08", "新工位在三楼靠窗，阳光很好。"),
               ("2025-01-06", "公司调整座位，我搬到五楼会议室旁边了。")],
      plain("我的工位在几楼？", "五楼（会议室旁边）", "五楼")),
    C("nephew", [("2023-03-10", "My nephew Sam is into dinosaurs — wants a T-rex for his birthday."),
                 ("2025-11-22", "Sam's obsessed with space, asked for a telescope for Christmas.")],
      plain("What is my nephew Sam into?", "Space (wants a telescope)", "space")),
    C("grandpa", [("2022-10-01", "爷爷一个人住在乡下老家，每天种菜。"),
                  ("2025-02-10", "爷爷搬进了镇上的养老院，说那边人多热闹。")],
      plain("爷爷住在哪里？", "镇上的养老院", "养老院")),
    C("hannah", [("2023-02-18", "Hannah's dating a guy called Ravi, they met at climbing."),
                 ("2025-08-09", "Hannah and Ravi split up; she's seeing someone called Joe.")],
      plain("Who is Hannah dating?", "Joe", "Joe")),
    C("bank", [("2022-06-10", "工资卡是 Barclays 的。"),
               ("2024-05-20", "把工资账户转到了 Monzo，App 好用多了。")],
      plain("我的工资打到哪个银行？", "Monzo", "Monzo")),
    C("team", [("2023-11-20", "My team is 4 people, including me."),
               ("2025-10-01", "Team has grown to 11 after the hiring round.")],
      plain("How many people are on my team?", "11", "11")),
    C("group", [("2022-07-01", "大学同学群的群主是班长刘洋。"),
                ("2024-12-12", "刘洋把同学群的群主转给了陈晨。")],
      plain("大学同学群的群主是谁？", "陈晨", "陈晨")),
    C("locker", [("2024-04-20", "Climbing gym locker code is 4471."),
                 ("2025-06-15", "Locker combo got reset, new code 9032.")],
      plain("What's my locker code at the climbing gym?", "9032", "9032")),
]

# never-changed facts asked with a present cue; each has a newer distractor
BIG_STABLE = [
    C("allergy", [("2022-08-14", "Found out I'm allergic to penicillin — hives everywhere after the antibiotics.")],
      stab("Am I still allergic to penicillin?", "Yes — allergic to penicillin (nothing newer says otherwise)", "penicillin")),
    C("blood", [("2022-11-03", "Donor card arrived: blood group O negative.")],
      stab("What is my blood group currently?", "O negative", "O negative")),
    C("zhaolei", [("2022-05-05", "赵磊在北京一家律所当律师，专做知识产权。")],
      stab("赵磊现在做什么工作？", "北京一家律所的律师（知识产权）", "律师")),
    C("passport", [("2022-02-28", "Passport renewed, expires 14 March 2032.")],
      stab("我的护照目前什么时候到期？", "2032年3月14日", "14 March 2032")),
    C("dad", [("2023-05-12", "爸爸退休后迷上了钓鱼，每周都去水库。")],
      stab("爸爸现在的爱好是什么？", "钓鱼", "钓鱼")),
    C("football", [("2022-08-06", "I support Everton, always have, always will.")],
      stab("Which football team do I support these days?", "Everton", "Everton")),
    C("cat", [("2022-12-05", "家里的猫叫年糕，三岁，白色的。")],
      stab("What's my cat's name now?", "年糕 (Niangao)", "年糕")),
    C("danveg", [("2022-11-12", "Dan has been vegetarian for ten years — remember when cooking.")],
      stab("Is Dan still vegetarian?", "Yes (nothing newer says otherwise)", "vegetarian")),
    C("grandma", [("2022-04-22", "外婆一直住在重庆，说什么都不肯搬。")],
      stab("外婆现在住在哪里？", "重庆", "重庆")),
    C("nhs", [("2022-05-11", "NHS number: 485 777 3456 (keep this handy).")],
      stab("What's my NHS number at the moment?", "485 777 3456", "485 777 3456")),
    C("aunt", [("2022-09-30", "姑姑一家住在温哥华，开了一家川菜馆。")],
      stab("姑姑目前在哪里生活？", "温哥华", "温哥华")),
    C("bikelock", [("2023-04-02", "Bike lock code: 3194.")],
      stab("What's my bike lock code now?", "3194", "3194")),
]

# distractors: share words with questions but answer none of them
BIG_DISTRACTORS = [
    ("2026-04-03", "Sophie's allergic to cats, so we met at the café instead of my place."),
    ("2025-10-14", "Blood test results are back — iron levels fine now."),
    ("2026-10-10", "赵磊来伦敦出差，约了周六一起吃饭。"),
    ("2026-06-20", "Helped Dad fill in his passport renewal form online."),
    ("2026-07-19", "哥哥周末带侄子去海边钓鱼，钓到一条小鲈鱼。"),
    ("2026-07-20", "Watched the World Cup final at the pub — football is too stressful."),
    ("2026-05-02", "邻居家新养了一只猫，叫汤圆，天天来我们阳台。"),
    ("2026-09-05", "Cooked a vegetarian lasagne for the team potluck, went down well."),
    ("2026-03-15", "舅舅一家搬去了西安，说那边房价低。"),
    ("2025-12-03", "NHS app finally working — booked a blood test through it."),
    ("2025-08-25", "姑姑的女儿去多伦多读大学了。"),
    ("2026-08-22", "Changed the code on the garage door keypad."),
    ("2026-10-28", "Spent forty minutes on hold to the council's phone line. Never again."),
    ("2026-09-06", "Test drove a Kia EV6 just for fun. Not buying anything."),
    ("2026-08-16", "Weekend in Edinburgh — could honestly live there one day."),
    ("2026-11-04", "同事说他现在每天骑车上班，我有点羡慕。"),
    ("2026-05-23", "哥哥说想换一台新手机，让我帮他看看。"),
    ("2025-12-08", "Priya's manager wants weekly status reports from her now."),
    ("2026-07-07", "Read an article on coffee and sleep — apparently caffeine's half-life is about 5 hours."),
    ("2026-02-20", "下个月十号约了体检，记得空腹。"),
    ("2026-03-13", "Kenji's birthday drinks on Friday, he's turning 35."),
    ("2026-06-27", "My old uni laptop still boots! Gave it to Sam for Minecraft."),
    ("2026-09-18", "李娜推荐了《置身事内》，已经下单，还没开始看。"),
    ("2025-08-12", "楼下新开了一家咖啡馆，装修很漂亮，还没进去过。"),
    ("2025-09-27", "Salary negotiations for the new hires are dragging on."),
    ("2026-11-15", "朋友问我近视手术值不值得做，我也不知道。"),
    ("2026-01-30", "Dan sent photos of the new kitchen — they finally redid it."),
]

# ---------------------------------------------------------------- tiny stores
TINY = {
    "t01": ([
        C("live", [("2023-03-02", "I live in Leeds."), ("2026-05-10", "Moved to Bristol last week.")],
          cur("Where do I live now?", "Bristol", "Bristol"),
          past("Where did I live before?", [0], "Leeds", "Leeds")),
        C("film", [("2023-04-01", "My favourite film is Paddington 2.")],
          stab("What's my favourite film at the moment?", "Paddington 2", "Paddington 2")),
    ], [("2026-05-11", "Watched a new film last night, it was fine, nothing special."),
        ("2026-05-12", "Dentist appointment Thursday at 3pm."),
        ("2026-05-13", "Buy oat milk and AA batteries.")]),
    "t02": ([
        C("live", [("2023-06-01", "我住在上海浦东。"), ("2026-04-20", "上个月搬到杭州了，新家在西湖区。")],
          cur("我现在住在哪里？", "杭州西湖区", "杭州"),
          past("我以前住在哪个城市？", [0], "上海（浦东）", "上海")),
        C("fruit", [("2023-06-05", "我最喜欢的水果是芒果。")],
          stab("我现在最喜欢的水果是什么？", "芒果", "芒果")),
    ], [("2026-04-22", "超市芒果打折，买了一箱分给同事。"),
        ("2026-04-23", "明天下午三点开项目会。")]),
    "t03": ([
        C("job", [("2023-06-12", "Started as a barista at Bean There on Park Street."),
                  ("2026-02-02", "Got the junior developer job at Cobalt Labs! Starting Monday.")],
          cur("Where do I work now?", "Cobalt Labs (junior developer)", "Cobalt Labs"),
          past("What was my previous job?", [0], "Barista at Bean There", "barista")),
    ], [("2026-02-03", "Call the landlord about the boiler."),
        ("2026-02-04", "Reading The Overstory, halfway through.")]),
    "t04": ([
        C("mine", [("2023-09-01", "My number is 07700 900789.")],
          stab("What is my phone number currently?", "07700 900789", "07700 900789")),
        C("tom", [("2024-01-10", "My brother Tom's number is 07700 900123."),
                  ("2026-03-15", "Tom got a new number: 07700 900456.")],
          cur("What's Tom's number now?", "07700 900456", "07700 900456"),
          past("What was Tom's old number?", [0], "07700 900123", "07700 900123")),
    ], [("2026-03-16", "Tom's birthday is on 3 April, get him something nice."),
        ("2026-03-17", "Pay the electricity bill.")]),
    "t05": ([
        C("car", [("2023-05-20", "我的车是一辆白色的丰田卡罗拉。"),
                  ("2026-04-02", "Traded in my old car; picked up a VW ID.3 today — electric at last!")],
          cur("What car do I have now?", "A VW ID.3", "ID.3"),
          past("What car did I drive before?", [0], "A white Toyota Corolla (丰田卡罗拉)", "卡罗拉")),
    ], [("2026-04-05", "周六去爬山，记得带水。"),
        ("2026-04-06", "The car wash on Elm Street is closing down.")]),
    "t06": ([
        C("blood", [("2023-02-14", "My blood type is A positive.")],
          stab("What is my blood type now?", "A positive", "A positive")),
        C("peanut", [("2023-02-20", "I'm allergic to peanuts.")],
          stab("Am I still allergic to peanuts?", "Yes", "peanuts")),
        C("gym", [("2023-03-01", "Joined PureGym on Hill Street."),
                  ("2026-01-09", "Cancelled my gym membership — doing yoga at home instead.")],
          cur("Do I still go to PureGym?", "No — cancelled the membership, does yoga at home", "Cancelled")),
    ], [("2026-01-15", "Gave blood today for the first time in years."),
        ("2026-01-20", "Sam's party: no peanuts allowed, school rule.")]),
    "t07": ([
        C("lin", [("2024-03-01", "女朋友小林在招商银行上班。"),
                  ("2026-03-10", "小林辞职了，现在在读研究生。")],
          cur("小林现在做什么？", "在读研究生", "研究生"),
          past("小林以前在哪里工作？", [0], "招商银行", "招商银行")),
        C("rabbit", [("2024-05-01", "我养了一只兔子，叫球球。")],
          stab("我现在养的兔子叫什么？", "球球", "球球")),
    ], [("2026-03-12", "我的银行卡下个月到期，要去换卡。"),
        ("2026-03-14", "朋友家的兔子生了四只小兔子。"),
        ("2026-03-15", "周末大扫除。")]),
    "t08": ([
        C("phone", [("2022-11-01", "New phone: Pixel 6."),
                    ("2024-02-10", "Switched to an iPhone 13."),
                    ("2026-05-05", "Back on Android — Pixel 9 this time.")],
          cur("What phone do I use now?", "Pixel 9", "Pixel 9"),
          past("Which phones did I use before?", [0, 1], "Pixel 6, then iPhone 13", "")),
    ], [("2026-05-06", "Need a new phone case, the old one's cracked."),
        ("2026-05-07", "Mum's birthday dinner on Saturday.")]),
    "t09": ([
        C("instr", [("2023-01-10", "我在学吉他，每周练三次。"),
                    ("2026-02-01", "Started piano lessons with Mrs Hughes; that's my instrument from now on.")],
          cur("我现在在学什么乐器？", "钢琴 (piano lessons with Mrs Hughes)", "piano"),
          past("我以前学的是什么乐器？", [0], "吉他", "吉他")),
        C("work", [("2023-01-15", "I work as a nurse at St Mary's Hospital.")],
          stab("Do I still work at St Mary's?", "Yes — nurse at St Mary's Hospital", "St Mary's Hospital")),
    ], [("2026-02-05", "St Mary's school reunion is in June."),
        ("2026-02-07", "Tickets for the violin recital on Saturday.")]),
    "t10": ([
        C("run", [("2023-04-01", "我每天早上跑步五公里。"),
                  ("2026-03-20", "膝盖受伤了，医生让我别跑了，改成游泳。")],
          cur("我现在还跑步吗？", "不跑了（膝盖受伤），改成游泳", "别跑了"),
          cur("我如今用什么方式锻炼？", "游泳", "游泳"),
          past("我以前每天早上做什么运动？", [0], "跑步五公里", "跑步")),
        C("job", [("2023-04-05", "我在一家设计公司做 UI 设计师。")],
          stab("我目前的职业是什么？", "UI 设计师（设计公司）", "UI 设计师")),
    ], [("2026-03-22", "公司楼下开了一家设计书店。"),
        ("2026-03-23", "给妈妈打电话。")]),
}

# ---------------------------------------------------------------- building


def is_zh(text):
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def build(outdir, chains, distractors, seed, split_files, test_from):
    """Return (notes, queries, qrels_by_split, key_rows, warnings)."""
    rng = random.Random(seed)
    notes = []   # dicts with internal refs
    qs = []
    for ch in chains:
        ds = [d for d, _ in ch["notes"]]
        assert ds == sorted(ds) and len(set(ds)) == len(ds), ch["id"]
        for i, (d, t) in enumerate(ch["notes"]):
            notes.append({"ref": (ch["id"], i), "date": d, "text": t})
        for (split, text, rel, ans, keys) in ch["qs"]:
            if rel is None:
                rel = [len(ch["notes"]) - 1]
            qs.append({"chain": ch, "split": split, "text": text, "rel": rel,
                       "answer": ans, "keys": [k for k in keys if k]})
    for j, (d, t) in enumerate(distractors):
        notes.append({"ref": ("_distractor", j), "date": d, "text": t})

    texts = [n["text"] for n in notes]
    assert len(set(texts)) == len(texts), "duplicate note text"

    # ---- content sanity checks
    warnings = []
    for q in qs:
        ch, t = q["chain"], q["text"]
        if q["split"] in ("current", "stable"):
            assert has_cue(t, PRESENT), f"no present cue: {t}"
            assert not has_cue(t, FORMER), f"former cue in present q: {t}"
        elif q["split"] == "past":
            assert has_cue(t, FORMER), f"no former cue: {t}"
            assert not has_cue(t, PRESENT), f"present cue in past q: {t}"
        elif q["split"] == "plain":
            assert not has_cue(t, PRESENT) and not has_cue(t, FORMER), f"cue in plain q: {t}"
        for k in q["keys"]:
            for i in q["rel"]:
                assert k.lower() in ch["notes"][i][1].lower(), (k, ch["notes"][i][1])
            # other statements of the same chain must not carry the key
            # (skip generic keys shared by every statement, e.g. 'manager')
            others = [s for i, (_, s) in enumerate(ch["notes"]) if i not in q["rel"]]
            if q["split"] in ("current", "plain", "past") and k != "manager":
                for s in others:
                    assert k.lower() not in s.lower(), f"key {k!r} also in non-relevant {s!r}"
            # anywhere else in the store -> warn for human review
            for n in notes:
                if n["ref"][0] != ch["id"] and k.lower() in n["text"].lower():
                    warnings.append(f"[{os.path.basename(outdir)}] key {k!r} of {t!r} also in: {n['text']}")

    # ---- timestamps, shuffle, ids
    for n in notes:
        h, m = rng.randint(7, 22), rng.randint(0, 59)
        n["ts"] = f"{n['date']}T{h:02d}:{m:02d}:00+00:00"
        assert n["ts"] < NOW
    rng.shuffle(notes)
    for i, n in enumerate(notes, 1):
        n["_id"] = f"n{i:03d}"
    by_ref = {n["ref"]: n["_id"] for n in notes}
    rng.shuffle(qs)
    for i, q in enumerate(qs, 1):
        q["_id"] = f"q{i:03d}"
        q["rel_ids"] = sorted(by_ref[(q["chain"]["id"], r)] for r in q["rel"])

    # ---- write
    if os.path.exists(outdir):
        shutil.rmtree(outdir)
    os.makedirs(os.path.join(outdir, "qrels"))
    with open(os.path.join(outdir, "corpus.jsonl"), "w", encoding="utf-8") as f:
        for n in sorted(notes, key=lambda n: n["_id"]):
            f.write(json.dumps({"_id": n["_id"], "title": "", "text": n["text"],
                                "timestamp": n["ts"]}, ensure_ascii=False) + "\n")
    with open(os.path.join(outdir, "queries.jsonl"), "w", encoding="utf-8") as f:
        for q in qs:
            f.write(json.dumps({"_id": q["_id"], "text": q["text"], "now": NOW},
                               ensure_ascii=False) + "\n")

    def write_qrels(name, qlist):
        with open(os.path.join(outdir, "qrels", name + ".tsv"), "w", encoding="utf-8") as f:
            f.write("query-id\tcorpus-id\tscore\n")
            for q in sorted(qlist, key=lambda q: q["_id"]):
                for cid in q["rel_ids"]:
                    f.write(f"{q['_id']}\t{cid}\t1\n")

    counts = {}
    for s in split_files:
        ql = [q for q in qs if q["split"] == s]
        if ql:
            write_qrels(s, ql)
            counts[s] = len(ql)
    tl = [q for q in qs if q["split"] in test_from]
    write_qrels("test", tl)
    counts["test"] = len(tl)
    return notes, qs, counts, warnings


def stats_lang(notes, qs):
    nz = sum(is_zh(n["text"]) for n in notes)
    qz = sum(is_zh(q["text"]) for q in qs)
    cross = sum(1 for q in qs
                if any(is_zh(q["chain"]["notes"][i][1]) != is_zh(q["text"]) for i in q["rel"]))
    return nz, qz, cross


def key_section(title, notes, qs):
    text_of = {n["_id"]: n["text"] for n in notes}
    out = [f"## {title}", "", "| query | split | question | answer | relevant notes |", "|---|---|---|---|---|"]
    for q in sorted(qs, key=lambda q: q["_id"]):
        rel = "<br>".join(f"{c}: {text_of[c]}" for c in q["rel_ids"])
        cells = [q["_id"], q["split"], q["text"], q["answer"], rel]
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    out.append("")
    return out


def main():
    all_warn = []
    key = ["# KEY — temporal memory evaluation sets", "",
           f"All queries use now = {NOW}. Generated by benchmarks/current_apart_devset.py (hand-written content, seeded shuffle).", ""]

    big_dir = os.path.join(ROOT, "big")
    notes, qs, counts, w = build(big_dir, BIG_CHAINS + BIG_PLAIN + BIG_STABLE, BIG_DISTRACTORS,
                                 seed=20261201, split_files=["current", "past", "stable", "plain"],
                                 test_from={"current", "past", "stable"})
    all_warn += w
    nz, qz, cross = stats_lang(notes, qs)
    chains3 = sum(1 for c in BIG_CHAINS + BIG_PLAIN if len(c["notes"]) == 3)
    print(f"big: {len(notes)} notes ({nz} zh), {len(qs)} queries ({qz} zh, {cross} cross-language), "
          f"3-statement chains: {chains3}, splits: {counts}")
    key += [f"Notes: {len(notes)} ({nz} Chinese). Queries: {len(qs)} ({qz} Chinese, {cross} cross-language). "
            f"Split counts: {counts}.", ""]
    key += key_section("big", notes, qs)

    tiny_root = os.path.join(ROOT, "tiny")
    if os.path.exists(tiny_root):
        shutil.rmtree(tiny_root)
    for i, (name, (chains, distr)) in enumerate(sorted(TINY.items())):
        d = os.path.join(tiny_root, name)
        notes, qs, counts, w = build(d, chains, distr, seed=1000 + i,
                                     split_files=["current", "past", "stable"],
                                     test_from={"current", "past", "stable"})
        all_warn += w
        assert 4 <= len(notes) <= 10 and 2 <= len(qs) <= 5, name
        print(f"tiny/{name}: {len(notes)} notes, {len(qs)} queries, splits: {counts}")
        key += key_section(f"tiny/{name} ({len(notes)} notes)", notes, qs)

    with open(os.path.join(ROOT, "KEY.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(key))
    print(f"\n{len(all_warn)} key-overlap warnings (review by hand):")
    for x in all_warn:
        print("  ", x)


if __name__ == "__main__":
    main()
