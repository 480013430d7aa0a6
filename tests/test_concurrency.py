"""Several processes on one store file, and processes killed in the middle of an import.

Real processes (multiprocessing "spawn", and the ``engram`` CLI in subprocesses), real store
files, the real fast English model (``minilm``). The big store has more than `ANN_MIN`
vectors, so searches go through the HNSW graph: built, saved by ``Memory.close()`` (best
effort, while other processes write) and restored on the next open.

Scenarios that failed before the ``BEGIN IMMEDIATE`` discipline (docs/RELIABILITY.md):
``close()`` saving the graph made concurrent ``engram search`` calls die with a raw
``apsw.BusyError``; ``Memory.delete`` and re-importing changed notes failed while another
process wrote. Every test is bounded by operation counts; join timeouts are only a safety net.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import pytest

from engramdb import Memory
from engramdb.ingest.jsonl import read_jsonl_entries
from engramdb.ingest.notes import note_entries
from engramdb.store.vectors import ANN_MIN

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL") or sys.platform == "win32",
                                reason="needs POSIX processes and SIGKILL")

BASE_N = 20_500  # > ANN_MIN: the HNSW path runs
WORDS = ("apple river stone cloud paper garden window engine silver market forest yellow bridge candle "
         "ocean pencil rocket winter summer coffee violin planet mirror basket thunder harbor lantern "
         "meadow castle dragon").split()
SAFETY_TIMEOUT = 300  # seconds; only so a hung process cannot hang the suite
NS = "default"


def base_texts(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [f"note {i}: " + " ".join(rng.choice(WORDS) for _ in range(6)) for i in range(n)]


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


# -- checks on a store file ----------------------------------------------------------------

ORPHAN_QUERIES = {
    "lexicon rows without entry": "SELECT count(*) FROM lexicon WHERE rowid NOT IN (SELECT rowid FROM entries)",
    "tag rows without entry": "SELECT count(*) FROM tags WHERE rowid NOT IN (SELECT rowid FROM entries)",
    "vectors without entry": "SELECT count(*) FROM vectors WHERE rowid NOT IN (SELECT rowid FROM entries)",
    "entries without lexicon row": "SELECT count(*) FROM entries WHERE rowid NOT IN (SELECT rowid FROM lexicon)",
    "entries without vector": "SELECT count(*) FROM entries WHERE rowid NOT IN (SELECT rowid FROM vectors)",
}


def inspect_store(path: Path) -> dict[str, Any]:
    """integrity_check, orphan counts, and the (namespace, id, path, session_id) of every entry."""
    conn = apsw.Connection(str(path))  # read-write: recovers the WAL a killed process left
    conn.set_busy_timeout(30_000)
    try:
        integrity = [r[0] for r in conn.execute("PRAGMA integrity_check")]
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        if "entries" not in tables:  # killed before the schema was committed: nothing may be half there
            return {"integrity": integrity + [f"tables without a schema: {tables}"] * bool(tables),
                    "orphans": {}, "rows": []}
        orphans = {name: conn.execute(sql).fetchone()[0] for name, sql in ORPHAN_QUERIES.items()}
        trigram = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'entries_trigram'").fetchone()
        if trigram:  # the substring channel's FTS5 index, kept by triggers: must match entries
            try:
                conn.execute("INSERT INTO entries_trigram(entries_trigram, rank) VALUES ('integrity-check', 1)")
            except apsw.Error as exc:
                integrity.append(f"entries_trigram: {exc}")
        rows = conn.execute("SELECT namespace, id, path, session_id FROM entries").fetchall()
    finally:
        conn.close()
    return {"integrity": integrity, "orphans": orphans, "rows": rows}


def assert_sound(info: dict[str, Any], when: str) -> None:
    assert info["integrity"] == ["ok"], f"{when}: integrity_check {info['integrity'][:5]}"
    bad = {name: n for name, n in info["orphans"].items() if n}
    assert not bad, f"{when}: orphan rows {bad}"


def write_seq(path: Path) -> int:
    """How many write batches were committed so far (read on a separate connection; 0 while
    the file has no schema yet). Counts replacements too, which leave the entry count alone."""
    if not path.exists():
        return 0
    try:
        conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            conn.set_busy_timeout(5_000)
            row = conn.execute("SELECT value FROM meta WHERE key = 'write_seq'").fetchone()
            return int(row[0]) if row else 0
        finally:
            conn.close()
    except apsw.Error:
        return 0


# -- the >= 20k store, built once ------------------------------------------------------------

@dataclass
class BigStore:
    path: Path
    ids: list[str]
    build_seconds: float


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> BigStore:
    """20,500 short notes in one `Memory.add` with minilm; one search builds the HNSW graph and
    close() saves it, so copies open with a snapshot to restore. Tests work on copies."""
    path = tmp_path_factory.mktemp("big") / "template.db"
    texts = base_texts(BASE_N)
    start = time.perf_counter()
    with Memory(path, embedder="minilm") as mem:
        ids = mem.add(texts)
        seconds = time.perf_counter() - start
        assert mem.search("river stone garden", k=3, preset="semantic").hits
    print(f"\n[test_concurrency] built {BASE_N:,} entries with minilm in {seconds:.1f} s", file=sys.stderr)
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    snap = conn.execute("SELECT count FROM ann_snapshot WHERE id = 1").fetchone()
    vectors = conn.execute("SELECT count(*) FROM vectors").fetchone()[0]
    conn.close()
    assert vectors == BASE_N >= ANN_MIN
    assert snap is not None and snap[0] == BASE_N, "close() should have saved the HNSW graph"
    return BigStore(path, ids, seconds)


def copy_store(store: BigStore, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "engram.db"
    for suffix in ("", "-wal"):
        if Path(str(store.path) + suffix).exists():
            shutil.copyfile(str(store.path) + suffix, str(target) + suffix)
    return target


# -- worker processes (module level: the spawn context imports them by name) ----------------

def _error(where: str, exc: BaseException) -> dict[str, Any]:
    return {"where": where, "type": f"{type(exc).__module__}.{type(exc).__qualname__}", "message": str(exc)[:500],
            "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]}


def _instrument(mem: Memory, stats: Counter) -> None:
    """Count snapshot saves and restores in this process (wrappers around the real methods)."""
    store = mem.store
    save = store.save_vector_snapshot

    def counted_save() -> bool:
        saved = save()
        stats["snapshot_saved" if saved else "snapshot_not_saved"] += 1
        return saved

    store.save_vector_snapshot = counted_save  # type: ignore[method-assign]
    index = store._vectors
    if index is not None:
        restore = index.restore_ann

        def counted_restore(blob: bytes, count: int) -> None:
            restore(blob, count)
            stats["snapshot_restored"] += 1

        index.restore_ann = counted_restore  # type: ignore[method-assign]


READER_PLAN = ("search:default", "get", "search:lexical", "count", "search:ping", "stats", "search:rrf")


def reader_proc(path: str, name: str, base_sample: list[str], sessions: int, out: str, barrier: Any,
                seed: int) -> None:
    """`sessions` times: open Memory, run `READER_PLAN` (checking every answer), close."""
    rng = random.Random(seed)
    ops: Counter = Counter()
    stats: Counter = Counter()
    errors: list[dict[str, Any]] = []
    anomalies: list[str] = []
    started = time.time()
    try:
        barrier.wait(timeout=SAFETY_TIMEOUT)
        started = time.time()
        for session in range(1, sessions + 1):
            try:
                mem = Memory(path, embedder="minilm")
            except Exception as exc:
                errors.append(_error(f"{name} open (session {session})", exc))
                continue
            _instrument(mem, stats)
            try:
                for op in READER_PLAN:
                    try:
                        if op.startswith("search:"):
                            preset = op.split(":", 1)[1]
                            query = f"note {rng.randrange(BASE_N)} {words(rng, 2)}" if preset == "ping" else words(rng, 3)
                            result = mem.search(query, k=10, preset=preset)
                            if not result.hits:
                                anomalies.append(f"{name}: no hits for {query!r} ({preset})")
                            if preset != "lexical":
                                index = mem.store._vectors
                                stats["hnsw_searches"] += 1
                                stats["hnsw_graph_present"] += int(index is not None and index._ann is not None
                                                                   and len(index) >= ANN_MIN)
                        elif op == "get":
                            wanted = rng.sample(base_sample, 5)
                            got = [e.id for e in mem.get(wanted)]
                            if got != wanted:
                                anomalies.append(f"{name}: get({wanted}) returned {got}")
                        elif op == "count":
                            n = mem.count()
                            if n < BASE_N:
                                anomalies.append(f"{name}: count {n} < {BASE_N}")
                        elif op == "stats":
                            n = mem.stats()["count"]
                            if n < BASE_N:
                                anomalies.append(f"{name}: stats count {n} < {BASE_N}")
                        ops[op] += 1
                    except Exception as exc:
                        errors.append(_error(f"{name} {op} (session {session})", exc))
            finally:
                try:
                    mem.close()
                    ops["close"] += 1
                except Exception as exc:
                    errors.append(_error(f"{name} close (session {session})", exc))
    except BaseException as exc:  # noqa: BLE001 - everything is reported to the parent
        errors.append(_error(f"{name} (outside an operation)", exc))
    finally:
        Path(out).write_text(json.dumps({"name": name, "ops": ops, "stats": stats, "errors": errors,
                                         "anomalies": anomalies, "span": [started, time.time()]}))


WRITER_PLAN = ("notes", "add", "add", "conversation", "add", "delete_id", "add", "notes_rewrite", "add",
               "delete_filter", "add", "conversation", "notes_rewrite", "add") * 2
NOTE_FILES = 3


def _note_text(title: str, rng: random.Random, sections: int = 3) -> str:
    body = "\n\n".join(f"## Section {j}\n\n{words(rng, 8).capitalize()} near the {rng.choice(WORDS)}."
                       for j in range(sections))
    return f"# {title}\n\n{body}\n"


def _writer_ops(plan: list[str], readers_done: Any, max_tail: int) -> Any:
    yield from plan
    for _ in range(max_tail):  # then only adds, until the readers are done
        if readers_done.is_set():
            return
        yield "add"


def writer_proc(path: str, wid: int, notes_dir: str, plan: list[str], ops_per_session: int, out: str,
                barrier: Any, readers_done: Any, max_tail: int, pause: float, seed: int) -> None:
    """Adds (tagged by group), deletes by id and by filter, rewrites and re-imports its own notes
    folder, adds conversations; reports what it wrote and deleted. After `plan`, adds until
    `readers_done` (at most `max_tail` more), so every reader's close() runs while it writes.
    `pause` spreads the plan over the readers' lifetime."""
    rng = random.Random(seed)
    name = f"writer{wid}"
    ops: Counter = Counter()
    errors: list[dict[str, Any]] = []
    anomalies: list[str] = []
    groups: dict[str, list[str]] = {}  # keyword tag -> ids added with it
    deleted: set[str] = set()
    sessions: dict[str, int] = {}  # conversation session id -> entries right after writing it
    folder = Path(notes_dir)
    folder.mkdir(parents=True, exist_ok=True)
    files = [folder / f"w{wid}-note{k}.md" for k in range(NOTE_FILES)]
    for k, file in enumerate(files):
        file.write_text(_note_text(f"Writer {wid} note {k}", rng), encoding="utf-8")
    mem: Memory | None = None
    started = time.time()
    try:
        barrier.wait(timeout=SAFETY_TIMEOUT)
        started = time.time()
        for n, op in enumerate(_writer_ops(plan, readers_done, max_tail)):
            time.sleep(pause)
            if mem is None:
                try:
                    mem = Memory(path, embedder="minilm")
                except Exception as exc:
                    errors.append(_error(f"{name} open (op {n})", exc))
                    continue
            try:
                if op == "add":
                    tag = f"grp-w{wid}-{n}"
                    items = [{"text": f"writer {wid} op {n} item {j}: {words(rng, 5)}", "keywords": [tag]}
                             for j in range(rng.randint(2, 4))]
                    groups[tag] = mem.add(items)
                elif op == "delete_id":
                    alive = [i for ids in groups.values() for i in ids if i not in deleted]
                    chosen = rng.sample(alive, min(2, len(alive)))
                    n_deleted = mem.delete(chosen)
                    if n_deleted != len(chosen):
                        anomalies.append(f"{name}: delete({chosen}) deleted {n_deleted}")
                    deleted.update(chosen)
                elif op == "delete_filter":
                    whole = [t for t, ids in groups.items() if not set(ids) & deleted]
                    tag = rng.choice(whole)
                    n_deleted = mem.delete(filters={"keyword": tag})
                    if n_deleted != len(groups[tag]):
                        anomalies.append(f"{name}: delete(keyword={tag}) deleted {n_deleted}, expected "
                                         f"{len(groups[tag])}")
                    deleted.update(groups[tag])
                elif op in ("notes", "notes_rewrite"):
                    if op == "notes_rewrite":  # a changed file: its old chunks are replaced in one transaction
                        file = rng.choice(files)
                        file.write_text(_note_text(f"Writer {wid} {file.stem} v{n}", rng, rng.randint(2, 4)),
                                        encoding="utf-8")
                    report = mem.import_path(folder)
                    if report["files"] != NOTE_FILES:
                        anomalies.append(f"{name}: import saw {report['files']} files")
                elif op == "conversation":
                    sid = f"w{wid}-session{n}"
                    turns = [("Alice", f"I moved to {rng.choice(WORDS).capitalize()}ville in May 2023."),
                             ("Bob", f"Nice. I bought a {rng.choice(WORDS)} there last week."),
                             ("Alice", f"My sister Carol likes the {rng.choice(WORDS)}.")]
                    report = mem.add_conversation(turns, session_id=sid, session_time=f"2024-02-{n % 27 + 1:02d}T10:00:00")
                    sessions[sid] = mem.count(filters={"session_id": sid})
                    if sessions[sid] < report.turns:
                        anomalies.append(f"{name}: session {sid} has {sessions[sid]} entries < {report.turns} turns")
                ops[op] += 1
            except Exception as exc:
                errors.append(_error(f"{name} {op} (op {n})", exc))
            if (n + 1) % ops_per_session == 0:
                try:
                    mem.close()
                    ops["close"] += 1
                except Exception as exc:
                    errors.append(_error(f"{name} close (op {n})", exc))
                mem = None
        if mem is not None:
            mem.close()
            ops["close"] += 1
    except BaseException as exc:  # noqa: BLE001
        errors.append(_error(f"{name} (outside an operation)", exc))
    finally:
        added = [i for ids in groups.values() for i in ids]
        Path(out).write_text(json.dumps({
            "name": name, "ops": ops, "errors": errors, "anomalies": anomalies, "added": added,
            "deleted": sorted(deleted), "sessions": sessions, "notes_dir": str(folder),
            "span": [started, time.time()],
        }))


def _format_errors(results: list[dict[str, Any]]) -> str:
    lines = []
    for r in results:
        for e in r["errors"][:3]:
            lines.append(f"--- {e['where']}: {e['type']}: {e['message']}\n{e['traceback']}")
    return "\n".join(lines)


def _run_procs(procs: list[Any]) -> None:
    for p in procs:
        p.join(timeout=SAFETY_TIMEOUT)
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()


# -- a. readers and writers on the big store ----------------------------------------------

def test_readers_and_writers_share_a_big_store(big_store: BigStore, tmp_path: Path) -> None:
    """3 readers (searches over several presets, get, count, stats; reopening Memory, so
    close() saves the HNSW graph while others write) and 2 writers (add, delete by id and by
    filter, re-import of rewritten notes, conversations). No exception anywhere, no lost or
    resurrected write, whole note files, a sound file at the end."""
    path = copy_store(big_store, tmp_path / "store")
    ctx = mp.get_context("spawn")
    n_readers, n_writers = 3, 2
    barrier = ctx.Barrier(n_readers + n_writers)
    readers_done = ctx.Event()
    sample = random.Random(1).sample(big_store.ids, 200)
    readers = [ctx.Process(target=reader_proc, name=f"reader{r}",
                           args=(str(path), f"reader{r}", sample, 4, str(tmp_path / f"reader{r}.json"), barrier, 100 + r))
               for r in range(n_readers)]
    writers = [ctx.Process(target=writer_proc, name=f"writer{w}",
                           args=(str(path), w, str(tmp_path / f"notes{w}"), list(WRITER_PLAN), 3,
                                 str(tmp_path / f"writer{w}.json"), barrier, readers_done, 100, 0.2, 200 + w))
               for w in range(n_writers)]
    for p in readers + writers:
        p.start()
    _run_procs(readers)
    readers_done.set()
    _run_procs(writers)
    assert [p.exitcode for p in readers + writers] == [0] * (n_readers + n_writers)

    results = [json.loads((tmp_path / f"{p.name}.json").read_text()) for p in readers + writers]
    reader_results, writer_results = results[:n_readers], results[n_readers:]
    t0 = min(r["span"][0] for r in results)
    summary = {r["name"]: {**r["ops"], **r.get("stats", {}), "from_s": round(r["span"][0] - t0, 1),
                           "to_s": round(r["span"][1] - t0, 1)} for r in results}
    print(f"\n[test_concurrency] operations: {json.dumps(summary)}", file=sys.stderr)
    assert not any(r["errors"] for r in results), "exceptions in workers:\n" + _format_errors(results)
    assert not [a for r in results for a in r["anomalies"]], [a for r in results for a in r["anomalies"]]
    for r in writer_results:
        done = sum(n for op, n in r["ops"].items() if op != "close")
        assert len(WRITER_PLAN) <= done <= len(WRITER_PLAN) + 100 and r["ops"]["close"] == -(-done // 3), r["ops"]
    stats = Counter()
    for r in reader_results:
        stats.update(r["stats"])
    assert stats["hnsw_searches"] > 0 and stats["hnsw_graph_present"] == stats["hnsw_searches"]

    info = inspect_store(path)
    assert_sound(info, "after the concurrent run")
    present = Counter((ns, i) for ns, i, _, _ in info["rows"] if ns == NS)
    assert all(n == 1 for n in present.values())
    ids = {i for _, i in present}
    expected_total = BASE_N
    missing_base = set(big_store.ids) - ids
    assert not missing_base, f"{len(missing_base)} base entries lost"
    for r in writer_results:
        alive = set(r["added"]) - set(r["deleted"])
        assert not alive - ids, f"{r['name']}: added, not deleted, but missing: {sorted(alive - ids)[:10]}"
        assert not set(r["deleted"]) & ids, f"{r['name']}: deleted but present: {sorted(set(r['deleted']) & ids)}"
        expected_total += len(alive)
        folder = Path(r["notes_dir"])
        for file in sorted(folder.glob("*.md")):
            rel = file.relative_to(folder).as_posix()
            want = {e.id for e in note_entries(file, rel, NS, file.resolve().as_posix())}
            have = {i for ns, i, p, _ in info["rows"] if ns == NS and p == rel}
            assert have == want, f"{rel}: stored chunks {sorted(have)} != the file's {sorted(want)}"
            expected_total += len(want)
        for sid, n in r["sessions"].items():
            have = sum(1 for ns, _, _, s in info["rows"] if ns == NS and s == sid)
            assert have == n, f"session {sid}: {have} entries at the end, {n} right after writing"
            expected_total += n
    assert len(ids) == expected_total


# -- b. concurrent CLI searches right after an add ----------------------------------------

CLI = [sys.executable, "-m", "engramdb.cli"]

WRITER_SCRIPT = """
import sys
from engramdb import Memory
path, rounds = sys.argv[1], int(sys.argv[2])
for n in range(rounds):
    with Memory(path, embedder="minilm") as mem:
        mem.add([f"background writer round {n} line {j}: river stone" for j in range(3)])
print("ok")
"""


def _cli_searches(path: Path, queries: list[tuple[str, str]]) -> list[subprocess.CompletedProcess[str]]:
    procs = [subprocess.Popen([*CLI, "--db", str(path), "search", query, "--preset", preset, "--json", "-k", "5"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for query, preset in queries]
    done = []
    for proc, args in zip(procs, queries):
        try:
            stdout, stderr = proc.communicate(timeout=SAFETY_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
        done.append(subprocess.CompletedProcess(args, proc.returncode, stdout, stderr))
    return done


def _check_cli_results(results: list[subprocess.CompletedProcess[str]], when: str) -> None:
    failures = []
    for r in results:
        try:
            hits = json.loads(r.stdout)["hits"] if r.returncode == 0 else None
        except (ValueError, KeyError) as exc:
            hits = None
            r.stderr += f"\n(stdout is not the JSON result: {exc}: {r.stdout[:200]!r})"
        if r.returncode != 0 or not hits or r.stderr.strip():
            failures.append(f"{r.args}: exit {r.returncode}, {len(hits or [])} hits, stderr:\n{r.stderr[-3000:]}")
    assert not failures, f"{when}: {len(failures)} of {len(results)} CLI searches failed:\n" + "\n".join(failures)


def test_concurrent_cli_searches_right_after_an_add(big_store: BigStore, tmp_path: Path) -> None:
    """The exact failing scenario: `engram add`, then 4 `engram search --json` at once (each
    restores the saved graph, extends it with the new row and tries to save it on exit),
    three times; then 6 searches at once while another process keeps adding. Every search
    exits 0 with hits and nothing on stderr; the file stays sound and holds every add."""
    path = copy_store(big_store, tmp_path / "store")
    rng = random.Random(5)
    rounds = 3
    for n in range(rounds):
        add = subprocess.run([*CLI, "--db", str(path), "add", f"fresh line {n} about the river stone garden"],
                             capture_output=True, text=True, timeout=SAFETY_TIMEOUT)
        assert add.returncode == 0, add.stderr
        searches = _cli_searches(path, [(words(rng, 3), "default") for _ in range(4)])
        _check_cli_results(searches, f"round {n + 1}: 4 searches right after an add")

    writer = subprocess.Popen([sys.executable, "-c", WRITER_SCRIPT, str(path), "12"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    before = write_seq(path)
    for _ in range(2000):  # until the writer's first batch is in (or it ended)
        if write_seq(path) > before or writer.poll() is not None:
            break
        time.sleep(0.01)
    presets = ["default", "default", "default", "semantic", "rrf", "ping"]
    searches = _cli_searches(path, [(words(rng, 3) if p != "ping" else f"note {rng.randrange(BASE_N)}", p)
                                    for p in presets])
    stdout, stderr = writer.communicate(timeout=SAFETY_TIMEOUT)
    assert writer.returncode == 0 and stdout.strip() == "ok", stderr
    _check_cli_results(searches, "6 searches while another process adds")
    info = inspect_store(path)
    assert_sound(info, "after the CLI searches")
    assert len(info["rows"]) == BASE_N + rounds + 12 * 3


# -- c. kill -9 during imports ------------------------------------------------------------

JSONL_N = 2_600  # 10 batches of 256 and one of 40
BATCH = 256


def _kill_during(cmd: list[str], db: Path, rng: random.Random, *, early: bool) -> bool:
    """Run `cmd`; kill -9 it after a random delay (`early`: from its start, so possibly while
    it loads or creates the schema; else after its first commit). True if it was killed."""
    before = write_seq(db)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if early:
        time.sleep(rng.uniform(0.2, 1.2))
    else:
        for _ in range(6000):  # until this run has committed something (or ended)
            if proc.poll() is not None or write_seq(db) > before:
                break
            time.sleep(0.005)
        time.sleep(rng.uniform(0.0, 0.3))
    killed = proc.poll() is None
    if killed:
        os.kill(proc.pid, signal.SIGKILL)
    _, stderr = proc.communicate(timeout=SAFETY_TIMEOUT)
    if not killed:
        assert proc.returncode == 0, stderr.decode(errors="replace")
    return killed


def _jsonl_file(path: Path, n: int) -> Path:
    rng = random.Random(11)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"text": f"imported {i}: {words(rng, 7)}", "keywords": [rng.choice(WORDS)],
                                 "metadata": {"i": i}}) + "\n")
    return path


def _notes_folder(folder: Path, files: int, version: int, only: set[int] | None = None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(files):
        if only is not None and k not in only:
            continue
        rng = random.Random(k * 1000 + version)
        (folder / f"note-{k:03d}.md").write_text(_note_text(f"Note {k} v{version}", rng, 3 + k % 3), encoding="utf-8")


def _expected_notes(folder: Path) -> dict[str, set[str]]:
    return {f.relative_to(folder).as_posix(): {e.id for e in note_entries(f, f.relative_to(folder).as_posix(), NS,
                                                                          f.resolve().as_posix())}
            for f in sorted(folder.glob("*.md"))}


def test_kill_9_during_imports_leaves_whole_batches(tmp_path: Path) -> None:
    """`engram import` of a JSONL (batches of 256, one transaction each) and of a notes folder
    (one file per transaction, a changed file replaced in the same transaction), killed with
    SIGKILL at random moments: the file stays sound, holds whole batches (the first ones, in
    order) or whole files (old or new version), no orphans; a re-run completes to the same
    entries as a clean import, and another re-run writes nothing."""
    rng = random.Random(3)
    jsonl = _jsonl_file(tmp_path / "entries.jsonl", JSONL_N)
    order = [e.id for e in read_jsonl_entries(jsonl, NS)]
    assert len(set(order)) == JSONL_N
    kills = attempts = 0
    db = tmp_path / "jsonl-0.db"
    while kills < 5 and attempts < 15:
        attempts += 1
        cmd = [*CLI, "--db", str(db), "--embedder", "minilm", "import", str(jsonl), "--quiet"]
        killed = _kill_during(cmd, db, rng, early=attempts == 1)
        kills += killed
        if db.exists():
            info = inspect_store(db)
            assert_sound(info, f"JSONL import, attempt {attempts} (killed: {killed})")
            n = len(info["rows"])
            print(f"[test_concurrency] JSONL attempt {attempts}: killed={killed}, {n} entries", file=sys.stderr)
            assert n % BATCH == 0 or n == JSONL_N, f"{n} entries is not whole batches of {BATCH}"
            assert {i for _, i, _, _ in info["rows"]} == set(order[:n]), "not the first batches in order"
            if n == JSONL_N and kills < 5:  # finished before enough kills: go on with a new store
                db = tmp_path / f"jsonl-{attempts}.db"
    assert kills >= 5
    for _ in range(2):  # the re-run completes; the next one is a no-op
        run = subprocess.run([*CLI, "--db", str(db), "--embedder", "minilm", "import", str(jsonl), "--json", "-q"],
                             capture_output=True, text=True, timeout=SAFETY_TIMEOUT)
        assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["written"] == 0
    info = inspect_store(db)
    assert_sound(info, "JSONL re-run")
    assert sorted(i for _, i, _, _ in info["rows"]) == sorted(order)  # what a clean import writes

    # Notes: first import killed, then a re-import of half the files rewritten, killed.
    notes, files = tmp_path / "notes", 120
    _notes_folder(notes, files, version=1)
    v1 = _expected_notes(notes)
    ndb = tmp_path / "notes.db"
    cmd = [*CLI, "--db", str(ndb), "--embedder", "minilm", "import", str(notes), "--quiet"]
    note_kills = 0
    for phase in ("first import", "re-import of changed files"):
        if phase != "first import":
            _notes_folder(notes, files, version=2, only=set(range(0, files, 2)))
        v2 = _expected_notes(notes)
        for attempt in range(3):
            killed = _kill_during(cmd, ndb, rng, early=phase == "first import" and attempt == 0)
            note_kills += killed
            if not ndb.exists():
                continue
            info = inspect_store(ndb)
            assert_sound(info, f"notes {phase}, attempt {attempt} (killed: {killed})")
            print(f"[test_concurrency] notes {phase} attempt {attempt}: killed={killed}, {len(info['rows'])} "
                  f"entries, write_seq {write_seq(ndb)}", file=sys.stderr)
            by_path: dict[str, set[str]] = {}
            for _, i, p, _ in info["rows"]:
                by_path.setdefault(p, set()).add(i)
            for p, have in by_path.items():
                assert have in (v1.get(p), v2.get(p)), f"{p}: a partial file ({len(have)} chunks)"
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=SAFETY_TIMEOUT)
        assert run.returncode == 0, run.stderr
        info = inspect_store(ndb)
        assert_sound(info, f"notes {phase}, completed")
        by_path = {}
        for _, i, p, _ in info["rows"]:
            by_path.setdefault(p, set()).add(i)
        assert by_path == v2
    assert note_kills >= 4
    with Memory(tmp_path / "clean.db", embedder="minilm") as clean:  # a clean import of the final folder
        clean.import_path(notes)
        assert clean.count() == len(info["rows"]) == sum(map(len, v2.values()))


def test_the_soak_benchmark_passes_on_a_small_store(tmp_path: Path) -> None:
    """benchmarks/soak.py, as RELIABILITY.md tells a user to run it, scaled down: one reader and
    one writer process for a few seconds, then its full check. Its lost-write check had computed
    note chunk ids from the relative path while the importer used the absolute one, so every
    clean run printed FAIL."""
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "soak.py"
    report = tmp_path / "soak.json"
    run = subprocess.run([sys.executable, str(script), "--entries", "120", "--readers", "1", "--writers", "1",
                          "--seconds", "4", "--db", str(tmp_path / "soak.db"), "--json", str(report)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    result = json.loads(report.read_text())
    assert result["ok"] is True and result["lost_writes"] == {} and result["errors_total"] == 0, result
    assert result["operations"]["notes"]["ok"] >= 1 and result["final"]["integrity"] == ["ok"], result
