"""Filter parsing and preset loading: the errors a user sees must name the problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from engramdb import Entry, Filters, InputError, Memory
from engramdb.pipeline.presets import PRESET_NAMES, load_preset


def test_cli_filters_keep_json_scalars_for_metadata():
    f = Filters.parse_cli(["person=Alice", "person=Bob", "metadata.n=3", "metadata.ok=true", "metadata.tag=v1",
                           "since=2023-05-01", "kind=turn"])
    assert f.persons == ["Alice", "Bob"] and f.kinds == ["turn"]
    assert f.metadata == {"n": 3, "ok": True, "tag": "v1"}
    assert f.since == "2023-05-01T00:00:00+00:00"


def test_metadata_filters_compare_types_as_cli_md_says(mem: Memory) -> None:
    """A Python (or JSON body) filter is compared as given: "3" is not a stored 3, nor 1 a
    stored true; a CLI value is read as JSON when it parses, and a quoted one stays text."""
    mem.add([Entry(text="a", metadata={"n": 3, "ok": True, "s": "3"})])
    assert [mem.count(filters={"metadata.n": v}) for v in (3, 3.0, "3")] == [1, 1, 0]
    assert [mem.count(filters={"metadata.ok": v}) for v in (True, 1)] == [1, 0]
    assert [mem.count(filters={"metadata.s": v}) for v in ("3", 3)] == [1, 0]
    cli = Filters.parse_cli(["metadata.n=3", 'metadata.s="3"'])
    assert cli.metadata == {"n": 3, "s": "3"} and mem.count(filters=cli) == 1


def test_any_metadata_key_an_entry_stores_can_be_filtered_on(mem: Memory) -> None:
    """`--meta user.id=42` was stored, but `--filter metadata.user.id=42` was refused: a filter
    took only keys a JSON path can name as they are."""
    odd = {"user.id": 42, "customer name": "ACME", 'say "hi"': True, "空": None, "plain": "x"}
    mem.add([Entry(text="a", metadata=odd), Entry(text="b", metadata={"user": {"id": 42}, "plain": "y"})])
    for key, value in odd.items():
        assert [e.text for e in mem.list(filters={f"metadata.{key}": value})] == ["a"], key
        assert mem.count(filters={f"metadata.{key}": "42" if value == 42 else 7}) == 0, key  # typed
    cli = Filters.parse_cli(["metadata.user.id=42", "metadata.customer name=ACME"])
    assert cli.metadata == {"user.id": 42, "customer name": "ACME"} and mem.count(filters=cli) == 1


@pytest.mark.parametrize("pairs, message", [
    (["personAlice"], "key=value"),
    (["metadata.=1"], "a metadata filter names its key"),
    (["colour=red"], "unknown filter 'colour'"),
    (["kind=blog"], "filter kind must be one of"),
    (["since=last tuesday"], "not ISO 8601"),
])
def test_bad_filters_are_named(pairs, message):
    with pytest.raises(InputError, match=message):
        Filters.parse_cli(pairs)


def test_shipped_presets_load():
    assert PRESET_NAMES[0] == "default"
    assert {"default", "semantic", "lexical", "symbolic"} <= set(PRESET_NAMES)
    default = load_preset("default")
    assert set(default.channels) == {"semantic", "lexical", "symbolic", "names", "temporal", "dated", "translated",
                                     "feedback"}
    assert default.fusion == "weighted"
    assert set(load_preset("lexical").channels) == {"lexical"}
    assert default.planner == "rules" and load_preset("unplanned").planner == "none"
    unplanned = load_preset("unplanned").channels
    assert unplanned == {k: v for k, v in default.channels.items() if k != "dated"} and not default.gate.active
    assert load_preset("unplanned").adapt == default.adapt and default.adapt.enabled


@pytest.mark.parametrize("text, message", [
    ("[channels.semantic\nk = 3", "invalid TOML"),
    ("[channels.vibes]\nk = 3", "unknown channel 'vibes'"),
    ("[channels.lexical]\nk = 0", "channels.lexical.k must be an integer > 0"),
    ("[channels.lexical]\nweight = -1", "weight must be a number"),
    ("[channels.lexical]\nk = 5\ntop = 3", "takes only 'k', 'weight' and 'evidence'"),
    ("[channels.semantic]\nk = 5\nevidence = 0.2", "takes only 'k' and 'weight'"),
    ("description = 'x'", "at least one channel"),
    ("[channels.lexical]\nk = 5\n[fusion]\nmethod = 'borda'", "fusion.method"),
    ("[channels.lexical]\nk = 5\n[extras]\nx = 1", "unknown key 'extras' \\(tables: adapt, channels"),
    ("extend = 'default'\n[channels.lexical]\nk = 5", "unknown key 'extend' \\(did you mean 'extends'\\?\\)"),
    ("[channel.lexical]\nk = 5", "unknown key 'channel' \\(did you mean 'channels'\\?\\)"),
    ("description = 5\n[channels.lexical]\nk = 5", "description must be a string, not int"),
    ("[channels.lexical]\nk = 5\n[plan]\nplanner = 'oracle'", "plan.planner must be one of none, rules, llm"),
    ("[channels.lexical]\nk = 5\n[plan]\nreflect_rounds = 9", "reflect_rounds must be an integer from 0 to 5"),
    ("[channels.lexical]\nk = 5\n[plan]\ndepth = 2", r"\[plan\] takes only"),
    ("[channels.lexical]\nk = 5\n[gate]\nmin_score = 'high'", "gate.min_score must be a number"),
    ("[channels.lexical]\nk = 5\n[gate]\nfloor = 0.5", r"\[gate\] takes only"),
    ("[channels.lexical]\nk = 5\n[diversify]\nmmr_lambda = 1.5", "mmr_lambda must be a number from 0 to 1"),
    ("[channels.lexical]\nk = 5\n[diversify]\nrerank = true", r"\[diversify\] takes only mmr_lambda, pool"),
    ("[channels.lexical]\nk = 5\n[select]\nper_doc = 2", r"\[select\] was split into \[group\]"),
    ("[channels.lexical]\nk = 5\n[group]\nper_group = 0", "group.per_group must be an integer > 0"),
    ("[channels.lexical]\nk = 5\n[group]\nby = 'folder'", "group.by must be one of doc, path, session"),
    ("[channels.lexical]\nk = 5\n[rerank]\nweight = 2", "rerank.weight must be a number from 0 to 1"),
    ("[channels.lexical]\nk = 5\n[rerank]\nmodel = ''", "rerank.model must be a path"),
    ("[channels.lexical]\nk = 5\n[fusion]\nroute_slots = true", "route_slots needs fusion.method"),
    ("[channels.lexical]\nk = 5\n[pipeline]\nstages = ['recall', 'sort']", "unknown stage 'sort'"),
    ("[channels.lexical]\nk = 5\n[pipeline]\nstages = ['recall']", "must include 'fuse'"),
    ("[channels.lexical]\nk = 5\n[pipeline]\nstages = ['recall', 'fuse', 'plan']", "'plan' must come first"),
    ("[channels.lexical]\nk = 5\n[pipeline]\nstages = ['gate', 'recall', 'fuse']", "'gate' must come after 'fuse'"),
    ("[channels.lexical]\nk = 5\n[pipeline]\nstages = ['recall', 'fuse', 'reflect', 'gate']", "'reflect' must come last"),
    ("[channels.lexical]\nk = 5\n[pipeline]\nstages = ['recall', 'fuse', 'fuse']", "lists a stage twice"),
    ("[channels.lexical]\nk = 5\n[pipeline]\nstages = 'recall'", "must be a list of stage names"),
    ("[channels.lexical]\nk = 5\n[pipeline]\nstages = ['recall', 'fuse']\n[gate]\nmin_score = 1",
     r"\[gate\] is configured but 'gate' is not in pipeline.stages"),
])
def test_malformed_user_preset_gets_a_clear_error(tmp_path: Path, text: str, message: str):
    path = tmp_path / "mine.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        load_preset(str(path))


def test_unknown_preset_name():
    with pytest.raises(InputError, match="unknown preset 'nope'.* or a .toml path$"):
        load_preset("nope")
    with pytest.raises(InputError, match="unknown preset 'nope'.* or a table of preset sections$"):
        load_preset("nope", allow_files=False)  # a server: files are not on offer


@pytest.mark.parametrize("name", ["default", "unplanned", "rrf", "simplemem", "ping", "lychee", "molore"])
def test_every_shipped_preset_runs_end_to_end(mem, name):
    mem.add(["Release v2.3.1 fixed ERR_CONN_RESET.", "The staging database uses port 5433.",
             {"text": "Caroline went to a support group.", "persons": ["Caroline"], "timestamp": "2023-05-07"},
             "项目 XYZ 下个月开始收费。"])
    res = mem.search("which release fixed ERR_CONN_RESET in v2.3.1?", k=2, preset=name)
    assert res.hits and res.hits[0].text.startswith("Release v2.3.1"), name
    preset = load_preset(name)
    assert res.trace["preset"] == name and res.trace["stages"][0]["stage"] == preset.stages[0]
    assert [s["stage"] for s in res.trace["stages"]] == [*preset.stages, "select"]


def test_calibration_preset_is_the_default_but_for_its_calibration():
    from dataclasses import replace

    raw = load_preset(str(Path(__file__).resolve().parents[1] / "benchmarks" / "presets" / "default-uncalibrated.toml"))
    default = load_preset("default")
    assert raw.calibration == (1.0, 0.0) and default.calibration is not None and default.calibration[0] > 0
    assert raw.calibration_window is None  # a window question's raw mean too, for the fit
    assert default.calibration_window is not None and default.calibration_window[0] > 0
    assert replace(raw, name="default", description=default.description, calibration=default.calibration,
                   calibration_window=default.calibration_window) == default


def test_a_user_preset_can_extend_another(tmp_path: Path, mem):
    mine = tmp_path / "mine.toml"
    mine.write_text('extends = "default"\n[channels.lexical]\nweight = 0.9\n[diversify]\nmmr_lambda = 0.8\n')
    preset = load_preset(str(mine))
    default = load_preset("default")
    assert preset.channels["lexical"].weight == 0.9 and preset.channels["lexical"].k == default.channels["lexical"].k
    assert preset.channels["semantic"] == default.channels["semantic"] and preset.calibration == default.calibration
    assert preset.diversify.mmr_lambda == 0.8 and preset.stages == default.stages
    assert preset.description == "default with changes"
    # Chains resolve relative to the extending file; the last word wins.
    (tmp_path / "sub").mkdir()
    child = tmp_path / "sub" / "child.toml"
    child.write_text('extends = "../mine.toml"\ndescription = "mine, fewer candidates"\n[channels.semantic]\nk = 20\n')
    preset = load_preset(str(child))
    assert (preset.channels["semantic"].k, preset.channels["lexical"].weight) == (20, 0.9)
    mem.add(["Ann planted tomatoes.", "Bo fixed the bike."])
    assert mem.search("what did Ann plant?", k=1, preset=str(child)).hits[0].text == "Ann planted tomatoes."
    for text, message in [('extends = "nope"\n', "unknown preset"), ('extends = "gone.toml"\n', "no such file"),
                          ("extends = 3\n", "extends must be"),
                          ('extends = "default"\n[channels.lexical]\nweight = -1\n', "weight must be a number")]:
        mine.write_text(text)
        with pytest.raises(InputError, match=message):
            load_preset(str(mine))
    loop = tmp_path / "loop.toml"
    loop.write_text('extends = "loop.toml"\n')
    with pytest.raises(InputError, match="loops back"):
        load_preset(str(loop))


def test_until_a_bare_date_includes_that_whole_day(mem) -> None:  # type: ignore[no-untyped-def]
    from datetime import date

    mem.add([{"text": "noon on the 14th", "timestamp": "2024-03-14T12:00:00Z"},
             {"text": "midnight starting the 15th", "timestamp": "2024-03-15T00:00:00Z"}])
    for until in ("2024-03-14", "20240314", " 2024-03-14 ", date(2024, 3, 14)):
        assert [e.text for e in mem.list(filters={"until": until}).results] == ["noon on the 14th"]
        assert [h.entry.text for h in mem.search("noon", k=5, filters={"until": until})] == ["noon on the 14th"]
    assert mem.list(filters={"until": "2024-03-14T11:00:00Z"}).results == []  # a time is that instant
    [period] = mem.add([Entry(text="the spring exhibition", timestamp="2024-04-01", timestamp_end="2024-07-01")])
    assert period in [e.id for e in mem.list(filters={"since": "2024-05-15"}).results]  # it overlaps
    assert period in [h.id for h in mem.search("spring exhibition", k=5, filters={"since": "2024-05-15"})]
    assert period not in [e.id for e in mem.list(filters={"since": "2024-07-01"}).results]  # over by then
    for key in ("since", "until", "location", "kind"):  # an empty value is a mistake, not no filter
        with pytest.raises(InputError, match=f"filter {key}: needs a value"):
            mem.list(filters={key: ""})
    assert Filters.parse({"until": "2024-03-14"}).until.startswith("2024-03-14T23:59:59")


def test_a_preset_extending_default_may_leave_out_its_stages(tmp_path: Path) -> None:
    """The base's settings of a stage the new stage list leaves out go with it; this file's
    own settings of such a stage are still an error."""
    trim = tmp_path / "trim.toml"
    trim.write_text('extends = "default"\n[pipeline]\nstages = ["plan", "recall", "fuse", "group"]\n', encoding="utf-8")
    preset = load_preset(str(trim))
    assert preset.stages == ("plan", "recall", "fuse", "group") and preset.neighbours.lift is None
    assert preset.group.derived is True  # a stage it keeps keeps the base's settings
    assert preset.channels["semantic"].k == 100 and preset.adapt.dialogue is True
    own = tmp_path / "own.toml"
    own.write_text('extends = "default"\n[pipeline]\nstages = ["plan", "recall", "fuse"]\n[neighbours]\nlift = 0.3\n',
                   encoding="utf-8")
    with pytest.raises(InputError, match=r"\[neighbours\] is configured but 'neighbours' is not in pipeline.stages"):
        load_preset(str(own))


def test_a_path_preset_is_read_like_a_str_path(mem: Memory, tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text('description = "mine"\n[channels.lexical]\nk = 5\n', encoding="utf-8")
    assert load_preset(path).description == "mine"
    mem.add("Priya booked the flights to Lisbon.")
    assert mem.search("flights", preset=path).trace["preset"] == "mine"
    with pytest.raises(InputError, match="a preset file is a .toml path"):
        load_preset(tmp_path / "mine.txt")
    with pytest.raises(InputError, match="preset must be a name, a .toml path, a Preset or a table, not int"):
        load_preset(5)  # type: ignore[arg-type]
