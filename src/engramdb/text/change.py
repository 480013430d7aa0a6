"""Whether a statement says that something changed: "Moved to Bristol last week", "换了一辆比亚迪".

A note that updates a fact usually says so: it names the move, the switch, the new thing, what
stopped or what is the case now ("Sold the Honda and bought a Kia", "Cancelled my gym
membership; doing yoga at home instead", "从阿里离职了", "密码改成了 qwer8888"). A newer note that
merely shares the topic does not ("Gave blood today", "赵磊来伦敦出差"): it is no news about the
fact asked after. The `recency` stage reads this cue to tell the two apart where the embedding
cannot (in a store of a few notes the update and the trap are equally close to the old fact).

The lists are words of change, of beginning and ending, of the new and of the present, in both
languages. One regular expression each, so a text is read once, in linear time.
"""

from __future__ import annotations

import re

__all__ = ["says_change", "says_plan"]

_EN = re.compile(
    r"\b(?:"
    # moving, switching, replacing
    r"mov(?:e|ed|ing)\s+(?:to|into|in|out|up|over|back|house|all)|moved|relocat\w*|switch(?:ed|ing)?|swapp?(?:ed|ing)|"
    r"chang(?:ed|ing)|replac(?:ed|ing)|upgrad(?:ed|ing)|downgrad(?:ed|ing)|migrat(?:ed|ing)|transferr?(?:ed|ing)|"
    r"convert(?:ed|ing)|traded\s+in|went\s+(?:up|down|back|vegetarian|vegan|freelance|part[- ]time|full[- ]time)|"
    r"(?:gone|going)\s+(?:up|down|back)|back\s+to|returned\s+to|turned\s+into|"
    # ending
    r"quit|quitting|stopp(?:ed|ing)|gave\s+up|giv(?:e|ing)\s+up|dropp(?:ed|ing)\s+(?:out|the|my)|cancell?(?:ed|ing)|"
    r"sold|left|leaving|resign(?:ed|ing)|retir(?:ed|ing)|fired|laid\s+off|ended|finish(?:ed|ing)\s+(?:with|my)|"
    r"split\s+up|broke\s+up|divorc(?:ed|ing)|separated|closed|died|passed\s+away|no\s+longer|any\s*more|"
    # beginning
    r"start(?:ed|ing)?|began|begun|join(?:ed|ing)|took\s+up|taken\s+up|sign(?:ed|ing)\s+up|enroll?(?:ed|ing)|"
    r"hired|promot(?:ed|ion)|demoted|became|become|took\s+over|tak(?:e|es|ing)\s+over|succeeded|got\s+(?:a|an|my|the)\s+new|bought|adopted|married|engaged|"
    r"reset|renew(?:ed|al)|rais(?:ed|ing)|increas(?:ed|ing)|decreas(?:ed|ing)|lower(?:ed|ing)|cut\s+(?:to|down)|"
    # the first days somewhere new ("my first week working at Datadog", "first day at the new school")
    r"first\s+(?:day|week|month)\s+(?:at|in|on|as|working|back)|"
    # the new (a new one that is now someone's: "got a new number", "my new manager"; not "watched
    # a new film") and the present
    r"(?:my|our|his|her|their)\s+new|new\s+one|newly|now|nowadays|these\s+days|currently|instead|"
    r"from\s+now\s+on|since\s+then"
    r")\b", re.IGNORECASE)

# 新 as "new" (新家, 新领导, 新号码), not inside 新闻 / 新鲜 / 新年 / 新加坡 / 新西兰 / 新疆 / 更新 (更新 is listed).
_ZH = re.compile(
    r"搬|换|改|变|调(?:到|去|任|岗)|转(?:到|去|行|岗|学|正)|跳槽|辞职|离职|退休|退学|入职|升职|升为|降职|当上|成为|成了|"
    r"不再|再也不|已经不|不.{0,4}了|戒(?:了|掉)|放弃|放下|停(?:了|掉)|取消|退(?:了|掉)|卖(?:了|掉)|买了|"
    r"结婚|离婚|分手|订婚|去世|走了|出生|涨|降|重置|更新|续(?:了|签|费)|回到|搬回|开始|报(?:了|名)|"
    r"(?<!更)新(?!闻|鲜|年|加坡|西兰|疆|手)|现在|目前|如今|从此|以后")


# A change denied or refused is none: "didn't move", "never changed", 不肯搬, 不愿意换, 没有换, 一直.
_EN_DENIED = re.compile(r"\b(?:not|never|n't|no|refuses?\s+to|won't|still|always)\W+(?:\w+\W+){0,2}$", re.IGNORECASE)
_ZH_DENIED = re.compile(r"(?:不肯|不愿意?|不想|没有?|不会|别|一直|从没|从不|还是)\w{0,2}$")


def says_change(text: str) -> bool:
    """Whether `text` says that something changed, began, ended, is new or is so now (and does
    not deny it: "didn't move", 不肯搬)."""
    for pattern, denied in ((_EN, _EN_DENIED), (_ZH, _ZH_DENIED)):
        for match in pattern.finditer(text):
            if not denied.search(text, max(0, match.start() - 24), match.start()):
                return True
    return False


# A plan or a wish is no change yet: "Planning to move to Bristol next year", 打算换工作.
_PLAN = re.compile(r"\b(?:plan(?:s|ning|ned)?\s+to|thinking\s+(?:about|of)|consider(?:s|ing)|might|may\s+(?:move|switch|"
                   r"change|quit|leave)|hop(?:e|es|ing)\s+to|want(?:s|ing)?\s+to|would\s+like\s+to|someday|one\s+day|"
                   r"(?:trying|try(?:ing)?\s+hard)\s+to)\b|"
                   r"打算|计划|准备|考虑|想要|想(?:搬|换|辞|跳|去|买|卖|学)|有机会", re.IGNORECASE)


def says_plan(text: str) -> bool:
    """Whether `text` says a plan or a wish ("Planning to move", 打算换工作): what may change."""
    return bool(_PLAN.search(text))
