"""Presets: named pipeline configurations stored as TOML data, not code paths.

Shipped presets live in ``engramdb/pipeline/presets/*.toml``; a user passes a path to a
TOML file of the same shape to use their own.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import InputError
from .gates import GateConfig

CHANNELS = ("semantic", "lexical", "symbolic", "temporal", "dated", "substring")
FUSION_METHODS = ("rrf", "weighted", "union", "max", "route")
NORMALIZATIONS = ("zscore", "minmax", "none")


@dataclass(frozen=True, slots=True)
class ChannelConfig:
    k: int = 50
    weight: float = 1.0


PLANNERS = ("none", "rules", "llm")


@dataclass(frozen=True, slots=True)
class Preset:
    name: str
    description: str = ""
    channels: dict[str, ChannelConfig] = field(default_factory=dict)
    fusion: str = "rrf"
    rrf_k: int = 60
    normalization: str = "zscore"
    planner: str = "none"
    reflect_rounds: int = 0
    gate: GateConfig = field(default_factory=GateConfig)
    mmr_lambda: float | None = None
    mmr_pool: int = 30
    per_doc: int | None = None
    pool_factor: int = 12


def _shipped() -> dict[str, str]:
    folder = resources.files("engramdb.pipeline").joinpath("presets")
    return {p.name[:-5]: p.read_text(encoding="utf-8") for p in folder.iterdir() if p.name.endswith(".toml")}


PRESET_NAMES: tuple[str, ...] = tuple(sorted(_shipped(), key=lambda n: (n != "default", n)))


def parse_preset(name: str, text: str) -> Preset:
    """Validate preset TOML; every mistake is an InputError naming the preset and the field."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"preset {name!r}: invalid TOML: {exc}") from exc
    unknown = set(data) - {"description", "channels", "fusion", "plan", "gate", "select"}
    if unknown:
        raise InputError(f"preset {name!r}: unknown section(s) {', '.join(sorted(unknown))}")
    channels: dict[str, ChannelConfig] = {}
    for channel, conf in (data.get("channels") or {}).items():
        if channel not in CHANNELS:
            raise InputError(f"preset {name!r}: unknown channel {channel!r} (known: {', '.join(CHANNELS)})")
        if not isinstance(conf, dict) or set(conf) - {"k", "weight"}:
            raise InputError(f"preset {name!r}: channel {channel!r} takes only 'k' and 'weight'")
        k, weight = conf.get("k", 50), conf.get("weight", 1.0)
        if not isinstance(k, int) or k < 1:
            raise InputError(f"preset {name!r}: channels.{channel}.k must be a positive integer")
        if not isinstance(weight, (int, float)) or weight < 0:
            raise InputError(f"preset {name!r}: channels.{channel}.weight must be a number >= 0")
        channels[channel] = ChannelConfig(k=k, weight=float(weight))
    if not channels:
        raise InputError(f"preset {name!r}: needs at least one channel under [channels.<name>]")
    fusion = data.get("fusion") or {}
    method = fusion.get("method", "rrf")
    if method not in FUSION_METHODS:
        raise InputError(f"preset {name!r}: fusion.method must be one of {', '.join(FUSION_METHODS)}")
    unknown_fusion = set(fusion) - {"method", "k", "normalization"}
    if unknown_fusion:
        raise InputError(f"preset {name!r}: unknown fusion option(s) {', '.join(sorted(unknown_fusion))}")
    rrf_k = fusion.get("k", 60)
    if not isinstance(rrf_k, int) or rrf_k < 0:
        raise InputError(f"preset {name!r}: fusion.k must be an integer >= 0")
    normalization = fusion.get("normalization", "zscore")
    if normalization not in NORMALIZATIONS:
        raise InputError(f"preset {name!r}: fusion.normalization must be one of {', '.join(NORMALIZATIONS)}")
    plan = data.get("plan") or {}
    if set(plan) - {"planner", "reflect_rounds"}:
        raise InputError(f"preset {name!r}: [plan] takes only 'planner' and 'reflect_rounds'")
    planner = plan.get("planner", "none")
    if planner not in PLANNERS:
        raise InputError(f"preset {name!r}: plan.planner must be one of {', '.join(PLANNERS)}")
    rounds = plan.get("reflect_rounds", 0)
    if not isinstance(rounds, int) or not 0 <= rounds <= 5:
        raise InputError(f"preset {name!r}: plan.reflect_rounds must be an integer from 0 to 5")
    gate = _gate(name, data.get("gate") or {})
    select = data.get("select") or {}
    select_keys = {"mmr_lambda", "mmr_pool", "per_doc", "pool_factor"}
    if set(select) - select_keys:
        raise InputError(f"preset {name!r}: [select] takes only {', '.join(sorted(select_keys))}")
    for key in ("per_doc", "pool_factor"):
        value = select.get(key)
        if value is not None and (not isinstance(value, int) or value < 1):
            raise InputError(f"preset {name!r}: select.{key} must be a positive integer")
    lam = select.get("mmr_lambda")
    if lam is not None and (not isinstance(lam, (int, float)) or isinstance(lam, bool) or not 0 <= lam <= 1):
        raise InputError(f"preset {name!r}: select.mmr_lambda must be a number from 0 to 1")
    pool = select.get("mmr_pool", 30)
    if not isinstance(pool, int) or pool < 1:
        raise InputError(f"preset {name!r}: select.mmr_pool must be a positive integer")
    return Preset(name=name, description=str(data.get("description", "")), channels=channels,
                  fusion=method, rrf_k=rrf_k, normalization=normalization, planner=planner,
                  reflect_rounds=rounds, gate=gate, mmr_lambda=None if lam is None else float(lam), mmr_pool=pool,
                  per_doc=select.get("per_doc"), pool_factor=select.get("pool_factor", 12))


def _gate(name: str, data: dict[str, Any]) -> GateConfig:
    numbers, counts = ("min_score", "min_relative", "min_cosine"), ("min_keyword_hits", "keyword_exempt")
    unknown = set(data) - set(numbers) - set(counts) - {"cross_lingual"}
    if unknown:
        raise InputError(f"preset {name!r}: [gate] takes only {', '.join(sorted([*numbers, *counts, 'cross_lingual']))}")
    for key in numbers:
        if key in data and (not isinstance(data[key], (int, float)) or isinstance(data[key], bool)):
            raise InputError(f"preset {name!r}: gate.{key} must be a number")
    for key in counts:
        if key in data and (not isinstance(data[key], int) or isinstance(data[key], bool) or data[key] < 1):
            raise InputError(f"preset {name!r}: gate.{key} must be a positive integer")
    if not isinstance(data.get("cross_lingual", False), bool):
        raise InputError(f"preset {name!r}: gate.cross_lingual must be true or false")
    return GateConfig(**{k: (float(v) if k in numbers else v) for k, v in data.items()})


_cache: dict[str, Preset] = {}


def load_preset(name_or_path: "str | Preset") -> Preset:
    """A shipped preset by name, or a user preset from a ``.toml`` path."""
    if isinstance(name_or_path, Preset):
        return name_or_path
    if name_or_path in _cache:
        return _cache[name_or_path]
    shipped = _shipped()
    if name_or_path in shipped:
        preset = _cache[name_or_path] = parse_preset(name_or_path, shipped[name_or_path])
        return preset
    if name_or_path.endswith(".toml"):
        # User files are re-read every time, so edits take effect without a restart.
        path = Path(name_or_path)
        if not path.is_file():
            raise InputError(f"preset file {path} does not exist")
        return parse_preset(path.stem, path.read_text(encoding="utf-8"))
    raise InputError(f"unknown preset {name_or_path!r}; choose one of {', '.join(PRESET_NAMES)} or a .toml path")
