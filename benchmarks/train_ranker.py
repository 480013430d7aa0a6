"""Train and cross-validate the learned fusion model (`engramdb.pipeline.ranker`).

Three steps, each reproducible from the public development sets:

    # 1. features of every recalled candidate of every query (plan + recall of `default`,
    #    as `engram eval` runs them: k = 100), with relevance labels
    python benchmarks/train_ranker.py collect --data ../shared/data --out /tmp/ranker
    # 2. cross-validation: leave one data set out, and LoCoMo leave-conversations-out
    python benchmarks/train_ranker.py cv /tmp/ranker
    # 3. the shipped model, fitted on everything
    python benchmarks/train_ranker.py fit /tmp/ranker --out src/engramdb/pipeline/models/ranker.json

`fit --exclude NAME` leaves a data set out (for checking a held-out set with `engram eval`
and a preset whose ``[fusion] model`` is that file). The model is a pointwise logistic
regression over standardised features (L2, Newton's method), each data set weighing the same
whatever its number of candidates; its probability is then recalibrated on each query's
top 20, the hits a user sees.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from engramdb.eval.datasets import load_beir, load_locomo
from engramdb.eval.metrics import hit_at_k, ndcg_at_k, recall_at_k
from engramdb.eval.runner import _SOURCE_TURNS, _memory_entries, _namespace, dedupe_turn_ranking, default_cache_dir
from engramdb.lifecycle import view
from engramdb.memory import Memory
from engramdb.model import Entry, Source
from engramdb.pipeline.context import SearchContext
from engramdb.pipeline.presets import load_preset
from engramdb.pipeline.ranker import FEATURES, RankerModel, features, query_traits
from engramdb.pipeline.recall import RecallStage, fusion_inputs
from engramdb.pipeline.search import SearchPipeline
from engramdb.pipeline.stages import PlanStage
from engramdb.pipeline.trace import Trace
from engramdb.plan.model import QueryPlan
from engramdb.store.base import Filters

BEIR_SETS = ("scifact", "cmrc2018", "madial_en")
DEPTH = 100


@dataclass
class Query:
    group: str  # conversation (LoCoMo) or query id: the unit of leave-out
    matrix: np.ndarray
    keys: list[tuple[str, ...]]  # what each candidate stands for (doc id, or turn ids)
    relevant: dict[str, int]
    beir: bool
    category: int = 0


@dataclass
class Dataset:
    name: str
    queries: list[Query] = field(default_factory=list)


def _recall(mem: Memory, pipe: SearchPipeline, preset: Any, query: str, ns: str) -> tuple[list[int], np.ndarray]:
    """Plan and recall as `default` does, then the features fusion would see."""
    reference, _ = mem.reference_time(ns, None)
    ctx = SearchContext(query=query, k=DEPTH, namespace=ns, filters=view(Filters(), False, False),
                        trace=Trace(), now=reference, plan=QueryPlan(query=query, planner="none"))
    PlanStage(pipe.planner, mem.store.match_names)(ctx, [], {})
    RecallStage(preset.channels, mem.store, mem.embedder, mem._executor, preset.adapt)(ctx, [], {})
    results, weights, terms = fusion_inputs(preset, ctx, {})
    return features(results, weights, query_traits(query, ctx.plan, terms))


def _pipeline(mem: Memory, preset: Any) -> SearchPipeline:
    planner, _ = mem._planning(preset.planner, 0)
    return SearchPipeline(mem.store, mem.embedder, mem._executor, planner=planner)


def collect_beir(path: Path, embedder: Any) -> Dataset:
    ds = load_beir(path)
    out = Dataset(ds.name)
    preset = load_preset("default")
    with tempfile.TemporaryDirectory() as tmp, Memory(f"{tmp}/e.db", namespace="beir", embedder=embedder) as mem:
        entries = [Entry(text=f"{d.title}\n{d.text}".strip() if d.title else d.text, kind="chunk",
                         source=Source(doc_id=d.id)) for d in ds.corpus.values()]
        for i in range(0, len(entries), 256):
            mem.add(entries[i:i + 256])
        pipe = _pipeline(mem, preset)
        for n, qid in enumerate(ds.query_ids):
            rowids, matrix = _recall(mem, pipe, preset, ds.queries[qid], "beir")
            docs = mem.store.fetch(rowids)
            keys = [(docs[r].source.doc_id or "",) if r in docs else () for r in rowids]
            out.queries.append(Query(group=qid, matrix=matrix.astype(np.float32), keys=keys,
                                     relevant=ds.relevant(qid), beir=True))
            if n % 200 == 0:
                print(f"  {ds.name}: {n}/{len(ds.query_ids)}", file=sys.stderr)
    return out


def collect_locomo(path: Path, embedder: Any, memory: str) -> Dataset:
    from engramdb.conversation import get_extractor

    samples = load_locomo(path)
    extractor = get_extractor("offline") if memory != "turns" else None
    out = Dataset(f"locomo_{memory}")
    preset = load_preset("default")
    with tempfile.TemporaryDirectory() as tmp, Memory(f"{tmp}/e.db", embedder=embedder) as mem:
        id_to_turn: dict[str, str] = {}
        for sample in samples:
            ns = _namespace(sample.sample_id, memory)
            entries, turn_ids = _memory_entries(sample, ns, memory, extractor)
            id_to_turn.update(turn_ids)
            mem.add(entries, namespace=ns, batch_size=256)
        pipe = _pipeline(mem, preset)
        for sample in samples:
            ns = _namespace(sample.sample_id, memory)
            for q in sample.questions:
                if not q.evidence or q.category == 5:
                    continue
                rowids, matrix = _recall(mem, pipe, preset, q.question, ns)
                entries_ = mem.store.fetch(rowids)
                keys: list[tuple[str, ...]] = []
                for r in rowids:
                    e = entries_.get(r)
                    if e is None:
                        keys.append(())
                    elif e.kind == "turn" and e.source.turn_id:
                        keys.append((e.source.turn_id,))
                    else:
                        sources = e.derived_from or e.metadata.get(_SOURCE_TURNS) or []  # facts alone
                        keys.append(tuple(dict.fromkeys(id_to_turn[d] for d in sources if d in id_to_turn)))
                out.queries.append(Query(group=sample.sample_id, matrix=matrix.astype(np.float32), keys=keys,
                                         relevant={t: 1 for t in q.evidence}, beir=False, category=q.category))
            print(f"  {out.name}: {sample.sample_id} done", file=sys.stderr)
    return out


# ----------------------------------------------------------------------------- fitting
def _labels(q: Query) -> np.ndarray:
    return np.array([1.0 if any(k in q.relevant for k in keys) else 0.0 for keys in q.keys])


QUERY_LEVEL = tuple(i for i, name in enumerate(FEATURES) if name.startswith("query.")
                    or name in ("semantic.peak", "lexical.peak", "agreement"))


def _standardise(queries_by_set: dict[str, list[Query]]) -> tuple[np.ndarray, np.ndarray]:
    xs = [q.matrix.astype(np.float64) for qs in queries_by_set.values() for q in qs]
    x = np.concatenate(xs)
    mean, scale = x.mean(0), x.std(0)
    scale[scale < 1e-9] = 1.0
    return mean, scale


def fit(queries_by_set: dict[str, list[Query]], l2: float = 1.0) -> RankerModel:
    """Listwise softmax regression (ListNet with one-hot-ish targets), each data set weighing
    the same and each query the same within it; then a calibration of the probability."""
    mean, scale = _standardise(queries_by_set)
    per: list[tuple[np.ndarray, np.ndarray, float]] = []
    for qs in queries_by_set.values():
        usable = [q for q in qs if _labels(q).any()]
        for q in usable:
            y = _labels(q)
            per.append(((q.matrix.astype(np.float64) - mean) / scale, y / y.sum(), 1.0 / len(usable)))
    f = len(FEATURES)
    mask = np.ones(f)
    mask[list(QUERY_LEVEL)] = 0.0  # constant within a query: no say in its order
    theta = np.zeros(f)
    total = sum(w for _, _, w in per)
    reg = l2 * 1e-2 * total
    def objective(theta: np.ndarray, derivatives: bool) -> tuple[float, np.ndarray, np.ndarray]:
        loss = 0.5 * reg * float(theta @ theta)
        grad, hess = reg * theta, reg * np.eye(f)
        for z, t, w in per:
            s = z @ theta
            s = s - s.max()
            log_norm = float(np.log(np.exp(s).sum()))
            loss -= w * float(t @ (s - log_norm))
            if derivatives:
                p = np.exp(s - log_norm)
                grad = grad + w * (z.T @ (p - t))
                zp = z.T @ p
                hess = hess + w * ((z * p[:, None]).T @ z - np.outer(zp, zp))
        return loss, grad, hess

    for _ in range(30):
        loss, grad, hess = objective(theta, True)
        grad = grad * mask
        hess = hess * np.outer(mask, mask) + np.diag(1 - mask)
        step = np.linalg.solve(hess, grad)
        size = 1.0
        while size > 1e-4 and objective(theta - size * step, False)[0] > loss:
            size /= 2
        theta = theta - size * step
        if np.abs(size * step).max() < 1e-6:
            break
    model = RankerModel(name="ranker", features=FEATURES, mean=mean, scale=scale, coef=theta,
                        intercept=0.0, info={})
    return _calibrate(model, queries_by_set)


def _calibrate(model: RankerModel, queries_by_set: dict[str, list[Query]], top: int = 20) -> RankerModel:
    """p = sigmoid(a · score + d · query traits + b), fitted on each query's top `top` (what a
    user sees), each data set weighing the same. Query traits are constant within a query and
    a > 0, so the order within a query is unchanged."""
    cols = list(QUERY_LEVEL)
    xs, ys, ws = [], [], []
    for qs in queries_by_set.values():
        part_x, part_y = [], []
        for q in qs:
            m = q.matrix.astype(np.float64)
            logits = model.logits(m)
            order = np.argsort(-logits, kind="stable")[:top]
            z = (m[order][:, cols] - model.mean[cols]) / model.scale[cols]
            part_x.append(np.column_stack([logits[order], z, np.ones(len(order))]))
            part_y.append(_labels(q)[order])
        px, py = np.concatenate(part_x), np.concatenate(part_y)
        xs.append(px), ys.append(py), ws.append(np.full(len(px), 1.0 / len(px)))
    x, y, w = np.concatenate(xs), np.concatenate(ys), np.concatenate(ws)
    beta = np.zeros(x.shape[1])
    beta[0] = 1.0
    reg = 1e-2 * np.ones(x.shape[1])
    reg[-1] = 0

    def loss(beta: np.ndarray) -> float:
        z = x @ beta
        return float(np.sum(w * (np.logaddexp(0, z) - y * z)) + 0.5 * reg @ (beta * beta))

    for _ in range(100):
        p = 1 / (1 + np.exp(-np.clip(x @ beta, -50, 50)))
        grad = x.T @ (w * (p - y)) + reg * beta
        hess = (x * (w * p * (1 - p))[:, None]).T @ x + np.diag(reg) + 1e-12 * np.eye(len(beta))
        step = np.linalg.solve(hess, grad)
        size, current = 1.0, loss(beta)
        while size > 1e-6 and loss(beta - size * step) > current:
            size /= 2
        beta = beta - size * step
        if np.abs(size * step).max() < 1e-10:
            break
    a = max(float(beta[0]), 1e-3)
    print(f"    listwise |theta| {np.abs(model.coef).max():.2f}, calibration slope {a:.3f}", file=sys.stderr)
    coef = model.coef * a
    coef[cols] += beta[1:-1]
    return RankerModel(name=model.name, features=model.features, mean=model.mean, scale=model.scale,
                       coef=coef, intercept=float(beta[-1]), info=model.info)


# ----------------------------------------------------------------------------- scoring
def ranking(q: Query, scores: np.ndarray) -> list[Any]:
    order = np.lexsort((np.arange(len(scores)), -scores))
    keys = [q.keys[i] for i in order]
    if q.beir:
        seen: set[str] = set()
        out = []
        for k in keys:
            if k and k[0] not in seen:
                seen.add(k[0])
                out.append(k[0])
        return out
    return dedupe_turn_ranking(keys)


def metrics(queries: list[Query], score: Any) -> dict[str, float]:
    rows = []
    for q in queries:
        r = ranking(q, score(q))
        rows.append((ndcg_at_k(r, q.relevant, 10), recall_at_k(r, q.relevant, 10), hit_at_k(r, q.relevant, 10)))
    arr = np.array(rows)
    return {"ndcg@10": float(arr[:, 0].mean()), "recall@10": float(arr[:, 1].mean()),
            "hit@10": float(arr[:, 2].mean()), "n": len(queries)}


def base_score(q: Query) -> np.ndarray:
    return q.matrix[:, FEATURES.index("base")].astype(np.float64)


def model_score(model: RankerModel) -> Any:
    return lambda q: model.logits(q.matrix.astype(np.float64))


def ece(model: RankerModel, queries: list[Query], top: int = 20) -> float:
    ps, ys = [], []
    for q in queries:
        logits = model.logits(q.matrix.astype(np.float64))
        order = np.argsort(-logits, kind="stable")[:top]
        ps.append(1 / (1 + np.exp(-logits[order]))), ys.append(_labels(q)[order])
    p, y = np.concatenate(ps), np.concatenate(ys)
    bins = np.minimum((p * 10).astype(int), 9)
    return float(sum(abs(p[bins == b].mean() - y[bins == b].mean()) * (bins == b).sum() for b in range(10)
                     if (bins == b).any()) / len(p))


# ----------------------------------------------------------------------------- commands
def load_sets(folder: Path) -> dict[str, list[Query]]:
    return {p.stem: pickle.loads(p.read_bytes()).queries for p in sorted(folder.glob("*.pkl"))}


def _family(name: str) -> str:
    return "locomo" if name.startswith("locomo") else name


def cmd_collect(args: argparse.Namespace) -> None:
    from engramdb.embed import get_embedder

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    embedder = get_embedder("e5-small", cache_dir=default_cache_dir())
    data = Path(args.data)
    jobs: list[tuple[str, Any]] = [(n, lambda n=n: collect_beir(data / n, embedder)) for n in BEIR_SETS]
    jobs += [(f"locomo_{m}", lambda m=m: collect_locomo(data / "locomo" / "locomo10.json", embedder, m))
             for m in ("turns", "both")]
    for name, job in jobs:
        if args.only and name not in args.only:
            continue
        print(f"collect {name}", file=sys.stderr)
        (out / f"{name}.pkl").write_bytes(pickle.dumps(job()))


def cmd_cv(args: argparse.Namespace) -> None:
    sets = load_sets(Path(args.folder))
    report: dict[str, Any] = {"leave_one_dataset_out": {}, "locomo_leave_conversations_out": {}}
    print(f"{'held out':<14} {'metric':<10} {'fixed':>7} {'learned':>8}  ECE")
    for held in sorted({_family(n) for n in sets}):
        train = {n: qs for n, qs in sets.items() if _family(n) != held}
        model = fit(train, args.l2)
        for name in [n for n in sets if _family(n) == held]:
            base, ours = metrics(sets[name], base_score), metrics(sets[name], model_score(model))
            report["leave_one_dataset_out"][name] = {"fixed": base, "learned": ours, "ece": ece(model, sets[name])}
            for m in ("ndcg@10", "recall@10", "hit@10"):
                print(f"{name:<14} {m:<10} {base[m]:7.4f} {ours[m]:8.4f}  {ece(model, sets[name]):.3f}")
    loco = [n for n in sets if n.startswith("locomo")]
    groups = sorted({q.group for n in loco for q in sets[n]})
    folds = [groups[i::5] for i in range(5)]
    pooled: dict[str, list[tuple[Query, np.ndarray]]] = {n: [] for n in loco}
    for fold in folds:
        train = {n: [q for q in qs if not (n.startswith("locomo") and q.group in fold)] for n, qs in sets.items()}
        model = fit(train, args.l2)
        for n in loco:
            for q in sets[n]:
                if q.group in fold:
                    pooled[n].append((q, model_score(model)(q)))
    for n in loco:
        qs = [q for q, _ in pooled[n]]
        scores = {id(q): s for q, s in pooled[n]}
        base, ours = metrics(qs, base_score), metrics(qs, lambda q: scores[id(q)])
        report["locomo_leave_conversations_out"][n] = {"fixed": base, "learned": ours}
        for m in ("ndcg@10", "recall@10", "hit@10"):
            print(f"{n + ' (LCO)':<14} {m:<10} {base[m]:7.4f} {ours[m]:8.4f}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


def cmd_fit(args: argparse.Namespace) -> None:
    sets = {n: qs for n, qs in load_sets(Path(args.folder)).items() if _family(n) not in (args.exclude or [])}
    model = fit(sets, args.l2)
    info = {"trained_on": {n: len(qs) for n, qs in sets.items()}, "l2": args.l2,
            "command": "python benchmarks/train_ranker.py fit " + " ".join(sys.argv[3:])}
    data = RankerModel(name=args.name, features=model.features, mean=model.mean, scale=model.scale,
                       coef=model.coef, intercept=model.intercept, info=info).to_dict()
    for key in ("mean", "scale", "coef"):
        data[key] = [round(v, 6) for v in data[key]]
    data["intercept"] = round(data["intercept"], 6)
    Path(args.out).write_text(json.dumps(data, indent=1) + "\n")
    for name, qs in sets.items():
        print(f"{name:<14} fixed {metrics(qs, base_score)['ndcg@10']:.4f} learned (in-sample) "
              f"{metrics(qs, model_score(model))['ndcg@10']:.4f} ECE {ece(model, qs):.3f}")
    top = np.argsort(-np.abs(model.coef))[:12]
    print("largest coefficients:", ", ".join(f"{FEATURES[i]} {model.coef[i]:+.2f}" for i in top))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--data", default="../shared/data")
    c.add_argument("--out", required=True)
    c.add_argument("--only", nargs="*")
    v = sub.add_parser("cv")
    v.add_argument("folder")
    v.add_argument("--l2", type=float, default=1.0)
    v.add_argument("--json")
    f = sub.add_parser("fit")
    f.add_argument("folder")
    f.add_argument("--out", required=True)
    f.add_argument("--name", default="ranker")
    f.add_argument("--exclude", nargs="*")
    f.add_argument("--l2", type=float, default=1.0)
    args = parser.parse_args()
    {"collect": cmd_collect, "cv": cmd_cv, "fit": cmd_fit}[args.cmd](args)


if __name__ == "__main__":
    main()
