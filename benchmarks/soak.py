"""Soak test: many reader and writer processes on one store file for a while, then a full check.

    python benchmarks/soak.py --entries 50000 --readers 8 --writers 2 --seconds 60
    python benchmarks/soak.py --entries 20500 --readers 3 --writers 2 --seconds 30 --db /tmp/soak.db

The store at ``--db`` is built first if it is missing or holds fewer than ``--entries`` base
entries (short generated notes, the fast English model ``minilm``; one search builds the HNSW
graph, which close() saves). Then, as separate processes (multiprocessing "spawn"):

* readers open `Memory`, run a few operations, close it (so close() saves the HNSW graph while
  others write), again and again: searches over several presets, ``get`` of base entries,
  ``count``, ``stats``. Every answer is checked (hits found, base entries all there);
* writers do the same with ``add`` (tagged entries), ``delete`` by id and by filter, rewriting
  and re-importing their own notes folder, and ``add_conversation``.

Every exception is recorded with its traceback. At the end: ``PRAGMA integrity_check``, orphan
rows (lexicon, tags, vectors without an entry; entries without a lexicon row or vector), the
trigram index's own check, and lost writes (each id a writer added and did not delete must be
there, each deleted one gone, each notes file stored as exactly its current chunks, each
conversation with the entries it had right after it was written). Only the local SQLite file
is touched (no network). Prints the command line, a table and the JSON report; exit status 1
on any error or failed check.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import shlex
import shutil
import statistics
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import apsw

from engramdb import Entry, Memory
from engramdb.ingest.notes import note_entries
from engramdb.store.vectors import ANN_MIN

NS = "default"
WORDS = ("apple river stone cloud paper garden window engine silver market forest yellow bridge candle "
         "ocean pencil rocket winter summer coffee violin planet mirror basket thunder harbor lantern "
         "meadow castle dragon").split()
READER_OPS = {"search:default": 30, "search:ping": 10, "search:semantic": 10, "search:lexical": 10,
              "search:rrf": 10, "get": 15, "count": 10, "stats": 5}
WRITER_OPS = {"add": 45, "delete_id": 8, "delete_filter": 4, "notes": 23, "conversation": 20}
NOTE_FILES = 4
ORPHAN_QUERIES = {
    "lexicon rows without entry": "SELECT count(*) FROM lexicon WHERE rowid NOT IN (SELECT rowid FROM entries)",
    "tag rows without entry": "SELECT count(*) FROM tags WHERE rowid NOT IN (SELECT rowid FROM entries)",
    "vectors without entry": "SELECT count(*) FROM vectors WHERE rowid NOT IN (SELECT rowid FROM entries)",
    "entries without lexicon row": "SELECT count(*) FROM entries WHERE rowid NOT IN (SELECT rowid FROM lexicon)",
    "entries without vector": "SELECT count(*) FROM entries WHERE rowid NOT IN (SELECT rowid FROM vectors)",
}


def base_texts(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [f"note {i}: " + " ".join(rng.choice(WORDS) for _ in range(6)) for i in range(n)]


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def pick(rng: random.Random, weights: dict[str, int]) -> str:
    return rng.choices(list(weights), weights=list(weights.values()))[0]


def error_record(where: str, exc: BaseException) -> dict[str, Any]:
    return {"where": where, "type": f"{type(exc).__module__}.{type(exc).__qualname__}", "message": str(exc)[:500],
            "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]}


# -- the store ------------------------------------------------------------------------------

def base_ids(n: int) -> list[str]:
    return [Entry(text=t, kind="fact").normalized(NS).id for t in base_texts(n)]  # type: ignore[misc]


def ensure_store(path: Path, entries: int) -> dict[str, Any]:
    """Build (or complete) the store: `entries` generated notes in one `Memory.add`."""
    info: dict[str, Any] = {"built": False}
    with Memory(path, embedder="minilm") as mem:
        have = mem.count()
        if have < entries:
            print(f"building {path}: {entries:,} entries with minilm ...", file=sys.stderr, flush=True)
            start = time.perf_counter()
            mem.add(base_texts(entries))
            info.update(built=True, build_seconds=round(time.perf_counter() - start, 1))
            print(f"  added in {info['build_seconds']} s", file=sys.stderr, flush=True)
        start = time.perf_counter()
        mem.search("river stone garden", k=3, preset="semantic")  # loads (or builds) the HNSW graph
        info["first_search_seconds"] = round(time.perf_counter() - start, 1)
        info["entries_at_start"] = mem.count(all_namespaces=True)
        info["vectors_at_start"] = mem.stats()["vectors"]
    return info


def check_store(path: Path) -> dict[str, Any]:
    conn = apsw.Connection(str(path))
    conn.set_busy_timeout(30_000)
    try:
        integrity = [r[0] for r in conn.execute("PRAGMA integrity_check")]
        orphans = {name: conn.execute(sql).fetchone()[0] for name, sql in ORPHAN_QUERIES.items()}
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'entries_trigram'").fetchone():
            try:
                conn.execute("INSERT INTO entries_trigram(entries_trigram, rank) VALUES ('integrity-check', 1)")
            except apsw.Error as exc:
                integrity.append(f"entries_trigram: {exc}")
        rows = conn.execute("SELECT id, path, session_id FROM entries WHERE namespace = ?", (NS,)).fetchall()
    finally:
        conn.close()
    return {"integrity": integrity, "orphans": orphans, "rows": rows}


# -- workers ----------------------------------------------------------------------------------

def _timed(latencies: dict[str, list[float]], op: str, start: float) -> None:
    latencies[op].append(round((time.perf_counter() - start) * 1000, 2))


def reader(path: str, name: str, sample: list[str], base_n: int, seconds: float, out: str, barrier: Any,
           seed: int) -> None:
    rng = random.Random(seed)
    latencies: dict[str, list[float]] = defaultdict(list)
    errors: list[dict[str, Any]] = []
    anomalies: list[str] = []
    stats: Counter = Counter()
    try:
        barrier.wait(timeout=600)
        deadline = time.time() + seconds
        session = 0
        while time.time() < deadline:
            session += 1
            start = time.perf_counter()
            try:
                mem = Memory(path, embedder="minilm")
            except Exception as exc:
                errors.append(error_record(f"{name} open (session {session})", exc))
                continue
            _timed(latencies, "open", start)
            try:
                for _ in range(rng.randint(4, 10)):
                    if time.time() >= deadline:
                        break
                    op = pick(rng, READER_OPS)
                    start = time.perf_counter()
                    try:
                        if op.startswith("search:"):
                            preset = op.split(":", 1)[1]
                            query = f"note {rng.randrange(base_n)} {words(rng, 2)}" if preset == "ping" else words(rng, 3)
                            if not mem.search(query, k=10, preset=preset).hits:
                                anomalies.append(f"{name}: no hits for {query!r} ({preset})")
                        elif op == "get":
                            wanted = rng.sample(sample, 5)
                            got = [e.id for e in mem.get(wanted)]
                            if got != wanted:
                                anomalies.append(f"{name}: get({wanted}) returned {got}")
                        elif op == "count":
                            if mem.count() < base_n:
                                anomalies.append(f"{name}: count below {base_n}")
                        elif op == "stats":
                            if mem.stats()["count"] < base_n:
                                anomalies.append(f"{name}: stats count below {base_n}")
                        _timed(latencies, op, start)
                    except Exception as exc:
                        errors.append(error_record(f"{name} {op} (session {session})", exc))
            finally:
                start = time.perf_counter()
                save = mem.store.save_vector_snapshot

                def counted() -> bool:
                    saved = save()
                    stats["snapshot_saved" if saved else "snapshot_not_saved"] += 1
                    return saved

                mem.store.save_vector_snapshot = counted  # type: ignore[method-assign]
                try:
                    mem.close()
                    _timed(latencies, "close", start)
                except Exception as exc:
                    errors.append(error_record(f"{name} close (session {session})", exc))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        errors.append(error_record(f"{name} (outside an operation)", exc))
    finally:
        Path(out).write_text(json.dumps({"name": name, "role": "reader", "latencies": latencies, "errors": errors,
                                         "anomalies": anomalies, "stats": stats}))


def _note_text(title: str, rng: random.Random, sections: int) -> str:
    body = "\n\n".join(f"## Section {j}\n\n{words(rng, 8).capitalize()} near the {rng.choice(WORDS)}."
                       for j in range(sections))
    return f"# {title}\n\n{body}\n"


def writer(path: str, wid: int, run: str, notes_dir: str, seconds: float, pause: float, out: str, barrier: Any,
           seed: int) -> None:
    rng = random.Random(seed)
    name = f"writer{wid}"
    latencies: dict[str, list[float]] = defaultdict(list)
    errors: list[dict[str, Any]] = []
    anomalies: list[str] = []
    groups: dict[str, list[str]] = {}
    deleted: set[str] = set()
    sessions: dict[str, int] = {}
    folder = Path(notes_dir)
    folder.mkdir(parents=True, exist_ok=True)
    files = [folder / f"w{wid}-note{k}.md" for k in range(NOTE_FILES)]
    for k, file in enumerate(files):
        file.write_text(_note_text(f"Writer {wid} note {k}", rng, 3), encoding="utf-8")
    n = 0
    mem: Memory | None = None
    try:
        barrier.wait(timeout=600)
        deadline = time.time() + seconds
        left_in_session = 0
        while time.time() < deadline:
            n += 1
            if pause:
                time.sleep(pause)
            if mem is None:
                start = time.perf_counter()
                try:
                    mem = Memory(path, embedder="minilm")
                except Exception as exc:
                    errors.append(error_record(f"{name} open (op {n})", exc))
                    continue
                _timed(latencies, "open", start)
                left_in_session = rng.randint(3, 6)
            op = "notes" if n == 1 else pick(rng, WRITER_OPS)
            alive = [i for ids in groups.values() for i in ids if i not in deleted]
            whole = [t for t, ids in groups.items() if not set(ids) & deleted]
            if op == "delete_id" and not alive or op == "delete_filter" and not whole:
                op = "add"
            start = time.perf_counter()
            try:
                if op == "add":
                    tag = f"soak-{run}-w{wid}-{n}"
                    items = [{"text": f"soak {run} writer {wid} op {n} item {j}: {words(rng, 5)}", "keywords": [tag]}
                             for j in range(rng.randint(1, 5))]
                    groups[tag] = mem.add(items)
                elif op == "delete_id":
                    chosen = rng.sample(alive, min(rng.randint(1, 3), len(alive)))
                    got = mem.delete(chosen)
                    if got != len(chosen):
                        anomalies.append(f"{name}: delete({chosen}) deleted {got}")
                    deleted.update(chosen)
                elif op == "delete_filter":
                    tag = rng.choice(whole)
                    got = mem.delete(filters={"keyword": tag})
                    if got != len(groups[tag]):
                        anomalies.append(f"{name}: delete(keyword={tag}) deleted {got}, expected {len(groups[tag])}")
                    deleted.update(groups[tag])
                elif op == "notes":
                    if n > 1 and rng.random() < 0.7:  # else a re-import of an unchanged folder
                        file = rng.choice(files)
                        file.write_text(_note_text(f"Writer {wid} {file.stem} op {n}", rng, rng.randint(2, 5)),
                                        encoding="utf-8")
                    report = mem.import_path(folder)
                    if report["files"] != NOTE_FILES:
                        anomalies.append(f"{name}: import saw {report['files']} files")
                elif op == "conversation":
                    sid = f"soak-{run}-w{wid}-s{n}"
                    turns = [("Alice", f"I moved to {rng.choice(WORDS).capitalize()}ville in May 2023."),
                             ("Bob", f"Nice. I bought a {rng.choice(WORDS)} there last week."),
                             ("Alice", f"My sister Carol likes the {rng.choice(WORDS)}.")]
                    report = mem.add_conversation(turns, session_id=sid, session_time="2024-02-03T10:00:00")
                    sessions[sid] = mem.count(filters={"session_id": sid})
                    if sessions[sid] < report.turns:
                        anomalies.append(f"{name}: session {sid}: {sessions[sid]} entries < {report.turns} turns")
                _timed(latencies, op, start)
            except Exception as exc:
                errors.append(error_record(f"{name} {op} (op {n})", exc))
            left_in_session -= 1
            if left_in_session <= 0:
                start = time.perf_counter()
                try:
                    mem.close()
                    _timed(latencies, "close", start)
                except Exception as exc:
                    errors.append(error_record(f"{name} close (op {n})", exc))
                mem = None
        if mem is not None:
            start = time.perf_counter()
            mem.close()
            _timed(latencies, "close", start)
    except BaseException as exc:  # noqa: BLE001
        errors.append(error_record(f"{name} (outside an operation)", exc))
    finally:
        Path(out).write_text(json.dumps({
            "name": name, "role": "writer", "latencies": latencies, "errors": errors, "anomalies": anomalies,
            "added": [i for ids in groups.values() for i in ids], "deleted": sorted(deleted),
            "sessions": sessions, "notes_dir": str(folder)}))


# -- the run --------------------------------------------------------------------------------

def lost_writes(results: list[dict[str, Any]], final: dict[str, Any], base: list[str]) -> dict[str, list[str]]:
    ids = {i for i, _, _ in final["rows"]}
    problems: dict[str, list[str]] = defaultdict(list)
    missing_base = [i for i in base if i not in ids]
    if missing_base:
        problems["base entries missing"] = missing_base[:20]
    by_path: dict[str, set[str]] = defaultdict(set)
    by_session: Counter = Counter()
    for i, p, s in final["rows"]:
        if p:
            by_path[p].add(i)
        if s:
            by_session[s] += 1
    for r in results:
        if r["role"] != "writer":
            continue
        deleted = set(r["deleted"])
        problems["added, not deleted, missing"] += [i for i in r["added"] if i not in deleted and i not in ids]
        problems["deleted but present"] += [i for i in deleted if i in ids]
        folder = Path(r["notes_dir"])
        for file in sorted(folder.glob("*.md")):
            rel = file.relative_to(folder).as_posix()
            want = {e.id for e in note_entries(file, rel, NS, file.resolve().as_posix())}  # the importer's doc_id
            if by_path.get(rel, set()) != want:
                problems["notes files not stored as their current chunks"].append(rel)
        for sid, n in r["sessions"].items():
            if by_session[sid] != n:
                problems["conversations changed after writing"].append(f"{sid}: {n} -> {by_session[sid]}")
    return {k: v for k, v in problems.items() if v}


def summarize(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    merged: dict[str, list[float]] = defaultdict(list)
    errors: Counter = Counter()
    for r in results:
        for op, values in r["latencies"].items():
            merged[op] += values
        for e in r["errors"]:
            errors[e["where"].split()[1]] += 1
    table = {}
    for op in sorted(set(merged) | set(errors)):
        values = sorted(merged.get(op, []))
        table[op] = {"ok": len(values), "errors": errors.get(op, 0)}
        if values:
            table[op].update(p50_ms=round(statistics.median(values), 1),
                             p95_ms=round(values[min(len(values) - 1, int(0.95 * len(values)))], 1),
                             max_ms=round(values[-1], 1))
    return table


def print_table(report: dict[str, Any]) -> None:
    print(f"$ {report['command']}")
    run = report["run"]
    print(f"engram soak: {run['processes']} processes ({run['readers']} readers, {run['writers']} writers) for "
          f"{run['seconds']} s (wall {run['wall_seconds']} s) on {run['db']}")
    print(f"store: {run['entries_at_start']:,} entries / {run['vectors_at_start']:,} vectors at start "
          f"(HNSW above {ANN_MIN:,}), {report['final']['entries']:,} at the end; embedder minilm; "
          f"{run['cpus']} CPUs")
    print()
    print(f"{'operation':<18}{'ok':>8}{'errors':>8}{'p50 ms':>10}{'p95 ms':>10}{'max ms':>10}")
    total_ok = total_err = 0
    for op, row in report["operations"].items():
        total_ok += row["ok"]
        total_err += row["errors"]
        print(f"{op:<18}{row['ok']:>8}{row['errors']:>8}{row.get('p50_ms', '-'):>10}{row.get('p95_ms', '-'):>10}"
              f"{row.get('max_ms', '-'):>10}")
    print(f"{'total':<18}{total_ok:>8}{total_err:>8}")
    snaps = report["snapshots"]
    print(f"\nHNSW snapshot on close (readers): {snaps.get('snapshot_saved', 0)} saved, "
          f"{snaps.get('snapshot_not_saved', 0)} skipped (stale, same as saved, or lock busy)")
    final = report["final"]
    orphans = {k: v for k, v in final["orphans"].items() if v}
    print(f"errors: {report['errors_total']}; anomalies: {len(report['anomalies'])}; "
          f"integrity_check: {', '.join(final['integrity'])}; orphans: {orphans or 'none'}; "
          f"lost writes: {report['lost_writes'] or 'none'}")
    for e in report["first_errors"]:
        print(f"  - {e['where']}: {e['type']}: {e['message']}")
    for a in report["anomalies"][:5]:
        print(f"  - {a}")
    print(f"result: {'PASS' if report['ok'] else 'FAIL'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=50_000, help="base entries in the store (built if missing)")
    parser.add_argument("--readers", type=int, default=8)
    parser.add_argument("--writers", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the processes run")
    parser.add_argument("--db", type=Path, default=None,
                        help="store file (default: engram-soak-<entries>.db in the temp folder)")
    parser.add_argument("--writer-pause", type=float, default=0.1, help="seconds each writer waits between operations")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", dest="json_out", type=Path, default=None, help="also write the JSON report here")
    args = parser.parse_args(argv)
    command = shlex.join(["python", "benchmarks/soak.py", *(sys.argv[1:] if argv is None else argv)])
    db = args.db or Path(tempfile.gettempdir()) / f"engram-soak-{args.entries}.db"
    setup = ensure_store(db, args.entries)
    base = base_ids(args.entries)
    rng = random.Random(args.seed)
    sample = rng.sample(base, min(500, len(base)))
    work = Path(tempfile.mkdtemp(prefix="engram-soak-"))
    run_id = time.strftime("%Y%m%d%H%M%S")
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(args.readers + args.writers + 1)
    procs = [ctx.Process(target=reader, name=f"reader{r}",
                         args=(str(db), f"reader{r}", sample, args.entries, args.seconds, str(work / f"reader{r}.json"),
                               barrier, args.seed * 1000 + r))
             for r in range(args.readers)]
    procs += [ctx.Process(target=writer, name=f"writer{w}",
                          args=(str(db), w, run_id, str(work / f"notes{w}"), args.seconds, args.writer_pause,
                                str(work / f"writer{w}.json"), barrier, args.seed * 1000 + 500 + w))
              for w in range(args.writers)]
    for p in procs:
        p.start()
    barrier.wait(timeout=600)
    started = time.perf_counter()
    for p in procs:
        p.join(timeout=args.seconds + 900)
    wall = time.perf_counter() - started
    results, crashed = [], []
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()
        file = work / f"{p.name}.json"
        if p.exitcode != 0 or not file.exists():
            crashed.append(f"{p.name}: exit code {p.exitcode}")
        if file.exists():
            results.append(json.loads(file.read_text()))
    final = check_store(db)
    lost = lost_writes(results, final, base)
    errors = [e for r in results for e in r["errors"]]
    anomalies = [a for r in results for a in r["anomalies"]] + crashed
    snapshots: Counter = Counter()
    for r in results:
        snapshots.update(r.get("stats", {}))
    report = {
        "command": command,
        "run": {"db": str(db), "entries": args.entries, "readers": args.readers, "writers": args.writers,
                "processes": args.readers + args.writers, "seconds": args.seconds, "wall_seconds": round(wall, 1),
                "writer_pause": args.writer_pause, "cpus": os.cpu_count(), **setup},
        "operations": summarize(results),
        "snapshots": dict(snapshots),
        "errors_total": len(errors),
        "errors_by_type": dict(Counter(e["type"] for e in errors)),
        "first_errors": [{k: e[k] for k in ("where", "type", "message")} for e in errors[:5]],
        "first_tracebacks": [e["traceback"] for e in errors[:3]],
        "anomalies": anomalies[:50],
        "final": {"integrity": final["integrity"], "orphans": final["orphans"], "entries": len(final["rows"])},
        "lost_writes": {k: v[:20] for k, v in lost.items()},
    }
    report["ok"] = (not errors and not anomalies and not lost and final["integrity"] == ["ok"]
                    and not any(final["orphans"].values()))
    print_table(report)
    print("\nJSON:")
    print(json.dumps(report, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=2))
    shutil.rmtree(work, ignore_errors=True)
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
