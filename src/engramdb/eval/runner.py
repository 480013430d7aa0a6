"""Run retrieval evaluations end to end and return the stable JSON result (docs/EVAL.md).

Each data set is indexed once into a fresh temporary store; every preset is then run
against that same store, so presets differ only in how they search. Latency is measured per
query around ``Memory.search`` (after one untimed warm-up search per preset).
"""

from __future__ import annotations

import dataclasses

import os
import re
import resource
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..model import Entry, Hit, Source
from .datasets import LOCOMO_CATEGORIES, LocomoSample, load_beir, load_locomo
from .metrics import hit_at_k, mean, mrr_at_k, ndcg_at_k, percentile, recall_at_k

__all__ = [
    "run_beir",
    "run_locomo",
    "hits_to_turns",
    "default_cache_dir",
    "peak_rss_mb",
    "SCHEMA_VERSION",
]

#: bumped only on a breaking change of the result layout
SCHEMA_VERSION = 1
_INDEX_BATCH = 256


# Per-query details list the first this-many hits as [score, relevant] (score calibration).
_SCORED = 20


def default_cache_dir() -> Path:
    """Where document vectors are cached: ``$ENGRAM_CACHE_DIR`` or ``~/.cache/engram/embeddings``."""
    env = os.environ.get("ENGRAM_CACHE_DIR")
    return Path(env).expanduser() if env else Path("~/.cache/engram/embeddings").expanduser()


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB (``getrusage``)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


class _NullProgress:
    """Stands in for rich's Progress when progress display is off."""

    def add_task(self, description: str, total: float | None = None) -> int:
        return 0

    def advance(self, task: int, advance: float = 1) -> None:
        return None

    def __enter__(self) -> "_NullProgress":
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _progress(enabled: bool) -> Any:
    if not enabled:
        return _NullProgress()
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
    )


def _check_presets(presets: Sequence[str]) -> list[str]:
    names = [p for p in presets if p]
    if not names:
        raise ValueError("no preset given")
    try:
        from ..pipeline.presets import PRESET_NAMES
    except ImportError:  # pragma: no cover - the core decides what exists
        return names
    unknown = [p for p in names if p not in PRESET_NAMES and not p.endswith(".toml")]
    if unknown:
        raise ValueError(f"unknown preset(s) {', '.join(unknown)}; choose from: {', '.join(PRESET_NAMES)}")
    return names


def _embedder(embedder: Any, cache_dir: str | Path | None) -> tuple[Any, str]:
    """Resolve an embedder name (with the vector cache) or pass an Embedder object through."""
    if not isinstance(embedder, str):
        return embedder, str(getattr(embedder, "name", type(embedder).__name__))
    from ..embed import get_embedder

    return get_embedder(embedder, cache_dir=cache_dir), embedder


def _backend(store: str | None) -> str:
    """``"sqlite"`` (a temporary file, the default) or ``"postgres"`` (a ``postgresql://`` URL)."""
    if store is None:
        return "sqlite"
    from ..store.open import backend_of

    if backend_of(store) != "postgres":
        raise ValueError(f"--store takes a postgresql:// URL of a server to evaluate on, not {store!r} "
                         "(without it the evaluation runs on a temporary SQLite file)")
    return "postgres"


def _eval_target(store: str | None) -> Any:
    """Where the evaluation's fresh store lives: a file in a temporary folder, or a scratch
    database created on the `store` server and dropped afterwards."""
    from ..store.open import scratch_target

    _backend(store)
    return scratch_target(store)


def _open_memory(target: str, namespace: str, embedder: Any) -> Any:
    from ..memory import Memory

    return Memory(target, namespace=namespace, embedder=embedder)


def _index(
    mem: Any,
    entries: Sequence[Entry],
    namespace: str | None,
    bar: Any,
    task: int,
) -> tuple[list[str], float]:
    """Add entries in batches (advancing the bar); return their ids and the seconds spent."""
    ids: list[str] = []
    start = time.perf_counter()
    for i in range(0, len(entries), _INDEX_BATCH):
        batch = list(entries[i : i + _INDEX_BATCH])
        ids.extend(mem.add(batch, namespace=namespace, batch_size=_INDEX_BATCH))
        bar.advance(task, len(batch))
    return ids, time.perf_counter() - start


def _timed(search: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    res = search()
    return res, (time.perf_counter() - start) * 1000.0


def _latency(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p50": 0.0, "p95": 0.0, "mean": 0.0}
    return {
        "p50": round(percentile(values, 50), 3),
        "p95": round(percentile(values, 95), 3),
        "mean": round(mean(values), 3),
    }


def _cutoffs(k: int, extra: Iterable[int] = ()) -> list[int]:
    return sorted({10, k, *extra})


def _score(ranking: Sequence[Any], relevant: Any, k: int, recall_at: Iterable[int],
           deep: Sequence[Any] | None = None) -> dict[str, float]:
    """All metrics of one query: the stable @10 set, the same at k, and recall at each cutoff.

    ``ranking`` is what a search for the top max(k, 10) returned, as a user's search would;
    ``deep`` (a search for the evaluation depth) gives the recall at cutoffs beyond that.
    """
    out: dict[str, float] = {}
    top = max(k, 10)
    for c in _cutoffs(k):
        out[f"ndcg@{c}"] = ndcg_at_k(ranking, relevant, c)
    for c in _cutoffs(k, recall_at):
        out[f"recall@{c}"] = recall_at_k(ranking if c <= top or deep is None else deep, relevant, c)
    for c in _cutoffs(k):
        out[f"mrr@{c}"] = mrr_at_k(ranking, relevant, c)
    for c in _cutoffs(k):
        out[f"hit@{c}"] = hit_at_k(ranking, relevant, c)
    return out


def _average(rows: list[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    keys = list(rows[0])
    return {key: round(mean(r[key] for r in rows), 4) for key in keys}


def _meta(kind: str, name: str, embedder: Any, embedder_name: str, k: int, depth: int,
          backend: str = "sqlite") -> dict[str, Any]:
    try:
        from importlib.metadata import version

        engram_version = version("engramdb")
    except Exception:  # pragma: no cover - not installed as a distribution
        engram_version = None
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": kind,
        "dataset": name,
        "embedder": embedder_name,
        "embedder_model": str(getattr(embedder, "name", embedder_name)),
        "k": k,
        "depth": depth,
        "backend": backend,
        "engram_version": engram_version,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


# --------------------------------------------------------------------------- BEIR


def run_beir(
    dataset_dir: str | Path,
    presets: Sequence[str] = ("default",),
    k: int = 10,
    embedder: Any = "e5-small",
    progress: bool = True,
    limit_queries: int | None = None,
    cache_dir: str | Path | None = None,
    depth: int = 100,
    details: bool = False,
    split: str = "test",
    store: str | None = None,
) -> dict[str, Any]:
    """Evaluate a BEIR-layout directory; return the result dict of docs/EVAL.md.

    Every document becomes ``Entry(kind="chunk", text=title + "\\n" + text,
    source=Source(doc_id=_id))``; each query is searched once per preset with
    ``k=max(k, 10)`` (the @k metrics and the latency: what a user's search returns) and again
    with ``k=max(k, depth)`` (recall beyond it), ``group_by="doc"``; metrics use the ranked
    document ids.
    ``cache_dir`` caches document vectors (pass None to disable; the CLI defaults to
    :func:`default_cache_dir`). ``details`` adds per-query rows to each preset's result.
    ``split`` names the judgements file, ``qrels/<split>.tsv`` (only its judged queries run).
    ``store`` (a ``postgresql://`` URL) runs on a scratch database created on that server and
    dropped afterwards instead of a temporary SQLite file; the result's ``backend`` says which.
    """
    names = _check_presets(presets)
    ds = load_beir(dataset_dir, split)
    query_ids = ds.query_ids[:limit_queries] if limit_queries else ds.query_ids
    emb, emb_name = _embedder(embedder, cache_dir)
    search_k, top_k = max(k, depth), max(k, 10)
    result = _meta("beir", ds.name, emb, emb_name, k, search_k, _backend(store))
    result.update(n_queries=len(query_ids), n_docs=len(ds.corpus), results=[])
    if ds.qrels_missing_docs or ds.qrels_missing_queries:
        # Said, not silent: a judged document the corpus lacks still counts as relevant (as
        # BEIR scores it), so it lowers recall; a judged query the queries file lacks is skipped.
        result["qrels_unmatched"] = {"docs": ds.qrels_missing_docs, "queries": ds.qrels_missing_queries}
    if split != "test":
        result["split"] = split
    entries = [
        Entry(
            text=f"{doc.title}\n{doc.text}".strip() if doc.title else doc.text,
            kind="chunk",
            source=Source(doc_id=doc.id),
            timestamp=doc.timestamp,
        )
        for doc in ds.corpus.values()
    ]
    with _eval_target(store) as target, _progress(progress) as bar:
        with _open_memory(target, "beir", emb) as mem:
            task = bar.add_task(f"index {ds.name}", total=len(entries))
            _, index_s = _index(mem, entries, None, bar, task)
            paired: dict[str, Any] = {}
            for preset in names:
                rows: list[dict[str, float]] = []
                lat: list[float] = []
                per_query: list[dict[str, Any]] = []
                mem.search(ds.queries[query_ids[0]], k=top_k, preset=preset, group_by="doc")  # warm-up
                task = bar.add_task(f"{preset:>9}", total=len(query_ids))
                for qid in query_ids:
                    now = ds.query_now.get(qid)  # None: Memory's default (the newest entry's time)
                    top, ms = _timed(
                        lambda: mem.search(ds.queries[qid], k=top_k, preset=preset, group_by="doc", now=now)
                    )
                    res = top if search_k == top_k else \
                        mem.search(ds.queries[qid], k=search_k, preset=preset, group_by="doc", now=now)
                    ranking = _doc_ranking(top.hits)
                    scores = _score(ranking, ds.relevant(qid), k, (100, depth), deep=_doc_ranking(res.hits))
                    rows.append(scores)
                    lat.append(ms)
                    if details:
                        relevant = ds.relevant(qid)
                        per_query.append({"id": qid, **scores, "latency_ms": round(ms, 3), "top": ranking[:k],
                                          "scored": [[round(h.score, 6), int((h.entry.source.doc_id or h.id) in relevant)]
                                                     for h in res.hits[:_SCORED]], **_plan_read(res.trace)})
                    bar.advance(task)
                row: dict[str, Any] = {"preset": preset, **_average(rows)}
                row.update(latency_ms=_latency(lat), index_s=round(index_s, 3), by_category=None)
                _compare(row, rows, paired)
                if details:
                    row["per_query"] = per_query
                result["results"].append(row)
    result["index_s"] = round(index_s, 3)
    result["peak_rss_mb"] = round(peak_rss_mb(), 1)
    return result


def _plan_read(trace: dict[str, Any]) -> dict[str, Any]:
    """How the planner read a query, for per-query details: its intent, whether it named a time
    window, asked about now or about before; and how many candidates each channel recalled."""
    out: dict[str, Any] = {}
    for stage in trace.get("stages", []):
        if stage.get("stage") == "plan" and isinstance(stage.get("plan"), dict) and "plan" not in out:
            plan = stage["plan"]
            out["plan"] = {"intent": plan.get("intent"), "window": stage.get("time_window") is not None,
                           "present": bool(plan.get("present")), "former": bool(plan.get("former"))}
        elif stage.get("stage") == "recall" and isinstance(stage.get("channels"), dict) and "recalled" not in out:
            out["recalled"] = {name: info.get("n", 0) for name, info in stage["channels"].items()}
    return out


def _doc_ranking(hits: Sequence[Hit]) -> list[str]:
    """Document ids of the hits in rank order, first occurrence only (chunks of one doc collapse)."""
    seen: set[str] = set()
    out: list[str] = []
    for hit in hits:
        doc = hit.entry.source.doc_id or hit.id
        if doc not in seen:
            seen.add(doc)
            out.append(doc)
    return out


# --------------------------------------------------------------------------- LoCoMo


def hits_to_turns(
    hits: Sequence[Hit], id_to_turn: dict[str, str], namespace: str | None = None
) -> list[tuple[str, ...]]:
    """Map each hit to the dia_ids it stands for, keeping one position per hit.

    A turn hit maps through ``entry.source.turn_id``; any other hit (a fact or summary) maps
    through ``entry.derived_from`` (entry ids of turns, translated with ``id_to_turn``). A hit
    that maps to no turn, or that belongs to another ``namespace`` than the one given (dia_ids
    repeat across conversations), keeps its position with no ids: it is simply not relevant.
    """
    out: list[tuple[str, ...]] = []
    for hit in hits:
        entry = hit.entry
        if entry is None or (namespace is not None and entry.namespace != namespace):
            out.append(())
            continue
        turn = entry.source.turn_id
        if turn and entry.kind == "turn":
            out.append((turn,))
            continue
        sources = entry.derived_from or entry.metadata.get(_SOURCE_TURNS) or []
        out.append(tuple(dict.fromkeys(id_to_turn[d] for d in sources if d in id_to_turn)))
    return out


# A facts-only memory stores no turns, and a derived_from link must name a stored entry: the
# entry ids of the turns each fact came from are kept here instead, for scoring.
_SOURCE_TURNS = "eval_source_turns"


def _namespace(sample_id: str, memory: str = "turns") -> str:
    return f"locomo_{memory}_" + re.sub(r"[^A-Za-z0-9_-]+", "_", sample_id)


MEMORIES = ("turns", "facts", "both")


def _memory_entries(sample: LocomoSample, namespace: str, memory: str, extractor: Any) -> tuple[list[Entry], dict[str, str]]:
    """Entries to index for one sample and `memory` mode, and turn-entry id -> dia_id."""
    entries: list[Entry] = []
    id_to_turn: dict[str, str] = {}
    from ..conversation.formats import locomo_conversations

    for conversation in locomo_conversations(sample):
        turns = [t.to_entry(namespace) for t in conversation.turns]
        id_to_turn.update((e.id, t.turn_id) for e, t in zip(turns, conversation.turns))  # type: ignore[misc]
        if memory in ("turns", "both"):
            entries += turns
        if memory in ("facts", "both") and extractor is not None:
            ids = {t.turn_id: e.id for t, e in zip(conversation.turns, turns)}
            facts = extractor.extract(conversation, ids, namespace).facts
            if memory == "facts":  # no turns stored for them to link to: the turns go in metadata
                facts = [dataclasses.replace(f, derived_from=[], metadata={**f.metadata, _SOURCE_TURNS: f.derived_from})
                         for f in facts]
            entries += facts  # type: ignore[arg-type]
    return entries, id_to_turn


def dedupe_turn_ranking(ranking: Sequence[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """Drop positions that only repeat turns already ranked (a fact after its own turn, say),
    as BEIR rankings collapse chunks of one document."""
    seen: set[str] = set()
    out: list[tuple[str, ...]] = []
    for turns in ranking:
        if turns and all(t in seen for t in turns):
            continue
        seen.update(turns)
        out.append(turns)
    return out


def _evidence_summary(samples: Sequence[LocomoSample]) -> dict[str, Any]:
    issues = [i for s in samples for i in s.evidence_issues]
    counts = {kind: sum(1 for i in issues if i.kind == kind) for kind in ("normalised", "malformed", "unknown")}
    return {
        **counts,
        "questions_without_evidence": sum(1 for s in samples for q in s.questions if not q.evidence),
        "problems": [
            {"sample_id": i.sample_id, "qa_index": i.question_index, "raw": i.raw, "kind": i.kind}
            for i in issues
            if i.kind != "normalised"
        ],
    }


def run_locomo(
    path: str | Path,
    presets: Sequence[str] = ("default",),
    k: int = 10,
    embedder: Any = "e5-small",
    progress: bool = True,
    limit_queries: int | None = None,
    cache_dir: str | Path | None = None,
    depth: int = 100,
    details: bool = False,
    memories: Sequence[str] = ("turns",),
    extractor: Any = "offline",
    store: str | None = None,
) -> dict[str, Any]:
    """Evaluate evidence retrieval on a LoCoMo file; return the result dict of docs/EVAL.md.

    Each conversation is indexed into its own namespace, once per ``memories`` mode:
    ``turns`` (one ``turn`` entry per turn, stamped with its session's start time),
    ``facts`` (only the facts ``extractor`` restates from the turns) or ``both``. A fact
    hit counts as the turns it was derived from; a position that only repeats turns
    already ranked is dropped. Every question with usable evidence is
    searched once per preset in its conversation's namespace with ``k=max(k, 10)`` and once
    with ``k=max(k, depth)`` (recall beyond k).
    Categories 1-4 make the overall numbers and ``by_category``; category 5 (adversarial)
    is reported apart under ``category_5``. ``limit_queries`` keeps the first N usable
    questions in file order (and indexes only the conversations they need).
    ``store``: as for `run_beir` (a scratch database on a PostgreSQL server).
    """
    names = _check_presets(presets)
    unknown = [m for m in memories if m not in MEMORIES]
    if unknown or not memories:
        raise ValueError(f"unknown memory mode(s) {', '.join(unknown)}; choose from: {', '.join(MEMORIES)}")
    from ..conversation import get_extractor

    chosen_extractor = get_extractor(extractor) if any(m != "turns" for m in memories) else None
    samples = load_locomo(path)
    selected: list[tuple[LocomoSample, Any]] = [(s, q) for s in samples for q in s.questions if q.evidence]
    if limit_queries:
        selected = selected[:limit_queries]
    if not selected:
        raise ValueError(f"{path}: no question with usable evidence to evaluate")
    needed = {s.sample_id for s, _ in selected}
    to_index = [s for s in samples if s.sample_id in needed]
    emb, emb_name = _embedder(embedder, cache_dir)
    search_k, top_k = max(k, depth), max(k, 10)
    result = _meta("locomo", Path(path).stem, emb, emb_name, k, search_k, _backend(store))
    n_main = sum(1 for _, q in selected if q.category != 5)
    result.update(
        n_queries=n_main,
        n_queries_category_5=len(selected) - n_main,
        n_conversations=len(to_index),
        n_turns=sum(len(sess.turns) for s in to_index for sess in s.sessions),
        categories={str(c): name for c, name in LOCOMO_CATEGORIES.items()},
        evidence=_evidence_summary(samples),
        results=[],
    )
    result["memories"] = list(memories)
    result["extractor"] = getattr(chosen_extractor, "name", None)
    id_to_turn: dict[str, str] = {}
    entry_counts: dict[str, int] = {}
    with _eval_target(store) as target, _progress(progress) as bar:
        with _open_memory(target, "default", emb) as mem:
            index_s = 0.0
            for memory in memories:
                task = bar.add_task(f"index {memory}", total=len(to_index))
                entry_counts[memory] = 0
                for sample in to_index:
                    ns = _namespace(sample.sample_id, memory)
                    entries, turn_ids = _memory_entries(sample, ns, memory, chosen_extractor)
                    id_to_turn.update(turn_ids)
                    start = time.perf_counter()
                    mem.add(entries, namespace=ns, batch_size=_INDEX_BATCH)
                    index_s += time.perf_counter() - start
                    entry_counts[memory] += len(entries)
                    bar.advance(task)
            result["n_entries"] = entry_counts
            paired: dict[str, Any] = {}
            for memory, preset in [(m, p) for m in memories for p in names]:
                first_sample, first_q = selected[0]
                mem.search(first_q.question, k=top_k, namespace=_namespace(first_sample.sample_id, memory),
                           preset=preset)
                task = bar.add_task(f"{preset:>9} {memory}", total=len(selected))
                by_cat: dict[int, list[dict[str, float]]] = {}
                in_order: list[dict[str, float]] = []  # categories 1-4, in question order (for pairing)
                lat: list[float] = []
                per_query: list[dict[str, Any]] = []
                for sample, q in selected:
                    ns = _namespace(sample.sample_id, memory)
                    top, ms = _timed(lambda: mem.search(q.question, k=top_k, namespace=ns, preset=preset))
                    res = top if search_k == top_k else mem.search(q.question, k=search_k, namespace=ns, preset=preset)
                    turns = hits_to_turns(res.hits, id_to_turn, ns)
                    ranking = dedupe_turn_ranking(hits_to_turns(top.hits, id_to_turn, ns))
                    scores = _score(ranking, set(q.evidence), k, (5, 100, depth), deep=dedupe_turn_ranking(turns))
                    by_cat.setdefault(q.category, []).append(scores)
                    if q.category != 5:
                        in_order.append(scores)
                    lat.append(ms)
                    if details:
                        per_query.append(
                            {"sample_id": sample.sample_id, "qa_index": q.index, "category": q.category,
                             **scores, "latency_ms": round(ms, 3), "top": [list(p) for p in ranking[:k]],
                             "scored": [[round(h.score, 6), int(bool(set(t) & set(q.evidence)))]
                                        for h, t in zip(res.hits[:_SCORED], turns)], **_plan_read(res.trace)}
                        )
                    bar.advance(task)
                main_rows = [r for c, rows in by_cat.items() if c != 5 for r in rows]
                row: dict[str, Any] = {"preset": preset, **_average(main_rows)}
                if memories != ("turns",) and list(memories) != ["turns"]:
                    row["memory"] = memory
                if not main_rows:
                    row.update({key: None for key in ("ndcg@10", "recall@10", "recall@100", "mrr@10", "hit@10")})
                row.update(
                    latency_ms=_latency(lat),
                    index_s=round(index_s, 3),
                    by_category={
                        str(c): {"n": len(by_cat[c]), **_average(by_cat[c])} for c in sorted(by_cat) if c != 5
                    },
                    category_5=({"n": len(by_cat[5]), **_average(by_cat[5])} if 5 in by_cat else None),
                )
                _compare(row, in_order, paired.setdefault(memory, {}))
                if details:
                    row["per_query"] = per_query
                result["results"].append(row)
    result["index_s"] = round(index_s, 3)
    result["peak_rss_mb"] = round(peak_rss_mb(), 1)
    return result


def _compare(row: dict[str, Any], rows: list[dict[str, float]], paired: dict[str, Any]) -> None:
    """Against the first preset of the run: mean difference and paired-test p per metric."""
    if "base" not in paired:
        paired["base"], paired["preset"] = rows, row["preset"]
        return
    if rows and len(rows) == len(paired["base"]):
        from .significance import compare_rows

        row["vs_first"] = {"preset": paired["preset"], **compare_rows(paired["base"], rows)}

