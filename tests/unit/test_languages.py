"""Knowing what it does not know: a checkpoint records the languages (and domains) of its training sources, and
``predict`` / ``select --checkpoint`` warn, with the share, when sources are in languages it was never trained on."""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from precomet.cli import main
from precomet.errors import PrecometError
from precomet.estimator.checkpoint import read_meta
from precomet.estimator.languages import (
    TRAINED_SHARE,
    UNDETERMINED,
    WARN_SHARE,
    SourceSample,
    identify,
    language_of,
    language_profile,
    no_record_warning,
    report_languages,
    unseen_language_warning,
)
from precomet.estimator.metadata import check_meta

REPO = Path(__file__).resolve().parents[2]

GERMAN = [
    "Der Hund läuft schnell über die grüne Wiese.",
    "Ich habe heute leider keine Zeit für dich.",
    "Die Regierung hat gestern neue Gesetze beschlossen.",
]
HINDI = ["यह एक छोटा परीक्षण है।", "मैं आज बाजार जा रहा हूँ।"]
HEBREW = ["זהו מבחן קטן מאוד.", "אני הולך היום לשוק."]
CHINESE = ["这是一个小测试。", "我们今天下午去公园散步。"]
ENGLISH = ["This is a small test of the system.", "The weather is nice today."]


def _profile(counts: dict[str, int], sources: int | None = None) -> dict:
    sample = sum(counts.values())
    return {"counts": counts, "sample": sample, "sources": sample if sources is None else sources}


# ---------------------------------------------------------------------------------------------- identification
def test_identify_small_strings_of_five_languages():
    sources = GERMAN + HINDI + HEBREW + CHINESE + ENGLISH
    assert identify(sources) == {"de": 3, "en": 2, "he": 2, "hi": 2, "zh": 2}  # most first, ties by code
    assert [language_of(s) for s in (GERMAN[0], HINDI[0], HEBREW[0], CHINESE[0], ENGLISH[0])] == [
        "de",
        "hi",
        "he",
        "zh",
        "en",
    ]


@pytest.mark.parametrize("text", ["OK", "12 345", "--- !!", "好", "   "])
def test_short_or_letterless_sources_are_undetermined(text):
    assert language_of(text) == UNDETERMINED


def test_varieties_count_as_their_language_and_unsure_guesses_as_undetermined():
    import py3langid

    for text in ("物流速度快！", "等了几个小时", "精炼橄榄油可分为两个级别："):  # WMT22 zh-en sources
        assert py3langid.classify(text)[0] == "wuu" and language_of(text) == "zh"  # Wu Chinese: Chinese
    for text in ("No idea.", "(PERSON7) Okay."):  # WMT23 en-de sources py3langid calls Basque and Tagalog
        assert py3langid.classify(text)[0] != "en" and language_of(text) == UNDETERMINED


def test_profile_counts_and_shares():
    profile = language_profile(GERMAN + ["42"])
    assert profile["counts"] == {"de": 3, "und": 1} and profile["shares"] == {"de": 0.75, "und": 0.25}
    assert profile["sources"] == profile["sample"] == 4 and profile["identifier"].startswith("py3langid")


def test_sample_is_bounded_deterministic_and_independent_of_chunking():
    pool = [f"Satz Nummer {i} ist ein deutscher Satz." for i in range(5000)]
    whole = SourceSample(100)
    whole.add(pool)
    chunked = SourceSample(100)
    for start in range(0, len(pool), 37):
        chunked.add(pool[start : start + 37])
    assert whole.sources == chunked.sources and len(whole.sources) == 100 and whole.total == 5000
    assert whole.sampled and len(set(whole.sources)) == 100
    assert whole.sources != pool[:100]  # drawn across the pool, not its head
    positions = [pool.index(s) for s in whole.sources]
    assert positions == sorted(positions) and positions[-1] > 2500
    profile = language_profile(pool, limit=100)
    assert profile["sources"] == 5000 and profile["sample"] == 100 and profile["counts"] == {"de": 100}


# ---------------------------------------------------------------------------------------------- the warning
def test_warning_names_the_unseen_share_and_the_trained_languages():
    trained = _profile({"zh": 990, "en": 5, "und": 5})  # en at 0.5 % is below TRAINED_SHARE: not trained on
    inputs = _profile({"zh": 58, "de": 40, "hi": 2})
    assert TRAINED_SHARE == 0.01
    assert unseen_language_warning(inputs, trained, what="checkpoint ck") == (
        "42 % of the sources scored by checkpoint ck (de 40 %, hi 2 %) are in languages it was never trained on;"
        " it was trained on zh (99 %), so its utilities there are untested"
    )


def test_no_warning_for_trained_or_undetermined_sources_or_below_the_share():
    trained = _profile({"zh": 80, "en": 20})
    assert unseen_language_warning(_profile({"zh": 5, "en": 5, UNDETERMINED: 90}), trained) is None
    assert WARN_SHARE == 0.01
    assert unseen_language_warning(_profile({"zh": 995, "ja": 5}), trained) is None  # 0.5 %: identifier noise
    assert "1 % of the sources" in unseen_language_warning(_profile({"zh": 99, "ja": 1}), trained)


def test_warning_says_when_languages_were_sampled():
    message = unseen_language_warning(_profile({"he": 2000}, sources=1_000_000), _profile({"en": 10}))
    assert message.startswith("100 % of the sources scored by the estimator (he 100 %)")
    assert message.endswith("(languages identified on 2,000 of the 1,000,000 sources, drawn at random)")


def test_report_without_record_names_the_campaigns_and_the_input_languages(caplog):
    meta = {"training_data": {"campaigns": ["wmt22/zh-en"]}}
    with caplog.at_level(logging.WARNING, logger="precomet.estimator.languages"):
        message = report_languages(meta, language_profile(HEBREW), what="checkpoint old")
    assert message == (
        "checkpoint old does not record its training languages; it was trained on wmt22/zh-en; the languages of"
        " the sources scored: he 100 %"
    )
    assert caplog.records[-1].levelno == logging.WARNING and caplog.records[-1].getMessage() == message


def test_a_checkpoint_without_the_field_is_reported_with_its_campaigns():
    meta = read_meta(REPO / "checkpoints" / "metric-avg-e5").as_dict()
    del meta["training_languages"], meta["training_domains"]
    message = no_record_warning(meta, language_profile(HINDI), what="checkpoint metric-avg-e5")
    assert "does not record its training languages; it was trained on wmt22/zh-en" in message
    assert message.endswith("hi 100 %")


def test_the_shipped_checkpoint_says_it_was_trained_on_chinese():
    # recorded by training/record_training_profile.py from its targets, checked against its training-source fingerprint
    meta = read_meta(REPO / "checkpoints" / "metric-avg-e5").as_dict()
    check_meta(meta, where="meta")
    assert meta["training_languages"]["sources"] == meta["training_sources"]["count"] == 1866
    assert max(meta["training_languages"]["shares"], key=meta["training_languages"]["shares"].get) == "zh"
    message = unseen_language_warning(language_profile(HINDI), meta["training_languages"])
    assert message is not None and "it was trained on zh (" in message and "(hi 100 %)" in message


def _record_training_profile():
    import importlib.util

    script = REPO / "training" / "record_training_profile.py"
    spec = importlib.util.spec_from_file_location("record_training_profile", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_record_languages_writes_only_for_the_sources_it_was_trained_on(chinese_checkpoint, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(chinese_checkpoint, old)
    meta = json.loads((old / "precomet.json").read_text())
    recorded = meta.pop("training_languages")
    del meta["training_domains"]
    (old / "precomet.json").write_text(json.dumps(meta))
    rows = _chinese_rows()  # what chinese_checkpoint was trained on
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text("".join(json.dumps(r) + "\n" for r in rows[:-1]))  # one training source short
    with pytest.raises(SystemExit, match="not the .* this checkpoint was trained on"):
        _record_training_profile().record(old, wrong)
    assert "training_languages" not in json.loads((old / "precomet.json").read_text())
    right = tmp_path / "right.jsonl"
    right.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _record_training_profile().record(old, right)
    written = json.loads((old / "precomet.json").read_text())
    assert written["training_languages"]["counts"] == recorded["counts"]
    assert {k: v for k, v in written.items() if not k.startswith("training_")} == {
        k: v for k, v in meta.items() if not k.startswith("training_")
    }


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("training_languages", ["zh"], "training_languages"),
        ("training_languages", {"counts": {"zh": -1}}, "training_languages.counts"),
        ("training_languages", {"counts": {"zh": 3}, "sample": 2.5}, "training_languages.sample"),
        ("training_languages", {"counts": {"zh": 3}, "shares": {"zh": 3}}, "training_languages.shares"),
        ("training_domains", {"news": "many"}, "training_domains"),
    ],
)
def test_recorded_fields_are_validated_when_present(field, value, named):
    meta = read_meta(REPO / "checkpoints" / "metric-avg-e5").as_dict()
    check_meta({**meta, "training_languages": _profile({"zh": 3}), "training_domains": None}, where="m")  # valid
    with pytest.raises(PrecometError, match=f"field '{named}'"):
        check_meta({**meta, field: value}, where="ck/precomet.json")


# ---------------------------------------------------------------------------------------------- a trained checkpoint
_WORDS = [
    "我们",
    "今天",
    "公园",
    "散步",
    "天气",
    "很好",
    "学生",
    "老师",
    "学习",
    "中文",
    "喜欢",
    "北京",
    "朋友",
    "吃饭",
]


def _chinese_rows(n: int = 48) -> list[dict]:
    rng = random.Random(7)
    rows = []
    for i in range(n):
        src = "".join(rng.choice(_WORDS) for _ in range(rng.randint(5, 12))) + f"第{i}次。"
        rows.append(
            {
                "src": src,
                "target": rng.gauss(0, 1),
                "campaign": "wmt22/zh-en",
                "doc": f"d{i // 4}",
                "id": str(i),
                "domain": "news" if i % 3 else "social",
                "method": "metric_avg",
                "normalisation": "zscore",
            }
        )
    return rows


@pytest.fixture(scope="module")
def chinese_checkpoint(tmp_path_factory) -> Path:
    """An estimator on the tiny offline encoder, trained one epoch on Chinese sources only."""
    from precomet.estimator import train
    from precomet.estimator.tiny import build_tiny_encoder

    work = tmp_path_factory.mktemp("languages")
    rows = _chinese_rows()
    encoder = build_tiny_encoder(work / "encoder", texts=[r["src"] for r in rows] + GERMAN, seed=0)
    train(
        rows,
        out_dir=work / "ckpt",
        config=REPO / "configs" / "tiny.yaml",
        overrides={"model.backbone": str(encoder), "trainer.max_epochs": 1},
        progress=False,
    )
    return work / "ckpt"


@pytest.fixture
def german_file(tmp_path) -> Path:
    path = tmp_path / "german.txt"
    path.write_text("\n".join(GERMAN) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow
def test_checkpoint_records_training_languages_and_domains(chinese_checkpoint):
    meta = read_meta(chinese_checkpoint).as_dict()
    profile = meta["training_languages"]
    assert profile["counts"] == {"zh": 48} and profile["shares"] == {"zh": 1.0}
    assert profile["sources"] == profile["sample"] == 48  # training and dev sources, all identified
    assert meta["training_domains"] == {"news": 32, "social": 16}


@pytest.mark.slow
def test_select_checkpoint_on_german_warns_naming_the_trained_languages(chinese_checkpoint, german_file, caplog):
    out = german_file.with_name("subset.jsonl")
    args = ["select", "--checkpoint", str(chinese_checkpoint), "--data", str(german_file), "--budget", "1"]
    with caplog.at_level(logging.WARNING):
        assert main([*args, "-o", str(out)]) == 0
    warned = [r.getMessage() for r in caplog.records if r.name == "precomet.estimator.languages"]
    assert warned == [
        f"100 % of the sources scored by checkpoint {chinese_checkpoint} (de 100 %) are in languages it was never"
        " trained on; it was trained on zh (100 %), so its utilities there are untested"
    ]
    parameters = json.loads(out.with_suffix(".manifest.json").read_text())["parameters"]
    assert parameters["source_languages"]["counts"] == {"de": 3}
    caplog.clear()  # Chinese sources: nothing to say
    chinese = german_file.with_name("chinese.txt")
    chinese.write_text("\n".join(CHINESE) + "\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert main([*args[:4], str(chinese), *args[5:], "-o", str(out.with_name("zh.jsonl"))]) == 0
    assert not [r for r in caplog.records if r.name == "precomet.estimator.languages"]


@pytest.mark.slow
def test_predict_warns_and_signs_the_source_languages(chinese_checkpoint, german_file, caplog):
    out = german_file.with_name("predicted.jsonl")
    with caplog.at_level(logging.WARNING):
        assert (
            main(["predict", "--checkpoint", str(chinese_checkpoint), "--data", str(german_file), "-o", str(out)]) == 0
        )
    assert "(de 100 %) are in languages it was never trained on; it was trained on zh (100 %)" in caplog.text
    signature = json.loads(out.read_text().splitlines()[0])["signature"]
    assert signature["source_languages"]["counts"] == {"de": 3} and signature["source_languages"]["sample"] == 3


@pytest.mark.slow
def test_checkpoint_without_the_record_loads_and_says_so(chinese_checkpoint, german_file, tmp_path, caplog):
    old = tmp_path / "old"
    shutil.copytree(chinese_checkpoint, old)
    meta = json.loads((old / "precomet.json").read_text())
    del meta["training_languages"], meta["training_domains"]
    (old / "precomet.json").write_text(json.dumps(meta))
    out = tmp_path / "subset.jsonl"
    with caplog.at_level(logging.WARNING):
        args = ["select", "--checkpoint", str(old), "--data", str(german_file), "--budget", "1", "-o", str(out)]
        assert main(args) == 0
    warned = [r.getMessage() for r in caplog.records if r.name == "precomet.estimator.languages"]
    assert warned == [
        f"checkpoint {old} does not record its training languages; it was trained on wmt22/zh-en; the languages of"
        " the sources scored: de 100 %"
    ]


@pytest.mark.slow
def test_the_warning_reaches_stderr(chinese_checkpoint, german_file):
    out = german_file.with_name("subset.jsonl")
    env = {**os.environ, "PRECOMET_PROGRESS": "0"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "precomet",
            "select",
            "--checkpoint",
            str(chinese_checkpoint),
            "--data",
            str(german_file),
        ]
        + ["--budget", "1", "-o", str(out)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "WARNING precomet.estimator.languages: 100 % of the sources scored by checkpoint" in done.stderr
    assert "it was trained on zh (100 %)" in done.stderr and "it was trained on" not in done.stdout
