"""A campaign in waves owns its judgements and its manifest (issue 61): a Pearmut export is read for the campaign ids
this campaign wrote only, a manifest's probabilities are recomputed from its recorded design, and replay refuses the
scores the live loop refuses."""

from __future__ import annotations

import json
import logging
import shutil

import numpy as np
import pytest

from precomet.cli import main
from precomet.waves.design import inclusion_probabilities

SYSTEMS = ("A", "B", "C")
MEANS = {"A": 5.0, "B": 5.5, "C": 6.0}  # close: wave 1 does not settle them


def _pool(path, n=30):
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(n):
            outputs = {name: f"{name} output {i}" for name in SYSTEMS}
            handle.write(json.dumps({"id": f"s{i}", "src": f"source {i}", "tgt": outputs}) + "\n")
    return path


def _argv(pool, manifest, *more):
    return ["waves", "--data", str(pool), "--size", "6", "--chooser", "random", "--manifest", str(manifest), *more]


def _first_wave(tmp_path, *options):
    """Wave 1 on a pool of 30 items, written as a batch and a Pearmut campaign: ``(pool, manifest, campaign id,
    the drawn cells)``."""
    pool, manifest = _pool(tmp_path / "pool.jsonl"), tmp_path / "m.json"
    argv = _argv(pool, manifest, "--batch", str(tmp_path / "w1.jsonl"), "--pearmut", str(tmp_path / "w1.pearmut.json"))
    argv += options
    assert main(argv) == 0
    campaign_id = json.loads((tmp_path / "w1.pearmut.json").read_text())["campaign_id"]
    cells = [json.loads(line) for line in (tmp_path / "w1.jsonl").read_text().splitlines()]
    return pool, manifest, campaign_id, [(cell["id"], cell["system"]) for cell in cells]


def _records(cells, *, shift=0.0, user="u"):
    """Pearmut records of one user scoring every cell (system mean + noise by the item's number, + ``shift``)."""
    items: dict[str, dict] = {}
    for item, system in cells:
        noise = (int(item[1:]) * 7 + ord(system) * 3) % 10
        items.setdefault(item, {})[system] = {"score": MEANS[system] + noise + shift}
    return [
        {"user_id": user, "item_i": k, "item": [{"item_id": item}], "annotation": [annotation]}
        for k, (item, annotation) in enumerate(items.items())
    ]


def _report(tmp_path, pool, manifest, flag, export, name):
    """The report of the next call on a copy of the manifest (the campaign itself is left as it is)."""
    folder = tmp_path / name
    folder.mkdir()
    shutil.copy(manifest, folder / "m.json")
    argv = _argv(pool, folder / "m.json", flag, str(export), "--report", str(folder / "r.json"))
    assert main([*argv, "--batch", str(folder / "w2.jsonl")]) == 0
    return json.loads((folder / "r.json").read_text())


# ------------------------------------------------------------------------------------------------ judgements
def test_an_export_holding_a_stale_campaign_too_reads_this_campaigns_records_only(tmp_path, caplog):
    """The same user and item ids in a stale campaign were read as more annotators: the means moved towards the stale
    ones and the report could say STOP (issue 61). Now they are left out, counted and named."""
    pool, manifest, ours, cells = _first_wave(tmp_path)
    stale = "pool_0123abcd_wave1"
    alone = tmp_path / "ours.json"
    alone.write_text(json.dumps({ours: _records(cells)}))
    mixed = tmp_path / "mixed.json"
    mixed.write_text(json.dumps({ours: _records(cells), stale: _records(cells, shift=50.0)}))
    expected = _report(tmp_path, pool, manifest, "--pearmut-annotations", alone, "alone")
    with caplog.at_level(logging.WARNING):
        got = _report(tmp_path, pool, manifest, "--pearmut-annotations", mixed, "mixed")
    assert got == expected
    assert [row["mean"] for row in got["ranking"]] == pytest.approx(
        sorted((row["mean"] for row in expected["ranking"]), reverse=True), abs=1e-12
    )
    assert max(row["mean"] for row in got["ranking"]) < 20  # none of the stale campaign's +50
    notice = " ".join(record.getMessage() for record in caplog.records)
    assert f"ignored {len(_records(cells))} record(s) of campaign(s) {stale} (not this campaign's" in notice
    assert "mixed.json" in notice


def test_an_export_of_another_campaign_only_is_refused_naming_the_file_and_the_ids(tmp_path, capsys):
    pool, manifest, ours, cells = _first_wave(tmp_path)
    export = tmp_path / "last-week.json"
    export.write_text(json.dumps({"pool_0123abcd_wave1": _records(cells)}))
    capsys.readouterr()
    assert main(_argv(pool, manifest, "--pearmut-annotations", str(export), "--batch", str(tmp_path / "w2.jsonl"))) == 2
    err = capsys.readouterr().err
    assert "last-week.json" in err and "'pool_0123abcd_wave1' (" in err and ours in err
    assert "not a record of this campaign" in err
    assert len(json.loads(manifest.read_text())["waves"]) == 1 and not (tmp_path / "w2.jsonl").exists()


def test_records_without_a_campaign_id_are_refused_once_the_campaign_knows_its_ids(tmp_path, capsys):
    """A JSON list of records names no campaign: it cannot be told from a stale campaign's, so a campaign with a
    manifest refuses it and says which exports name theirs."""
    pool, manifest, ours, cells = _first_wave(tmp_path)
    export = tmp_path / "records.json"
    export.write_text(json.dumps(_records(cells)))
    capsys.readouterr()
    assert main(_argv(pool, manifest, "--pearmut-annotations", str(export), "--batch", str(tmp_path / "w2.jsonl"))) == 2
    err = capsys.readouterr().err
    assert "records.json" in err and "no campaign id" in err and ours in err


def test_a_pearmut_log_is_read_under_its_own_name_the_campaign_id(tmp_path, capsys):
    pool, manifest, ours, cells = _first_wave(tmp_path)
    lines = "".join(json.dumps(record) + "\n" for record in _records(cells))
    (tmp_path / "logs").mkdir()
    log = tmp_path / "logs" / f"{ours}.jsonl"  # Pearmut's data/annotations/<campaign_id>.jsonl
    log.write_text(lines)
    download = tmp_path / "download.json"
    download.write_text(json.dumps({ours: _records(cells)}))
    by_log = _report(tmp_path, pool, manifest, "--pearmut-annotations", log, "log")
    assert by_log == _report(tmp_path, pool, manifest, "--pearmut-annotations", download, "download")
    renamed = tmp_path / "annotations.jsonl"
    renamed.write_text(lines)
    capsys.readouterr()
    assert main(_argv(pool, manifest, "--pearmut-annotations", str(renamed), "--batch", str(tmp_path / "w.jsonl"))) == 2
    err = capsys.readouterr().err
    assert "annotations.jsonl" in err and "'annotations' (" in err and "<campaign_id>.jsonl" in err and ours in err


def test_the_manifest_records_its_pearmut_ids_so_a_copy_of_the_pool_under_another_name_reads_them(tmp_path):
    """The campaign id holds the pool file's name: derived again from a copy of the pool under another name it would
    differ, and the campaign's own export would be refused. The manifest records the ids it wrote."""
    pool, manifest, ours, cells = _first_wave(tmp_path)
    assert json.loads(manifest.read_text())["waves"][0]["pearmut_campaign"] == ours
    copy = tmp_path / "copy.jsonl"
    shutil.copy(pool, copy)
    export = tmp_path / "p.json"
    export.write_text(json.dumps({ours: _records(cells)}))
    on_copy = _report(tmp_path, copy, manifest, "--pearmut-annotations", export, "copy")
    assert on_copy == _report(tmp_path, pool, manifest, "--pearmut-annotations", export, "original")
    assert on_copy["judged_cells"] == len(cells)


def test_a_manifest_that_records_no_id_reads_the_ids_its_waves_were_written_under(tmp_path):
    """A manifest of precomet <= 0.20 records no Pearmut id: the ids are derived from the pool's name and the
    campaign's first wave, as they were written."""
    pool, manifest, ours, cells = _first_wave(tmp_path)
    data = json.loads(manifest.read_text())
    del data["waves"][0]["pearmut_campaign"]
    manifest.write_text(json.dumps(data))
    export = tmp_path / "p.json"
    export.write_text(json.dumps({ours: _records(cells)}))
    assert _report(tmp_path, pool, manifest, "--pearmut-annotations", export, "old")["judged_cells"] == len(cells)


def test_a_campaign_begun_on_precomet_0_19_reads_its_export_under_the_id_0_19_wrote(tmp_path):
    """precomet <= 0.19 wrote ``<pool>_wave<k>`` and recorded neither the id nor the wave's design."""
    pool, manifest, _, cells = _first_wave(tmp_path)
    data = json.loads(manifest.read_text())
    for key in ("pearmut_campaign", "design"):
        del data["waves"][0][key]
    manifest.write_text(json.dumps(data))
    export = tmp_path / "p.json"
    export.write_text(json.dumps({f"{pool.stem}_wave1": _records(cells)}))
    assert _report(tmp_path, pool, manifest, "--pearmut-annotations", export, "old")["judged_cells"] == len(cells)


def test_a_manifest_spelled_through_a_missing_folder_is_the_same_manifest(tmp_path, monkeypatch, capsys):
    """``sub/../m.json`` with no ``sub/``: the lock resolves it as text to ``m.json``; the read and the write must
    too, or the call draws wave 1 again over the campaign's waves."""
    pool, manifest, _, _ = _first_wave(tmp_path)
    before = manifest.read_bytes()
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(_argv(pool, "sub/../m.json")) == 0
    assert "wave 1 has no judgement yet" in capsys.readouterr().err
    assert manifest.read_bytes() == before and not (tmp_path / "sub").exists()


def test_a_size_in_time_from_precomet_0_19_is_restated_in_annotator_time(tmp_path, capsys):
    """0.19 charged an item's cost once for all its systems: its ``--size 10m`` is 30 min of annotator time on a
    pool of three systems, and the campaign goes on with those waves, saying so."""
    pool, manifest = _pool(tmp_path / "pool.jsonl"), tmp_path / "m.json"
    argv = ["waves", "--data", str(pool), "--size", "10m", "--chooser", "random", "--manifest", str(manifest)]
    assert main([*argv, "--batch", str(tmp_path / "w1.jsonl")]) == 0
    data = json.loads(manifest.read_text())
    assert data["settings"]["size"] == "10m"
    data["precomet"] = "0.19.1"
    del data["waves"][0]["design"]
    manifest.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "written by precomet 0.19.1, whose --size 10m counted an item's time once for its 3 systems" in err
    assert "30 min of annotator time (every judgement counted), kept as --size 1800s" in err
    data["precomet"] = "0.20.1"
    manifest.write_text(json.dumps(data))
    assert main(argv) == 0 and "kept as --size" not in capsys.readouterr().err


def test_wave_two_keeps_the_campaigns_key_and_both_ids_are_read(tmp_path):
    pool, manifest, ours, cells = _first_wave(tmp_path, "--target-pairs", "all-pairs")
    export = tmp_path / "p1.json"
    export.write_text(json.dumps({ours: _records(cells)}))
    argv = _argv(pool, manifest, "--pearmut-annotations", str(export), "--batch", str(tmp_path / "w2.jsonl"))
    assert main([*argv, "--pearmut", str(tmp_path / "w2.pearmut.json")]) == 0
    second = json.loads((tmp_path / "w2.pearmut.json").read_text())["campaign_id"]
    assert second == ours.replace("_wave1", "_wave2")
    assert [w.get("pearmut_campaign") for w in json.loads(manifest.read_text())["waves"]] == [ours, second]
    cells2 = [(c["id"], c["system"]) for c in map(json.loads, (tmp_path / "w2.jsonl").read_text().splitlines())]
    both = tmp_path / "both.json"
    both.write_text(json.dumps({ours: _records(cells), second: _records(cells2)}))
    report = _report(tmp_path, pool, manifest, "--pearmut-annotations", both, "both")
    assert report["judged_cells"] == len(cells) + len(cells2)


# ------------------------------------------------------------------------------------------------ the manifest
@pytest.mark.parametrize(("value", "shown"), [(1e-9, "1e-09"), (0.9, "0.9")])
def test_a_probability_edited_in_the_manifest_is_refused_naming_the_wave_and_the_unit(tmp_path, capsys, value, shown):
    """A drawn unit's probability edited to 1e-9 moved the means from about 10 to about 31, one edited from 0.2 to 0.9
    by up to 4.5, without a word (issue 61): the recorded design gives 0.2 to every unit of a random wave of 6 in 30."""
    pool, manifest, _, cells = _first_wave(tmp_path)
    data = json.loads(manifest.read_text())
    record = data["waves"][0]
    assert record["unit_probability"] == pytest.approx([0.2] * 30, abs=1e-9)  # the premise
    unit = cells[0][0]
    record["unit_probability"][record["open_units"].index(unit)] = value
    manifest.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(_argv(pool, manifest, "--batch", str(tmp_path / "w2.jsonl"))) == 2
    err = capsys.readouterr().err
    assert "m.json" in err and "waves[0].unit_probability" in err and f"unit {unit!r} (wave 1)" in err
    assert f"inclusion probability {shown}, which is not what the recorded design gives (0.2)" in err


def test_an_edited_design_is_refused_too(tmp_path, capsys):
    pool, manifest, _, _ = _first_wave(tmp_path)
    data = json.loads(manifest.read_text())
    data["waves"][0]["design"]["budget"] = 12.0  # twice the wave: every probability would be 0.4
    manifest.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(_argv(pool, manifest, "--batch", str(tmp_path / "w2.jsonl"))) == 2
    assert "not what the recorded design gives (0.4)" in capsys.readouterr().err


def test_a_manifest_without_a_design_is_held_to_the_floor(tmp_path, capsys):
    """Waves recorded by precomet <= 0.20 carry no design: every probability must be at least the floor's share of
    their mean, which 1e-9 is not."""
    pool, manifest, _, _ = _first_wave(tmp_path)
    data = json.loads(manifest.read_text())
    del data["waves"][0]["design"]
    manifest.write_text(json.dumps(data))
    report = tmp_path / "r.json"
    assert main(_argv(pool, manifest, "--batch", str(tmp_path / "w2.jsonl"), "--report", str(report))) == 0
    data["waves"][0]["unit_probability"][3] = 1e-9
    manifest.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(_argv(pool, manifest, "--batch", str(tmp_path / "w2.jsonl"))) == 2
    assert "waves[0].unit_probability" in (err := capsys.readouterr().err) and "below the design's floor (0.0" in err


def test_the_recorded_design_gives_the_recorded_probabilities_of_every_chooser_and_level(tmp_path):
    """The record written is the record read: waves over documents, and top-k waves."""
    from precomet.waves.design import Design

    pool = tmp_path / "pool.jsonl"
    with open(pool, "w", encoding="utf-8") as handle:
        for i in range(40):
            outputs = {name: f"{name} output {i}" + " x" * (i % 5) for name in SYSTEMS}
            handle.write(json.dumps({"id": f"s{i}", "doc": f"d{i // 3}", "src": f"source {i}" + " w" * (i % 7),
                                     "tgt": outputs}) + "\n")  # fmt: skip
    for options in (["--chooser", "length", "--level", "doc"], ["--chooser", "length", "--top-k"]):
        manifest = tmp_path / f"m{len(options)}.json"
        argv = ["waves", "--data", str(pool), "--size", "8", "--manifest", str(manifest), *options]
        assert main([*argv, "--batch", str(tmp_path / "w1.jsonl")]) == 0
        record = json.loads(manifest.read_text())["waves"][0]
        design = record["design"]
        again = Design(
            np.array(design["unit_score"]), np.array(design["unit_size"]), design["budget"], design["floor"],
            top_k=not record["weighted"],
        ).probabilities()  # fmt: skip
        assert again.tolist() == record["unit_probability"]
        assert main([*argv, "--batch", str(tmp_path / "w2.jsonl")]) == 0  # read back: accepted


def test_inclusion_probabilities_keep_every_unit_above_the_floor_share_of_their_mean():
    """The bound the manifest holds a design-less wave to: π_u >= min(1, floor · mean(π))."""
    rng = np.random.default_rng(3)
    for _ in range(200):
        scores = rng.exponential(size=25) * (rng.random(25) < 0.7)
        sizes = rng.uniform(0.5, 3.0, size=25)
        pi = inclusion_probabilities(scores, sizes, float(rng.uniform(0.5, 30.0)), floor=0.2)
        assert (pi >= min(1.0, 0.2 * pi.mean()) * (1 - 1e-9)).all()


# ------------------------------------------------------------------------------------------------ replay
def test_replay_refuses_a_huge_score_as_the_live_loop_does(tmp_path, capsys):
    """One human score of 1e300 made replay exit 1 with LinAlgError; the live loop refuses scores above 1e12 in
    magnitude. One check serves both."""
    judged = tmp_path / "judged.jsonl"
    with open(judged, "w", encoding="utf-8") as handle:
        for i in range(12):
            scores = {name: {"human": (1e300 if (i, name) == (4, "B") else float(i % 4 + k))}
                      for k, name in enumerate(SYSTEMS)}  # fmt: skip
            handle.write(json.dumps({"id": f"s{i}", "src": f"source {i}", "scores": scores}) + "\n")
    assert main(["waves", "replay", "--data", str(judged), "--chooser", "random", "--runs", "2"]) == 2
    replayed = capsys.readouterr().err
    pool = _pool(tmp_path / "pool.jsonl", 12)
    assert main(["waves", "--data", str(pool), "--judgements", str(judged), "--batch", str(tmp_path / "w.jsonl")]) == 2
    live = capsys.readouterr().err
    said = "item 's4', system 'B': human score 1e+300 is out of range (|score| <= 1e+12 expected"
    assert said in replayed and said in live
    assert "judged.jsonl" in replayed and "LinAlgError" not in replayed


def test_the_replay_library_refuses_a_huge_score_too():
    from precomet.errors import PrecometError
    from precomet.waves.choosers import make_chooser
    from precomet.waves.plan import WaveSize
    from precomet.waves.replay import replay
    from precomet.waves.step import WaveSettings

    truth = np.arange(30, dtype=float).reshape(10, 3)
    truth[2, 1] = -1e300
    settings = WaveSettings(size=WaveSize("items", 3, "3"))
    with pytest.raises(PrecometError, match=r"toy: item '#2', system '#1': human score -1e\+300 is out of range"):
        replay(truth, lambda: make_chooser("random", np.ones(10)), settings, doc=np.arange(10), cost=np.ones(10),
               runs=1, campaign="toy")  # fmt: skip
