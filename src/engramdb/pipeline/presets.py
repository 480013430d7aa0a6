"""Presets: named pipeline configurations stored as TOML data, not code paths.

A preset lists its stages in order (``[pipeline] stages``) and configures each one in its
own section: ``[channels.<name>]`` for recall, ``[fusion]``, ``[plan]``, ``[gate]``,
``[group]``, ``[rerank]`` and ``[diversify]``. Shipped presets live in
``engramdb/pipeline/presets/*.toml``; a user passes a path to a TOML file of the same shape.
The full reference is docs/PRESETS.md.
"""

from __future__ import annotations

import copy
import difflib
import functools
import math
import os
import tomllib
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import InputError
from .adapt import ADAPT_KEYS, AdaptConfig, parse_adapt
from .gates import GateConfig
from .neighbours import NeighboursConfig, parse_neighbours
from .recency import RecencyConfig, parse_recency

CHANNELS = ("semantic", "lexical", "symbolic", "names", "temporal", "dated", "substring", "translated", "feedback")
FUSION_METHODS = ("rrf", "weighted", "union", "max", "route", "learned")
NORMALIZATIONS = ("zscore", "dbsf", "minmax", "none")
PLANNERS = ("none", "rules", "llm")
STAGES = ("plan", "recall", "fuse", "neighbours", "recency", "gate", "group", "rerank", "diversify", "reflect")
# Stages that work on fused candidates and may come in any order between fuse and reflect;
# each is configured by a section of its own name (reflect by [plan] reflect_rounds).
POST_FUSION = ("neighbours", "recency", "gate", "group", "rerank", "diversify")
GROUP_KEYS = ("doc", "path", "session")
MAX_DEPTH = 10_000  # the largest count (channel k, pools) a preset may ask for


@dataclass(frozen=True, slots=True)
class ChannelConfig:
    k: int = 50
    weight: float = 1.0
    #: feedback channel only: how many first-pass results feed the query vector, and their weight
    top: int = 3
    alpha: float = 1.0
    #: lexical channel only: the share of the query's idf mass (the BM25 of a row holding each of
    #: its terms once) the best row must score for the channel's full weight; below it the
    #: weight shrinks in proportion (None: always the full weight). See `lexical_evidence`.
    evidence: float | None = None
    #: temporal channel only: the share of its weight an entry in the window gets when it shows
    #: nothing of what else the question asks (None: the full weight). See `window_topic`.
    off_topic: float | None = None


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """Molore's deep pool: the best ``k · pool_factor`` candidates, at most ``per_group`` per
    source (``by``: doc, path or session), the best ``k · keep_factor`` kept for the stages
    after; ``dedupe`` drops entries whose text repeats a better one's; ``derived`` drops a
    turn a better-ranked fact was derived from, or a fact whose turns are all shown above it;
    ``small_talk`` scales the score of a conversation turn that says nothing but small talk
    ("👍", "haha yes", "thanks!", "好的") by that factor (unset: off)."""

    per_group: int | None = None
    by: str = "doc"
    pool_factor: int = 12
    keep_factor: int = 4
    dedupe: bool = False
    derived: bool = False
    small_talk: float | None = None

    @property
    def active(self) -> bool:
        return self.per_group is not None or self.dedupe or self.derived or self.small_talk is not None


@dataclass(frozen=True, slots=True)
class RerankConfig:
    """A cross-encoder over the best ``pool`` candidates. ``model`` is a directory holding
    ``model.onnx`` and ``tokenizer.json`` (default: the ``ENGRAM_RERANKER`` variable);
    the final score is ``weight · rerank + (1 − weight) · fused``, both min-max normalised."""

    model: str | None = None
    pool: int = 30
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class DiversifyConfig:
    """MMR over the best ``pool`` candidates with trade-off ``mmr_lambda`` (unset: off)."""

    mmr_lambda: float | None = None
    pool: int = 30


@dataclass(frozen=True, slots=True)
class Preset:
    name: str
    description: str = ""
    stages: tuple[str, ...] = STAGES
    channels: dict[str, ChannelConfig] = field(default_factory=dict)
    fusion: str = "rrf"
    rrf_k: int = 60
    normalization: str = "zscore"
    route_slots: bool = False
    calibration: tuple[float, float] | None = None
    #: the calibration of a query whose time window the temporal channel found entries in
    calibration_window: tuple[float, float] | None = None
    ranker: str = "ranker"
    adapt: AdaptConfig = field(default_factory=AdaptConfig)
    neighbours: NeighboursConfig = field(default_factory=NeighboursConfig)
    recency: RecencyConfig = field(default_factory=RecencyConfig)
    planner: str = "none"
    reflect_rounds: int = 0
    gate: GateConfig = field(default_factory=GateConfig)
    group: GroupConfig = field(default_factory=GroupConfig)
    rerank: RerankConfig = field(default_factory=RerankConfig)
    diversify: DiversifyConfig = field(default_factory=DiversifyConfig)


def preset_to_dict(preset: Preset) -> dict[str, Any]:
    """The resolved settings of `preset` (defaults filled in), JSON-able."""
    from dataclasses import asdict

    data = asdict(preset)
    data["stages"] = list(preset.stages)
    data["calibration"] = list(preset.calibration) if preset.calibration else None
    data["calibration_window"] = list(preset.calibration_window) if preset.calibration_window else None
    return data


def preset_source(name: str) -> str | None:
    """The TOML text of a shipped preset (None for an unknown name)."""
    return _shipped().get(name)


@functools.lru_cache(maxsize=1)
def _shipped() -> dict[str, str]:
    """The shipped presets' TOML by name (package data: read once)."""
    folder = resources.files("engramdb.pipeline").joinpath("presets")
    return {p.name[:-5]: p.read_text(encoding="utf-8") for p in folder.iterdir() if p.name.endswith(".toml")}


PRESET_NAMES: tuple[str, ...] = tuple(sorted(_shipped(), key=lambda n: (n != "default", n)))

_SECTIONS = {"description", "pipeline", "channels", "fusion", "adapt", "neighbours", "recency", "plan", "gate", "group", "rerank", "diversify"}


class _Checker:
    """Field validation with messages that name the preset and the field."""

    def __init__(self, name: str) -> None:
        self.name = name

    def fail(self, message: str) -> InputError:
        return InputError(f"preset {self.name!r}: {message}")

    def section(self, data: dict[str, Any], key: str, allowed: set[str]) -> dict[str, Any]:
        value = data.get(key) or {}
        if not isinstance(value, dict):
            raise self.fail(f"[{key}] must be a table")
        unknown = set(value) - allowed
        if unknown:
            raise self.fail(f"[{key}] takes only {', '.join(sorted(allowed))} (not {', '.join(sorted(unknown))})")
        return value

    def integer(self, section: str, data: dict[str, Any], key: str, default: int | None, low: int = 1,
                high: int | None = MAX_DEPTH) -> int | None:
        value = data.get(key, default)
        if value is None:
            return None
        if not isinstance(value, int) or isinstance(value, bool) or value < low or (high is not None and value > high):
            bound = f"from {low} to {high}" if high not in (None, MAX_DEPTH) else (
                ">= 0" if low == 0 else "> 0") + (f" (at most {MAX_DEPTH:,})" if high else "")
            raise self.fail(f"{section}.{key} must be an integer {bound}")
        return value

    def number(self, section: str, data: dict[str, Any], key: str, default: float | None, low: float | None = None,
               high: float | None = None) -> float | None:
        value = data.get(key, default)
        if value is None:
            return None
        if (not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value)
                or (low is not None and value < low) or (high is not None and value > high)):
            bound = f" from {low:g} to {high:g}" if low is not None and high is not None else (
                f" >= {low:g}" if low is not None else "")
            raise self.fail(f"{section}.{key} must be a number{bound}")
        return float(value)

    def boolean(self, section: str, data: dict[str, Any], key: str) -> bool:
        value = data.get(key, False)
        if not isinstance(value, bool):
            raise self.fail(f"{section}.{key} must be true or false")
        return value

    def choice(self, section: str, data: dict[str, Any], key: str, default: str, options: tuple[str, ...]) -> str:
        value = data.get(key, default)
        if value not in options:
            raise self.fail(f"{section}.{key} must be one of {', '.join(options)}")
        return value


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """`override` on top of `base`: tables merge key by key, anything else is replaced."""
    out = dict(base)
    for key, value in override.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _load_toml(check: "_Checker", text: str, folder: Path | None, seen: tuple[str, ...] = (),
               allow_files: bool = True) -> dict[str, Any]:
    """The preset's TOML as a dict, with ``extends = "<preset>"`` resolved (a shipped name, or
    a .toml path relative to the extending file)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise check.fail(f"invalid TOML: {exc}") from exc
    return _extend(check, data, folder, seen, allow_files)


def _extend(check: "_Checker", data: dict[str, Any], folder: Path | None, seen: tuple[str, ...],
            allow_files: bool) -> dict[str, Any]:
    base = data.pop("extends", None)
    if base is None:
        return data
    if not isinstance(base, str) or not base:
        raise check.fail("extends must be a preset name or a .toml path")
    if base in seen:
        raise check.fail(f"extends loops back to {base!r}")
    shipped = _shipped()
    if base in shipped:
        base_text, base_folder = shipped[base], None
    elif base.endswith(".toml") and allow_files:
        path = Path(base) if folder is None else folder / base
        if not path.is_file():
            raise check.fail(f"extends {base!r}: no such file {path}")
        base_text, base_folder = path.read_text(encoding="utf-8"), path.parent
    elif base.endswith(".toml"):
        raise check.fail(f"extends {base!r}: preset files are switched off here; extend a shipped preset")
    else:
        raise check.fail(f"extends {base!r}: unknown preset (choose one of {', '.join(PRESET_NAMES)} or a .toml path)")
    inherited = _load_toml(check, base_text, base_folder, (*seen, base), allow_files)
    stages = data.get("pipeline", {}).get("stages") if isinstance(data.get("pipeline"), dict) else None
    if isinstance(stages, list):
        # This file says which stages run: the base's settings of a stage it leaves out go
        # with the stage (its own settings of such a stage are still an error, below).
        for stage in POST_FUSION:
            if stage not in stages and stage not in data:
                inherited.pop(stage, None)
        if "reflect" not in stages and "reflect_rounds" not in data.get("plan", {}):
            inherited.get("plan", {}).pop("reflect_rounds", None)
    merged = _merge(inherited, data)
    if "description" not in data:
        merged["description"] = f"{base} with changes"
    return merged


def parse_preset(name: str, text: str, folder: Path | None = None) -> Preset:
    """Validate preset TOML; every mistake is an InputError naming the preset and the field.

    ``extends = "default"`` (or a .toml path, relative to `folder`) starts from another preset:
    its tables are merged key by key with this file's, which wins."""
    check = _Checker(name)
    return _build(check, name, _load_toml(check, text, folder), folder)


def preset_from_table(table: dict[str, Any], *, name: str = "inline", allow_files: bool = True) -> Preset:
    """A preset given as data: the tables a preset file holds, as a dict (what a server's
    client sends). ``extends`` may name a shipped preset; with ``allow_files=False`` no key
    may name a file (``extends = "x.toml"``, ``[rerank] model``)."""
    check = _Checker(name)
    if not isinstance(table, dict):
        raise check.fail("an inline preset must be a table (a dict of sections)")
    data = copy.deepcopy(table)
    rerank = data.get("rerank")
    if not allow_files and isinstance(rerank, dict) and "model" in rerank:
        raise check.fail("rerank.model names a file; preset files are switched off here")
    fusion = data.get("fusion")
    if not allow_files and isinstance(fusion, dict) and str(fusion.get("model", "")).endswith(".json"):
        raise check.fail("fusion.model names a file; preset files are switched off here")
    return _build(check, name, _extend(check, data, None, (), allow_files), None)


def _build(check: "_Checker", name: str, data: dict[str, Any], folder: Path | None) -> Preset:
    if "select" in data:
        raise check.fail("[select] was split into [group] (per_group, pool_factor) and [diversify] (mmr_lambda, pool)")
    unknown = set(data) - _SECTIONS
    if unknown:
        names = sorted(unknown, key=str)
        known = sorted(_SECTIONS - {"description"}) + ["description", "extends"]
        hints = [f"{n!r:.40} (did you mean {m[0]!r}?)" if (m := difflib.get_close_matches(str(n), known, 1, 0.75))
                 else f"{n!r:.40}" for n in names]
        raise check.fail(f"unknown key{'s' if len(names) > 1 else ''} {', '.join(hints)} (tables: "
                         f"{', '.join(sorted(_SECTIONS - {'description'}))}; top-level keys: description, extends)")
    if not isinstance(data.get("description", ""), str):
        raise check.fail(f"description must be a string, not {type(data['description']).__name__}")
    channels = _channels(check, data)
    fusion = check.section(data, "fusion", {"method", "k", "normalization", "route_slots", "calibration",
                                            "calibration_window", "model"})
    plan = check.section(data, "plan", {"planner", "reflect_rounds"})
    group = check.section(data, "group", {"per_group", "by", "pool_factor", "keep_factor", "dedupe", "derived",
                                             "small_talk"})
    rerank = check.section(data, "rerank", {"model", "pool", "weight"})
    diversify = check.section(data, "diversify", {"mmr_lambda", "pool"})
    if "model" in rerank and (not isinstance(rerank["model"], str) or not rerank["model"].strip()):
        raise check.fail("rerank.model must be a path (a directory with model.onnx and tokenizer.json)")
    preset = Preset(
        name=name,
        description=str(data.get("description", "")),
        stages=_stages(check, data, {**{stage: stage in data for stage in POST_FUSION},
                                     "reflect": bool(plan.get("reflect_rounds"))}),
        channels=channels,
        fusion=check.choice("fusion", fusion, "method", "rrf", FUSION_METHODS),
        rrf_k=check.integer("fusion", fusion, "k", 60, low=0) or 0,
        normalization=check.choice("fusion", fusion, "normalization", "zscore", NORMALIZATIONS),
        route_slots=check.boolean("fusion", fusion, "route_slots"),
        calibration=_calibration(check, fusion),
        calibration_window=_calibration(check, fusion, "calibration_window"),
        ranker=_ranker(check, fusion, folder),
        adapt=parse_adapt(check.section(data, "adapt", set(ADAPT_KEYS)), set(channels), check.fail),
        neighbours=parse_neighbours(check.section(data, "neighbours", {"lift", "top", "span", "combine"}), check),
        recency=parse_recency(check.section(data, "recency", {"tier", "pool", "share", "relevance", "change_tier"}), check),
        planner=check.choice("plan", plan, "planner", "none", PLANNERS),
        reflect_rounds=check.integer("plan", plan, "reflect_rounds", 0, low=0, high=5) or 0,
        gate=_gate(check, data),
        group=GroupConfig(per_group=check.integer("group", group, "per_group", None),
                          by=check.choice("group", group, "by", "doc", GROUP_KEYS),
                          pool_factor=check.integer("group", group, "pool_factor", 12) or 12,
                          keep_factor=check.integer("group", group, "keep_factor", 4) or 4,
                          dedupe=check.boolean("group", group, "dedupe"),
                          derived=check.boolean("group", group, "derived"),
                          small_talk=check.number("group", group, "small_talk", None, 0.0, 1.0)),
        rerank=RerankConfig(model=_model_path(rerank.get("model"), folder), pool=check.integer("rerank", rerank, "pool", 30) or 30,
                            weight=check.number("rerank", rerank, "weight", 1.0, 0.0, 1.0) or 0.0),
        diversify=DiversifyConfig(mmr_lambda=check.number("diversify", diversify, "mmr_lambda", None, 0.0, 1.0),
                                  pool=check.integer("diversify", diversify, "pool", 30) or 30),
    )
    if preset.adapt.enabled and preset.fusion not in ("weighted", "rrf", "learned"):
        raise check.fail("[adapt] needs fusion.method = \"weighted\", \"rrf\" or \"learned\" (methods with channel weights)")
    if "model" in fusion and preset.fusion != "learned":
        raise check.fail("fusion.model needs fusion.method = \"learned\"")
    if preset.route_slots and preset.fusion != "route":
        raise check.fail("fusion.route_slots needs fusion.method = \"route\"")
    if preset.calibration is not None and (preset.fusion != "weighted" or preset.normalization != "zscore"):
        raise check.fail("fusion.calibration needs method = \"weighted\" with normalization = \"zscore\"")
    if preset.calibration is None and preset.calibration_window is not None:
        # A preset that extends the default and turns its calibration off wants raw scores.
        preset = replace(preset, calibration_window=None)
    if preset.neighbours.combine == "or" and preset.calibration is None and preset.fusion != "learned":
        # "or" combines probabilities; raw fused sums are on no such scale.
        raise check.fail("neighbours.combine = \"or\" needs scores that are probabilities "
                         "(fusion.calibration, or fusion.method = \"learned\"); "
                         "on other scales set neighbours.combine = \"max\"")
    return preset


def _model_path(model: str | None, folder: Path | None) -> str | None:
    """A relative cross-encoder path in a user preset is relative to the preset file."""
    if model is None or folder is None or Path(model).expanduser().is_absolute():
        return model
    return str(folder / model)


def _ranker(check: _Checker, fusion: dict[str, Any], folder: Path | None) -> str:
    """A shipped ranker model's name, or a ``.json`` model file (relative to the preset file)."""
    from .ranker import load_model

    value = fusion.get("model", "ranker")
    if not isinstance(value, str) or not value.strip():
        raise check.fail("fusion.model must be a shipped model's name or a .json file")
    if value.endswith(".json") and folder is not None and not Path(value).expanduser().is_absolute():
        value = str(folder / value)
    if fusion.get("method") == "learned":
        try:
            load_model(value)
        except ValueError as exc:
            raise check.fail(f"fusion.model: {exc}") from None
    return value


def _calibration(check: _Checker, fusion: dict[str, Any], key: str = "calibration") -> tuple[float, float] | None:
    value = fusion.get(key)
    if value is None:
        return None
    if (not isinstance(value, list) or len(value) != 2
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value)
            or value[0] <= 0):
        raise check.fail(f"fusion.{key} must be [a, b]: a positive slope and an intercept")
    return float(value[0]), float(value[1])


def _channels(check: _Checker, data: dict[str, Any]) -> dict[str, ChannelConfig]:
    channels: dict[str, ChannelConfig] = {}
    raw = data.get("channels") or {}
    if not isinstance(raw, dict):
        raise check.fail("[channels] must be a table of [channels.<name>] sections")
    for channel, conf in raw.items():
        if channel not in CHANNELS:
            raise check.fail(f"unknown channel {channel!r} (known: {', '.join(CHANNELS)})")
        allowed = {"k", "weight", "top", "alpha"} if channel == "feedback" else \
            {"k", "weight", "evidence"} if channel == "lexical" else \
            {"k", "weight", "off_topic"} if channel == "temporal" else {"k", "weight"}
        if not isinstance(conf, dict) or set(conf) - allowed:
            keys = "'k', 'weight', 'top' and 'alpha'" if channel == "feedback" else \
                "'k', 'weight' and 'evidence'" if channel == "lexical" else \
                "'k', 'weight' and 'off_topic'" if channel == "temporal" else "'k' and 'weight'"
            raise check.fail(f"channel {channel!r} takes only {keys}")
        k = check.integer(f"channels.{channel}", conf, "k", 50)
        weight = check.number(f"channels.{channel}", conf, "weight", 1.0, low=0.0)
        top = check.integer(f"channels.{channel}", conf, "top", 3, low=1, high=50)
        alpha = check.number(f"channels.{channel}", conf, "alpha", 1.0, low=0.0, high=100.0)
        evidence = check.number(f"channels.{channel}", conf, "evidence", None, low=0.0, high=10.0)
        off = check.number(f"channels.{channel}", conf, "off_topic", None, low=0.0, high=1.0)
        channels[channel] = ChannelConfig(k=k or 50, weight=weight if weight is not None else 1.0,
                                          top=top or 3, alpha=alpha if alpha is not None else 1.0,
                                          evidence=evidence or None, off_topic=off)
    if not channels:
        raise check.fail("needs at least one channel under [channels.<name>]")
    if "translated" in channels and "lexical" not in channels:
        raise check.fail("channel 'translated' merges into the lexical channel's list: add [channels.lexical]")
    return channels


def _stages(check: _Checker, data: dict[str, Any], configured: dict[str, bool]) -> tuple[str, ...]:
    """The stage order: ``[pipeline] stages`` if given (validated), else the standard order."""
    pipeline = check.section(data, "pipeline", {"stages"})
    if "stages" not in pipeline:
        return STAGES
    stages = pipeline["stages"]
    if not isinstance(stages, list) or not all(isinstance(s, str) for s in stages):
        raise check.fail("pipeline.stages must be a list of stage names")
    for stage in stages:
        if stage not in STAGES:
            raise check.fail(f"unknown stage {stage!r} in pipeline.stages (known: {', '.join(STAGES)})")
    if len(set(stages)) != len(stages):
        raise check.fail("pipeline.stages lists a stage twice")
    for needed in ("recall", "fuse"):
        if needed not in stages:
            raise check.fail(f"pipeline.stages must include {needed!r}")
    position = {s: i for i, s in enumerate(stages)}
    if "plan" in position and position["plan"] != 0:
        raise check.fail("pipeline.stages: 'plan' must come first")
    if position["fuse"] != position["recall"] + 1:
        raise check.fail("pipeline.stages: 'fuse' must follow 'recall'")
    if "reflect" in position and position["reflect"] != len(stages) - 1:
        raise check.fail("pipeline.stages: 'reflect' must come last")
    for stage in stages:
        if stage in POST_FUSION and position[stage] < position["fuse"]:
            raise check.fail(f"pipeline.stages: {stage!r} must come after 'fuse'")
    for stage, present in configured.items():
        if present and stage not in position:
            section = "plan] reflect_rounds" if stage == "reflect" else stage + "]"
            raise check.fail(f"[{section} is configured but {stage!r} is not in pipeline.stages")
    return tuple(stages)


def _gate(check: _Checker, data: dict[str, Any]) -> GateConfig:
    numbers = ("min_score", "min_relative", "min_cosine", "retry_min_relative")
    counts = ("min_keyword_hits", "keyword_exempt", "retry_min_keyword_hits")
    gate = check.section(data, "gate", {*numbers, *counts, "cross_lingual"})
    values: dict[str, Any] = {key: check.number("gate", gate, key, None) for key in numbers}
    values.update({key: check.integer("gate", gate, key, None) for key in counts})
    return GateConfig(**values, cross_lingual=check.boolean("gate", gate, "cross_lingual"))


_cache: dict[str, Preset] = {}


def load_preset(preset: "str | os.PathLike[str] | Preset | dict[str, Any]", *, allow_files: bool = True) -> Preset:
    """A shipped preset by name, a `Preset`, an inline table (see `preset_from_table`), or a
    user preset from a ``.toml`` path, a str or a `pathlib.Path` (unless ``allow_files=False``: a server must never
    be made to read a file its client names)."""
    if isinstance(preset, Preset):
        return preset
    if isinstance(preset, dict):
        return preset_from_table(preset, allow_files=allow_files)
    if isinstance(preset, os.PathLike):
        preset = os.fspath(preset)
        if not isinstance(preset, str) or not preset.endswith(".toml"):
            raise InputError(f"a preset file is a .toml path, not {preset!r:.80}")
    if not isinstance(preset, str):
        raise InputError(f"preset must be a name, a .toml path, a Preset or a table, not {type(preset).__name__}")
    if preset in _cache:
        return _cache[preset]
    shipped = _shipped()
    if preset in shipped:
        found = _cache[preset] = parse_preset(preset, shipped[preset])
        return found
    if preset.endswith(".toml") and allow_files:
        # User files are re-read every time, so edits take effect without a restart.
        path = Path(preset)
        if not path.is_file():
            raise InputError(f"preset file {path} does not exist")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"preset file {path} cannot be read ({exc})") from None
        return parse_preset(path.stem, text, path.parent)
    if preset.endswith(".toml"):
        raise InputError(f"preset files are switched off here; choose one of {', '.join(PRESET_NAMES)} "
                         "or pass the preset as a table")
    other = "a .toml path" if allow_files else "a table of preset sections"
    raise InputError(f"unknown preset {preset[:80]!r}; choose one of {', '.join(PRESET_NAMES)} or {other}")
