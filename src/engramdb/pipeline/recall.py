"""The recall and fuse stages: channels run in parallel, then one ranking over their union."""

from __future__ import annotations

import time
from concurrent.futures import Executor
from functools import partial
from typing import Any, Callable

import numpy as np

from ..embed.base import Embedder
from ..model import Candidate
from ..plan.model import QueryPlan
from ..store.base import Store
from ..text.bilingual import translate_query
from ..text.romanize import query_names
from ..text.dialogue import plain, without_roles
from ..text.patterns import exact_patterns
from ..text.tokenize import query_terms
from .adapt import AdaptConfig, adapted_weights, query_length, query_shape
from .context import Rows, SearchContext
from .fuse import WeightedExplanation, candidates_from, max_score, route, route_slots, rrf, union, weighted
from .presets import ChannelConfig, Preset
from .ranker import learned, load_model, query_traits
from .translated import translated_search
from .window_topic import off_topic, topic_terms


class RecallStage:
    """Every channel of the preset, in parallel, each with its own top-k.

    Built with the preset's channels, the store, the embedder and the thread pool. Hands
    fusion each channel's list (``ctx.recalled``) and returns the union of what they found,
    unscored: each candidate carries every channel's 1-based rank and raw score.
    """

    name = "recall"

    def __init__(self, channels: dict[str, ChannelConfig], store: Store, embedder: Embedder | None,
                 executor: Executor, adapt: AdaptConfig | None = None) -> None:
        self.channels, self.store, self.embedder, self.executor = channels, store, embedder, executor
        self.adapt = adapt or AdaptConfig()

    def __call__(self, ctx: SearchContext, candidates: list[Candidate], rec: dict[str, Any]) -> list[Candidate]:
        ctx.weights, ctx.adapted = query_weights(self.channels, self.adapt, ctx.plan.query or ctx.query)
        vectors: dict[str, np.ndarray] = {}
        masses: dict[str, float] = {}
        translations: list[str] = []
        name_keys: list[str] = []
        futures = {name: self.executor.submit(_timed, job)
                   for name, job in self.jobs(ctx, ctx.plan, vectors, masses, translations, name_keys).items()}
        results: dict[str, Rows] = {}
        raw: dict[str, Rows] = {}
        rec["channels"] = {}
        for name, future in futures.items():
            rows, ms = future.result()
            channel = name.split("#")[0]
            k = self.depth(ctx, channel)
            raw[name] = rows
            if channel in results:  # semantic sub-queries, lexical translations: one list each
                # BM25 adds up over a query's terms, and a translation is one more term: an
                # entry matching "Bob" and 喝's "drink" in "Bob 喝什么" scores both. Sub-queries
                # are alternatives, so a row keeps its best.
                merge = _merge_sum if channel == "lexical" else _merge_max
                rows = merge(results[channel], rows, k)
                ms = max(ms, rec["channels"][channel]["ms"])
            results[channel] = rows
            rec["channels"][channel] = {"k": k, "n": len(rows), "ms": ms,
                                        "top_score": round(rows[0][1], 6) if rows else None}
        # The lexical list's two sources kept apart too, so hits can say which one matched.
        ctx.translated = _ranks(raw.get("lexical#translated", []))
        ctx.worded = _ranks(raw.get("lexical", [])) if ctx.translated else {}
        if ctx.translated:
            rec["channels"]["lexical"]["translated"] = len(ctx.translated)
            # what the dictionary made of the query, so a surprising match can be traced to its word
            rec["channels"]["lexical"]["translations"] = translations
        if name_keys and "names" in rec["channels"]:
            # the keys the question's names were looked up by ("han:wangfang")
            rec["channels"]["names"]["keys"] = name_keys
        if "semantic" in rec["channels"]:
            rec["channels"]["semantic"]["queries"] = len(ctx.plan.semantic_queries())
            if (embedded := plain(ctx.plan.query)) != ctx.plan.query:  # what the embedder read
                rec["channels"]["semantic"]["embedded"] = embedded
        if ctx.plan.query in vectors and results and ctx.weights.get("feedback", 0.0) > 0:
            rows, ms = _timed(lambda: self.feedback(ctx, vectors[ctx.plan.query], results))
            results["feedback"] = rows
            rec["channels"]["feedback"] = {"k": self.depth(ctx, "feedback"), "n": len(rows), "ms": ms,
                                           "top_score": round(rows[0][1], 6) if rows else None}
        if results.get("lexical") and "lexical" in masses:
            self.weigh_lexical_evidence(ctx, results["lexical"], masses["lexical"], rec["channels"]["lexical"])
        ctx.recalled = {name: results[name] for name in self.channels if name in results}  # preset order
        found = candidates_from(ctx.recalled)
        rec["n"] = len(found)
        return list(found.values())

    def weigh_lexical_evidence(self, ctx: SearchContext, rows: Rows, mass: float, rec: dict[str, Any]) -> None:
        """Shrink the lexical weight when its best row matched little of what the query's words
        could match: its BM25 over the query's idf `mass` (the score of a row holding each term
        once; read by the lexical job), against ``[channels.lexical] evidence``.

        A z-score reads only how a row compares with the others in its list. When every entry
        names the user ("Alice ...") and the question's one content word is in no entry ("what
        tea does Alice like?" over "Alice 喜欢喝乌龙茶"), every row matched only "alice", whose idf
        is near zero, and their scores differ by length normalisation alone; z-scored, that
        noise outweighed the embedding (the answer ranked 19th of 25). A list whose best row
        holds a good share of the query's idf mass keeps the full weight, as on focused
        questions that share their words with the answer."""
        if mass <= 0:
            return
        share = rows[0][1] / mass
        scale = min(1.0, share / float(self.channels["lexical"].evidence or 1.0))
        rec["evidence"] = round(share, 4)
        if scale < 1.0:
            ctx.weights = {**ctx.weights, "lexical": round(ctx.weights.get("lexical", 0.0) * scale, 6)}
            rec["weight_scale"] = round(scale, 4)

    def feedback(self, ctx: SearchContext, query_vector: np.ndarray, results: dict[str, Rows]) -> Rows:
        """Pseudo-relevance feedback (Rocchio on embeddings): the query's vector moved towards
        the mean vector of the first pass's best ``top`` rows (by reciprocal-rank fusion of the
        channels), scored against every row the first pass found. Lifts entries that resemble
        what was found but share little with the query's own wording (a chatty context, a
        paraphrase).

        Why the first pass's rows and not a second index search: the semantic list alone is
        100 deep, and an entry beyond it that the moved vector would find has to outscore the
        first pass's own in fusion to matter. At 100k entries the two give the same top 10 for
        most dialogue contexts (docs/BENCHMARKS.md), and rescoring ~150 stored vectors costs a
        fraction of a millisecond where the search cost ~2 ms of a dialogue query's latency.
        """
        conf = self.channels["feedback"]
        first = rrf(results, {}, 60)[: conf.top]
        if not first:
            return []
        pool = list(dict.fromkeys(rowid for rows in results.values() for rowid, _ in rows))
        vectors = self.store.vectors_of(pool)
        if vectors.ndim != 2 or vectors.shape[1] != query_vector.shape[0]:
            return []  # no vector index (yet)
        at = {rowid: i for i, rowid in enumerate(pool)}
        moved = query_vector + conf.alpha * vectors[[at[c.rowid] for c in first]].mean(axis=0)
        norm = float(np.linalg.norm(moved))
        if norm == 0:
            return []
        scores = vectors @ (moved / norm)
        has_vector = np.any(vectors != 0, axis=1)  # vectors_of gives zeros for rows without one
        order = np.argsort(-scores, kind="stable")
        depth = self.depth(ctx, "feedback")
        return [(pool[i], float(scores[i])) for i in order if has_vector[i]][:depth]

    def jobs(self, ctx: SearchContext, plan: QueryPlan, vectors: dict[str, np.ndarray] | None = None,
             masses: dict[str, float] | None = None,
             translations: list[str] | None = None,
             name_keys: list[str] | None = None) -> dict[str, Callable[[], Rows]]:
        """One job per channel the plan gives work to, and one semantic job per query text
        (whose vector is kept in `vectors`, for feedback); with ``[channels.lexical] evidence``
        the lexical job also reads the query's idf mass into `masses` (off the embedding's path),
        and the translations job puts the dictionary's terms for the query in `translations`; the
        pinyin keys of the Chinese people the query names go in `name_keys`."""
        store, embedder = self.store, self.embedder
        namespace, filters = ctx.namespace, ctx.filters
        terms = query_terms(lexical_text(plan))
        names = plan.names()
        jobs: dict[str, Callable[[], Rows]] = {}
        kept = vectors if vectors is not None else {}
        evidence = self.channels["lexical"].evidence if "lexical" in self.channels else None

        # With [channels.names]: a Chinese person the query names is matched in every entry that
        # names them, in characters or in pinyin, by the name's key (text/romanize.py): as the
        # names channel's evidence, and a name in pinyin also as a BM25 term for the entries that
        # write it in characters (a Chinese name reaches English entries through `translated`).
        people = query_names(plan.query) if "names" in self.channels else []
        lexical_terms = terms + [key for _, lookup in people for key in lookup]
        if name_keys is not None:
            name_keys[:] = [key for keys, _ in people for key in keys]

        def lexical(k: int) -> Rows:
            rows = store.lexical(lexical_terms, k, namespace, filters)
            if evidence and rows and masses is not None:
                masses["lexical"] = store.idf_mass(terms)
            return rows

        def translated(text: str, k: int, scale: float) -> Rows:
            words = translate_query(text)
            if translations is not None:
                translations[:] = words
            return translated_search(store, text, k, namespace, filters, scale, terms=words)

        def named(people: list[tuple[str, ...]], k: int) -> Rows:
            # how many of the people named a row names, each by any of its keys; ties by BM25
            rows = store.lexical([key for keys in people for key in keys], k, namespace, filters)
            rowids = [rowid for rowid, _ in rows]
            count = dict.fromkeys(rowids, 0)
            for keys in people:
                for rowid, n in store.term_coverage(list(keys), rowids).items():
                    count[rowid] += n > 0
            return sorted(((rowid, float(count[rowid])) for rowid in rowids), key=lambda r: -r[1])

        def semantic(text: str, k: int) -> Rows:
            # A dialogue context is embedded by its content words, without markup (text.dialogue.plain).
            vector = kept[text] = embedder.embed_query(plain(text))  # type: ignore[union-attr]
            return store.semantic(vector, k, namespace, filters)

        for name in self.channels:
            depth = self.depth(ctx, name)
            if name == "semantic" and embedder is not None:
                for i, text in enumerate(plan.semantic_queries()):
                    jobs[f"semantic#{i}"] = partial(semantic, text, depth)
            elif name == "lexical":
                jobs[name] = partial(lexical, depth)
            elif name == "symbolic" and names:
                jobs[name] = partial(store.symbolic, plan.query, terms, depth, namespace, filters, names=names)
            elif name == "names" and people:
                jobs[name] = partial(named, [keys for keys, _ in people], depth)
            elif name == "temporal" and plan.time_start is not None and plan.time_end is not None:
                jobs[name] = partial(store.temporal, plan.time_start.timestamp(), plan.time_end.timestamp(), terms,
                                     depth, namespace, filters)
            elif name == "substring" and (patterns := exact_patterns(plan.query)):
                jobs[name] = partial(store.substring, patterns, depth, namespace, filters)
            elif name == "dated" and plan.intent == "temporal" and not plan.has_window:
                # "When did ...?" names no time but asks for one: entries that state their
                # event's time are the ones that can answer it.
                jobs[name] = partial(store.dated, terms, depth, namespace, filters)
            elif name == "translated" and terms and "lexical" in self.channels:
                # The query's terms through a Chinese-English dictionary, BM25 on the lexical
                # channel's scale, merged into its list (pipeline/translated.py).
                jobs["lexical#translated"] = partial(translated, lexical_text(plan), depth, self.channels[name].weight)
        return jobs

    def depth(self, ctx: SearchContext, channel: str) -> int:
        """How many candidates a channel returns: its preset ``k``, or the search's ``k`` when
        more results are asked for than that (so ``k=250`` can return 250 hits)."""
        return max(self.channels[channel].k, ctx.k)


def lexical_text(plan: QueryPlan) -> str:
    """What BM25 reads of a query: its text without role labels (no evidence), and its keywords."""
    return " ".join([without_roles(plan.query), *plan.keywords])


def query_weights(channels: dict[str, ChannelConfig], adapt: AdaptConfig, query: str,
                  ) -> tuple[dict[str, float], dict[str, Any] | None]:
    """The channel weights for `query` (moved by `[adapt]` when the preset has one), and how
    `[adapt]` read it for the trace (None when it is off). Recall decides with them whether
    feedback runs; fusion ranks with them."""
    weights = {name: conf.weight for name, conf in channels.items()}
    if not adapt.enabled:
        return weights, None
    terms, dialogue = query_shape(query)
    weights, share = adapted_weights(weights, adapt, terms, dialogue)
    return weights, {"query_terms": terms, "dialogue": dialogue, "share": share}


def fusion_inputs(preset: Preset, ctx: SearchContext, rec: dict[str, Any]) -> tuple[dict[str, Rows], dict[str, float], int]:
    """What fusion works from: each channel's list as recall handed it over, the channel
    weights recall chose for the query, and the query's term count."""
    if ctx.adapted is not None:
        rec["adapt"] = ctx.adapted
        terms = int(ctx.adapted["query_terms"])
    else:
        terms = query_length(ctx.plan.query or ctx.query)
    return ctx.recalled, dict(ctx.weights), terms


class FuseStage:
    """One ranking over the union of the channels' candidates, by the preset's method.

    Every method scores a candidate from its channels' ranks and scores alone, over at most
    each channel's preset depth, so the first hits do not change with k or page size; route
    slots alone depend on k (they reserve places in it).
    """

    name = "fuse"

    def __init__(self, preset: Preset) -> None:
        self.preset = preset

    def __call__(self, ctx: SearchContext, candidates: list[Candidate], rec: dict[str, Any]) -> list[Candidate]:
        results, weights, terms = fusion_inputs(self.preset, ctx, rec)
        # A search for more than the channels' own depth (k=100 where the preset's lists are 50
        # deep) gets longer lists, and fusing those would reorder the first hits (z-scores over
        # 100 scores are not those over 50). So the preset's depth is fused as for k=10, and
        # the rest follows, ranked by fusing the full lists: asking for more never changes the
        # first hits, and `engram eval`, which asks for 100, measures what a k=10 search gets.
        heads = {name: rows[: self.preset.channels[name].k] if name in self.preset.channels else rows
                 for name, rows in results.items()}
        fused = self.fuse(ctx, heads, weights, terms, rec)
        if any(len(rows) > len(heads[name]) for name, rows in results.items()):
            seen = {c.rowid for c in fused}
            tail = [c for c in self.fuse(ctx, results, weights, terms, {}) if c.rowid not in seen]
            floor = fused[-1].score if fused else 0.0
            for cand in tail:  # ranked after the head: no tail score above the head's last
                cand.score = min(cand.score, floor)
            fused += tail
            rec["tail"] = len(tail)
        rec["n"] = len(fused)
        return fused

    def _window_topic(self, ctx: SearchContext, results: dict[str, Rows],
                      rec: dict[str, Any]) -> dict[str, dict[int, float]] | None:
        """The time window's weight scaled to `off_topic` for entries of the window that show
        nothing of what else the question asks (`window_topic`), when it asks something else."""
        conf = self.preset.channels.get("temporal")
        if conf is None or conf.off_topic is None or not results.get("temporal"):
            return None
        topic = topic_terms(ctx.plan)
        if not topic:
            return None
        rows = off_topic(results)
        rec["window_topic"] = {"terms": topic, "off_topic": len(rows), "factor": conf.off_topic}
        return {"temporal": {rowid: conf.off_topic for rowid in rows}} if rows else None

    def fuse(self, ctx: SearchContext, results: dict[str, Rows], weights: dict[str, float], terms: int,
             rec: dict[str, Any]) -> list[Candidate]:
        """The preset's fusion method over `results`."""
        preset = self.preset
        rec["method"] = preset.fusion
        if preset.fusion == "learned":
            model = load_model(preset.ranker)
            traits = query_traits(ctx.query, ctx.plan, terms)
            fused, why = learned(results, weights, traits, model, explain_top=20 if ctx.explain else 0)
            rec["model"] = model.name
            if why:
                rec["contributions"] = why  # moved onto the explained candidates by the pipeline
        elif preset.fusion == "weighted":
            explained = WeightedExplanation() if ctx.explain else None
            calibration = preset.calibration
            if preset.calibration_window is not None and results.get("temporal"):
                # The window's weight is in the divisor of every candidate's mean, so the means of
                # a question that names a time sit lower: they have a map of their own.
                calibration = preset.calibration_window
                rec["calibration_for"] = "time window"
            scales = self._window_topic(ctx, results, rec)
            fused = weighted(results, weights, preset.normalization, calibration,
                             full_depth=max((c.k for c in preset.channels.values()), default=0), explain=explained,
                             scales=scales)
            rec["normalization"] = preset.normalization
            if calibration is not None:
                rec["calibration"] = list(calibration)
            if explained is not None:
                # score = 1 / (1 + exp(-(a * m + b))), m = the sum of a candidate's terms / divisor
                rec["divisor"] = round(explained.divisor, 4)
                rec["counted"] = explained.counted
                if explained.lone:  # the score is not the map of m: say so, or the trace does not add up
                    rec["lone"] = "one candidate, nothing to compare it with: p = 0.5, whatever m reads"
                rec["contributions"] = {c.rowid: explained.of(c.rowid) for c in fused[:_EXPLAINED]}
        elif preset.fusion == "union":
            fused = union(results, list(preset.channels))
        elif preset.fusion == "max":
            fused = max_score(results)
        elif preset.fusion == "route":
            fused = route(results, k=preset.rrf_k)
            if preset.route_slots:
                fused, promoted = route_slots(fused, ctx.k)
                rec["route_slots"] = promoted
        else:
            fused = rrf(results, weights, preset.rrf_k)
            rec["k"] = preset.rrf_k
        if preset.fusion in ("weighted", "rrf", "learned"):
            rec["weights"] = {name: weight for name, weight in weights.items() if name in results}  # the fused ones
        return fused


_EXPLAINED = 20  # candidates whose score terms an explained search records (the trace shows the first ones)


def _merge_max(a: Rows, b: Rows, k: int) -> Rows:
    """Two result lists of one channel as one: each row's best score, best first, top k."""
    best: dict[int, float] = dict(a)
    for rowid, score in b:
        if score > best.get(rowid, float("-inf")):
            best[rowid] = score
    return sorted(best.items(), key=lambda item: (-item[1], item[0]))[:k]


def _merge_sum(a: Rows, b: Rows, k: int) -> Rows:
    """Two result lists of one channel over different terms as one: scores added, best first, top k."""
    total: dict[int, float] = dict(a)
    for rowid, score in b:
        total[rowid] = total.get(rowid, 0.0) + score
    return sorted(total.items(), key=lambda item: (-item[1], item[0]))[:k]


def _ranks(rows: Rows) -> dict[int, tuple[int, float]]:
    """rowid -> (1-based rank, score) of a result list."""
    return {rowid: (rank, score) for rank, (rowid, score) in enumerate(rows, start=1)}


def _timed(job: Callable[[], Rows]) -> tuple[Rows, float]:
    start = time.perf_counter()
    rows = job()
    return rows, round((time.perf_counter() - start) * 1000, 3)
