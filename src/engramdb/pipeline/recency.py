"""Questions about now: the newer statement of what the best hit says takes its place.

Memory changes: "My phone number is 0176 555 0143" (2023) and, successors, "Changed my phone
number to 0151 555 0199" (2025) both stay in the store unless an agent links them with
``supersedes``. Asked "What is my phone number now?", the old statement usually ranks first:
it is phrased like the question, while the update says what changed in other words. Ranking
by relevance alone reads the store as a set of timeless facts.

When the planner reads a question as asking for the present state (``QueryPlan.present``:
"now", "currently", "these days", "still", 现在, 目前, 如今; no time window, no "before" or
以前; not a dialogue context), this stage looks at the best ``pool`` candidates:

1. *comparably relevant* are those whose semantic match to the question is within ``tier``
   standard deviations (of the semantic channel's list) of the best among them, or whose score
   is at least ``share`` of the best score. The embedding is the main judge because it reads
   what an entry is about rather than which of the question's words it repeats; in a store of
   a few dozen entries its list is spread wide, and the fused score catches what it misses.
   An entry that says something changed ("Moved to Bristol last week", 换了一辆比亚迪:
   `text.change.says_change`) is comparable within the wider ``change_tier``: an update says
   what changed in other words than the question, while a newer note on the topic that changes
   nothing ("Gave blood today") reads as close to it as the update does;
2. the best-ranked of them is the statement to check, and the entry of the pool most like it
   (cosine of their embeddings) is what may have become of it: a newer note that merely shares
   the topic ("Lent my old phone to my niece") is less like it than the update is;
3. if that entry is comparably relevant, at least a day newer (``timestamp``, else
   ``created_at``) and not news about someone else (`_someone_else`), it takes the checked
   statement's place, just above its score, and the checked statement, now right below it, is
   scored halfway to the entry after it. Nothing else moves, and a question that does not ask
   about now is untouched.

A question about a former state (``QueryPlan.former``: "Where did I work before?", "my old
phone number", "used to", 以前, 原来) is the same rule turned round: of the entries at least a
day *older* than the best-ranked one, the one most like it takes its place ("I work at Google"
above "Last day at Google; on Monday I start at Stripe" for "Where did I work before Stripe?").

The moved hit shows its evidence as channel ``recency`` (rank: the place it was taken from,
1-based; score: its own score before the move). Measured on the current-state development set
(``benchmarks/current_devset.py``) and a set written apart: docs/BENCHMARKS.md ("Questions
about now").
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from ..conversation.extract import AGENT_ROLES, is_small_talk
from ..model import Candidate, ChannelScore
from ..text.change import says_change, says_plan
from ..text.tokenize import STOPWORDS_EN
from ..validation import aware_timestamp
from .context import Fetch, attach_entries

if TYPE_CHECKING:
    from ..model import Entry
    from .context import SearchContext


#: Entries written within a day of each other say nothing about which is the newer state: an
#: import writes a whole corpus within minutes, and entries without a `timestamp` fall back to
#: when they were written.
MIN_GAP_S = 86_400.0


#: A semantic list of fewer rows than this (a store of a few entries) is measured in
#: `FEW_ROWS_SPREAD`, a full list's spread, not its own: two rows are always two of their own
#: standard deviations apart, so in a store of two job notes ("我在华为工作", 0.895; "我跳槽去了腾讯上班",
#: 0.875) nothing was ever comparable, and one far row (an English note among Chinese ones)
#: spreads a short list so wide that any note is comparable ("我养了一只橘猫" took "我住在杭州"'s place
#: for 我现在住哪？). e5-small's cosines over a full list of 100 spread 0.014-0.054 (p10-p90, three
#: dev sets; median 0.019-0.037).
FEW_ROWS, FEW_ROWS_SPREAD = 20, 0.03


@dataclass(frozen=True, slots=True)
class RecencyConfig:
    """For questions about now, among the best `pool` candidates: comparably relevant within
    `tier` semantic standard deviations of the best (unset: off) or at `share` of the best score."""

    tier: float | None = None
    pool: int = 10
    #: what may have become of the checked statement is the pool's entry most like it by
    #: cosine + `relevance` x its semantic match to the question (0: by likeness alone)
    relevance: float = 0.0
    #: also comparably relevant: a fused score at least this share of the best one's (None: off)
    share: float | None = None
    #: also comparably relevant: an entry that says something changed (`says_change`) within
    #: this many semantic standard deviations of the best (None: off)
    change_tier: float | None = None

    @property
    def active(self) -> bool:
        return self.tier is not None


class RecencyStage:
    """Built with the preset's ``[recency]`` and the store's ``fetch`` (entries' times) and
    ``vectors_of`` (their embeddings)."""

    name = "recency"

    def __init__(self, conf: RecencyConfig, fetch: Fetch, vectors_of: Callable[[Sequence[int]], np.ndarray]) -> None:
        self.conf, self.fetch, self.vectors_of = conf, fetch, vectors_of

    def _successors_first(self, candidates: list[Candidate], pool: int, rec: dict[str, Any]) -> list[Candidate]:
        """Asked about now with superseded entries in view (``include_superseded``): an entry's
        explicit successor ranks above it, whatever their likeness (it ranked first before)."""
        pooled = attach_entries(self.fetch, candidates[:pool])
        rest = attach_entries(self.fetch, candidates[pool:])
        order, moves = _successors_of_superseded(pooled + rest, pool)
        if moves:
            rec["superseded_moved"] = moves
        return order

    def __call__(self, ctx: "SearchContext", candidates: list[Candidate], rec: dict[str, Any]) -> list[Candidate]:
        conf = self.conf
        if not conf.active:
            rec["skipped"] = "no [recency] tier set"
            return candidates
        if not (ctx.plan.present or ctx.plan.former):
            rec["skipped"] = "the question asks neither about now nor about before"
            return candidates
        if ctx.plan.present and ctx.filters.include_superseded:
            candidates = self._successors_first(candidates, conf.pool, rec)
        semantic = [score for _, score in ctx.recalled.get("semantic", [])]
        spread = statistics.pstdev(semantic) if len(semantic) > 1 else 0.0
        if 1 < len(semantic) < FEW_ROWS:
            spread = FEW_ROWS_SPREAD
        if not spread:
            rec["skipped"] = "no semantic scores to compare relevance with"
            return candidates
        pool = attach_entries(self.fetch, candidates[: conf.pool])
        best = max((c.channels["semantic"].score for c in pool if "semantic" in c.channels), default=None)
        if best is None:
            rec["skipped"] = "no semantic match among the best candidates"
            return candidates
        times = {c.rowid: _time(c.entry) for c in pool}
        top_score = max(c.score for c in pool)

        def gap(c: Candidate) -> float:
            """How many standard deviations below the pool's best semantic match `c` is."""
            return (best - c.channels["semantic"].score) / spread if "semantic" in c.channels else float("inf")

        def says_it_changed(c: Candidate) -> bool:
            return (conf.change_tier is not None and gap(c) <= conf.change_tier and c.entry is not None
                    and says_change(c.entry.text))

        # A turn of small talk states nothing that could change ("Haha okay, back to work." said in
        # two sessions is no update of itself), and an assistant's turn is not the user's state
        # ("Congrats on the new job!" is not where I work): neither is checked nor stands in.
        timed = [c for c in pool if times[c.rowid] is not None and not _no_statement(c.entry)]
        close = {c.rowid for c in timed if gap(c) <= float(conf.tier or 0.0)
                 or (conf.share is not None and top_score > 0 and c.score >= conf.share * top_score)}
        changed = {c.rowid for c in timed if c.rowid not in close and says_it_changed(c)}
        tier = [c for c in timed if c.rowid in close or c.rowid in changed]
        # About now, the entry that may replace the best one is newer; about before, older.
        direction = 1.0 if ctx.plan.present else -1.0
        rec.update({"asks": "now" if direction > 0 else "before", "tier": float(conf.tier or 0.0), "share": conf.share,
                    "pool": conf.pool, "compared": len(tier)})
        if changed:
            rec["said_change"] = len(changed)  # comparable only through `change_tier`
        order = pool + candidates[conf.pool:]
        if len(tier) < 2:
            rec["nothing_comparable"] = True
            return order
        later, closer = ("nothing_newer", "closest_not_newer") if direction > 0 else ("nothing_older", "closest_not_older")
        # About now, nothing said after the question's own `now` (a search of the past).
        latest = ctx.now.timestamp() if direction > 0 and ctx.now is not None else float("inf")
        position = {c.rowid: i for i, c in enumerate(pool)}
        # Each pool entry's semantic match to the question (one the channel did not return: its list's lowest).
        lowest = min(semantic) if semantic else 0.0
        asked = np.asarray([c.channels["semantic"].score if "semantic" in c.channels else lowest for c in pool],
                           dtype=np.float32)
        stored: list[np.ndarray] = []  # the pool's vectors, read when a step first needs them

        def step(anchor: Candidate, done: set[int], why: dict[str, Any]) -> Candidate | None:
            """The entry that says what became of `anchor` (about now: newer; about before:
            older), or None: the pool's entry most like it, if it is comparably relevant, a day or
            more away in the asked direction and not news about someone else."""
            then = times[anchor.rowid] or 0.0
            anchor_text = anchor.entry.text if anchor.entry else ""
            said = f"{ctx.plan.query}\n{anchor_text}"
            successors = [c for c in tier if c.rowid not in done and (t := times[c.rowid] or 0.0) <= latest
                          and direction * (t - then) >= MIN_GAP_S]
            elsewhere = [c for c in successors if c.entry is not None and (
                _someone_else(c.entry.text, said) or _not_about(c.entry.text, ctx.plan.query, anchor_text))]
            successors = [c for c in successors if c not in elsewhere]
            # A plan says what may become of it, not what did ("Planning to move to Bristol").
            planned = [c for c in successors if c.entry is not None and says_plan(c.entry.text)]
            if planned:
                successors = [c for c in successors if c not in planned]
                why["planned"] = len(planned)
            if elsewhere:
                why["someone_else"] = len(elsewhere)
            # What became of it is the entry of the pool most like it: not merely of the entries
            # newer (older) than it, so that a note on another subject never stands in for it, and
            # with the chain's earlier links, so that the chain does not walk on into whatever is
            # least unlike its last link. Entries said within a day of it are left out: a fact and
            # the turn it was restated from are one statement, not a change.
            others = [i for i, c in enumerate(pool) if c.rowid != anchor.rowid
                      and abs((times[c.rowid] or 0.0) - then) >= MIN_GAP_S]
            if not successors or not others:
                why[later] = True
                return None
            if not stored:
                stored.append(np.asarray(self.vectors_of([c.rowid for c in pool]), dtype=np.float32))
            # Most like it, and (with `relevance`) about what the question asks: a note that
            # shares the statement's details but not its subject ("I live in Dublin" for "I work
            # at Stripe in Dublin", asked where I work) gives way to the one that answers it.
            likeness = stored[0] @ stored[0][position[anchor.rowid]] + float(conf.relevance) * asked
            closest = pool[max(others, key=lambda i: likeness[i])]
            if closest.rowid in {c.rowid for c in successors}:
                why["likeness"] = round(float(likeness[position[closest.rowid]]), 4)
                return closest
            # Said at the same moment as a comparably relevant successor, it is that statement in
            # other words (the fact restated from a turn reads more like another fact than the turn
            # does): the successor stands for it.
            when = times[closest.rowid] or 0.0
            alike = [c for c in successors if abs((times[c.rowid] or 0.0) - when) < MIN_GAP_S]
            if alike:
                why["likeness"] = round(float(likeness[position[alike[0].rowid]]), 4)
                return alike[0]
            why[closer] = True
            return None

        # Follow the chain of changes: what replaced the best one may itself have been replaced
        # (Leeds, then Bristol, then Manchester), each step to the entry most like the last.
        anchor, done = tier[0], {tier[0].rowid}
        moves: list[dict[str, Any]] = []
        while len(done) <= len(tier):
            why: dict[str, Any] = {}
            found = step(anchor, done, why)
            likeness = why.pop("likeness", None)
            if not moves:
                rec.update(why)
            if found is None:
                if moves:
                    rec["stopped"] = next(iter(why), None)
                break
            at, was = order.index(anchor), order.index(found)
            evidence = ChannelScore(rank=was + 1, score=round(found.score, 6))
            moved = replace(found, score=anchor.score + _gap(order, at), channels={**found.channels, "recency": evidence})
            move: dict[str, Any] = {"from": was + 1, "to": at + 1}
            if ctx.explain:
                # why it was the one: how like the checked statement it is (cosine + relevance x its
                # match to the question), and how it was comparable (close to the best, or only
                # because it says something changed)
                move.update(id=moved.entry.id if moved.entry else None, over=anchor.entry.id if anchor.entry else None,
                            likeness=likeness,
                            comparable="said_change" if found.rowid in changed else "close")
            moves.append(move)
            order = _displaced([*order[:at], moved, *[c for c in order[at:] if c is not found]], at + 1)
            tier = [moved if c is found else c for c in tier]
            anchor = moved
            done.add(moved.rowid)
        if moves:
            rec["moved"] = moves
        return order


# Someone other than the one asked about: a third-person pronoun, a possessive name ("Sam's"),
# a kinship or social word, a Latin name that speaks or owns in Chinese text ("Sam说", "Sam家", "Sam公司");
# not 其他 ("other"), not a brand inside Chinese text ("跳槽到了Shopee").
_OTHER_EN = re.compile(r"\b(?:brother|sister|mom|mum|mother|dad|father|parents|wife|husband|son|daughter|kids|friend|"
                       r"colleague|coworker|neighbou?r|cousin|uncle|aunt|niece|nephew|grandma|grandpa|grandmother|"
                       r"grandfather|grandparent|granny|girlfriend|boyfriend|boss)s?\b|\bin-laws\b", re.IGNORECASE)
# A possessive is someone else's when it is a name: "Sam's", not "the doctor's advice" nor "a
# year's break" (the speaker quitting coffee on the doctor's advice is the speaker's news).
_POSSESSIVE_NAME = re.compile(r"\b[A-Z][a-z]+['’]s\b")
_KIN_ZH = ("邻居|同事|朋友|同学|室友|妈妈|爸爸|爸妈|父母|母亲|父亲|哥哥|姐姐|弟弟|妹妹|儿子|女儿|孩子|"
           "外婆|外公|奶奶|爷爷|姥姥|姥爷|岳父|岳母|公公|婆婆|叔叔|舅舅|姑姑|老板|"
           "老公|老婆|丈夫|妻子|表哥|表姐|表弟|表妹|亲戚|家人")
_OTHER_ZH = re.compile(_KIN_ZH + r"|[A-Za-z]+(?=说|家|公司)")
# Words for the same people: asked about 父母, a note about 爸妈 is about them.
_SAME_PERSON = {"爸妈": ("父母", "爸爸", "妈妈", "parents"), "父母": ("爸妈", "parents"),
                "爸爸": ("父亲",), "父亲": ("爸爸",), "妈妈": ("母亲",), "母亲": ("妈妈",),
                "老公": ("丈夫",), "丈夫": ("老公",), "老婆": ("妻子",), "妻子": ("老婆",)}
# A third-person pronoun is someone else only when the question asks about the one who speaks
# ("What pet do we have now?"); asked about Sam, "she" is most likely Sam.
_PRONOUN = re.compile(r"\b(?:he|she|him|her|his|hers|they|them|their|theirs)\b|他们|她们|(?<!其)他|她", re.IGNORECASE)
_ASKS_ABOUT_SPEAKER = re.compile(r"\b(?:i|my|me|mine|we|our|us|ours)\b|我", re.IGNORECASE)
# Said in the first person as subject or object ("I", "we", "me", 我): then it is news about the
# one who speaks, whoever else it names ("My wife and I moved", "they gave me a buddy").
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|we|we're|we've|me|us)\b", re.IGNORECASE)
# 我 is the speaker unless it only owns the one the text is about: 我同事, 我爸妈, 我的邻居 (but 我和老婆).
_FIRST_PERSON_ZH = re.compile(r"我(?!们?的?(?:" + _KIN_ZH + r"))")
# A name a question about someone else gives: the text is news about that person, whoever else
# it names ("Jake just moved to Denver with his wife", asked where Jake lives).
_NAME = re.compile(r"\b[A-Z][a-z]+\b")


def _names(text: str) -> set[str]:
    """The capitalised words of `text` that are not English stopwords ("Jake", "Jenkins"; not "Where")."""
    return {name for name in _NAME.findall(text) if name.lower() not in STOPWORDS_EN}


def _someone_else(text: str, said: str) -> bool:
    """Whether a newer entry is news about someone the question and the entry it would replace
    do not mention ("Rachel adopted a kitten; sent her our old cat tree", "My brother Tom started
    at Google", "邻居家新请了保洁阿姨"): it does not say what became of the thing asked about.
    What is said in the first person is the speaker's own news. Linear in both texts: the words
    of `said` are collected once."""
    if _FIRST_PERSON.search(text) or _FIRST_PERSON_ZH.search(text):
        return False
    question = said.split("\n", 1)[0]
    asks_speaker = bool(_ASKS_ABOUT_SPEAKER.search(question))
    named = _names(text)
    # Asked about someone by name ("Where does Jake live now?", "my sister Mei"), a note naming
    # them is theirs, whoever else it names.
    if named & set(_NAME.findall(question)):
        return False
    known = said.lower()
    words = set(_WORD.findall(known))
    patterns: tuple[re.Pattern[str], ...] = (_OTHER_EN, _POSSESSIVE_NAME, _OTHER_ZH)
    # A pronoun in a note that shares a name with the checked statement (a company, a tool, a
    # city: "Migrated deployments from Jenkins; they run on every merge") is about that thing.
    if asks_speaker and not named & set(_NAME.findall(said)):
        patterns += (_PRONOUN,)
    for pattern in patterns:
        for mark in {m.group(0).lower() for m in pattern.finditer(text)}:
            if mark.isascii():
                if mark not in words and mark.rstrip("s").rstrip("'’") not in words:
                    return True
            elif mark not in known and not any(same in known for same in _SAME_PERSON.get(mark, ())):
                return True
    return False


def _no_statement(entry: "Entry | None") -> bool:
    """A conversation turn of small talk, or said by the assistant (an agent role)."""
    if entry is None or entry.kind != "turn":
        return False
    speaker = (entry.source.speaker or "").strip().lower()
    return speaker in AGENT_ROLES or is_small_talk(entry.text, entry.source.speaker)


def _not_about(text: str, question: str, checked: str) -> bool:
    """Whether a newer entry leaves out the one a question about someone else asks after:
    asked "爸爸现在的爱好是什么？" (or "Where does Jake live now?", "Where does my sister live
    now?"), a note that names neither them (nor a name the checked statement gives them: "Emma
    moved to Edinburgh" for my sister Emma) nor a third-person pronoun is the speaker's own
    news ("现在基本在家办公"), not what became of theirs."""
    kin = {mark.lower() for pattern in (_OTHER_EN, _OTHER_ZH) for mark in pattern.findall(question)}
    asks_speaker = bool(_ASKS_ABOUT_SPEAKER.search(question))
    names = set() if asks_speaker else _names(question)
    if not kin and not names:
        return False
    if kin:
        names |= _names(checked)
    lowered = text.lower()
    if any(k in lowered or any(same in lowered for same in _SAME_PERSON.get(k, ())) for k in kin):
        return False
    return not (names & set(_NAME.findall(text)) or _PRONOUN.search(text))


_WORD = re.compile(r"[a-z]+(?:['’]s)?")


def _successors_of_superseded(order: list[Candidate], pool: int) -> tuple[list[Candidate], list[dict[str, int]]]:
    """`order` with each entry a `supersedes` link retired, among the first `pool`, followed by
    the entry that superseded it when that ranks lower: the link says what became of it."""
    moves: list[dict[str, int]] = []
    moved_ids: set[str] = set()  # each entry moves once: a damaged store's cycle of links ends
    at = 0
    while at < min(pool, len(order)):
        entry = order[at].entry
        later = entry.superseded_by if entry is not None else None
        found = next((i for i, c in enumerate(order) if i > at and c.entry is not None and c.entry.id == later), None)
        if found is None or later in moved_ids:
            at += 1
            continue
        successor = order[found]
        evidence = ChannelScore(rank=found + 1, score=round(successor.score, 6))
        moved = replace(successor, score=order[at].score + _gap(order, at),
                        channels={**successor.channels, "recency": evidence})
        moves.append({"from": found + 1, "to": at + 1})
        moved_ids.add(later or "")
        order = _displaced([*order[:at], moved, *[c for i, c in enumerate(order) if i >= at and i != found]], at + 1)
    return order, moves


def _displaced(order: list[Candidate], at: int) -> list[Candidate]:
    """`order` with the statement at `at`, which the newer one just above took the place of,
    scored halfway to the entry after it: it keeps its place, but no longer reads as likely as
    what became of it (the two read 0.850 and 0.850, so a reader could not tell which is current)."""
    if at >= len(order):
        return order
    below = order[at + 1].score if at + 1 < len(order) else 0.0
    return [*order[:at], replace(order[at], score=(order[at].score + below) / 2), *order[at + 1:]]


def _gap(order: list[Candidate], at: int) -> float:
    """How much to add to the score at `at` so the moved entry ranks just above it: half the
    distance to the one before (a small step at the top), so the order stays the score order."""
    here = order[at].score
    if at > 0:
        return (order[at - 1].score - here) / 2
    return min(1e-6, (1.0 - here) / 2) if 0.0 <= here < 1.0 else 1e-6


def _time(entry: "Entry | None") -> float | None:
    """When an entry was said or is about (`timestamp`, else `created_at`), as a POSIX time."""
    if entry is None:
        return None
    for value in (entry.timestamp, entry.created_at):
        try:
            moment = aware_timestamp(value)
        except ValueError:
            continue
        if moment is not None:
            return moment.timestamp()
    return None


def parse_recency(section: dict[str, Any], check: Any) -> RecencyConfig:
    if not section:
        return RecencyConfig()
    return RecencyConfig(tier=check.number("recency", section, "tier", None, 0.0, 10.0),
                         pool=check.integer("recency", section, "pool", 10, high=1000) or 10,
                         share=check.number("recency", section, "share", None, 0.0, 1.0),
                         relevance=check.number("recency", section, "relevance", 0.0, 0.0, 10.0) or 0.0,
                         change_tier=check.number("recency", section, "change_tier", None, 0.0, 10.0))
