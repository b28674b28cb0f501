"""Estimator end to end on a tiny random-init XLM-R built offline: CLI training, export, load, predict.
Fast unit tests without a Trainer are in test_estimator_units.py."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from precomet.cli import main
from precomet.errors import PrecometError
from precomet.estimator.targets import write_targets
from precomet.simulate import simulate_history
from tests.conftest import history_rows

pytestmark = pytest.mark.slow  # one Lightning training run shared by the file (~15-40 s on 2 busy cores)
REPO = Path(__file__).resolve().parents[2]


def _rows() -> list[dict]:
    return history_rows(n_campaigns=3, n_items=40, n_systems=4, seed=3, normalisation="none")


@pytest.fixture(scope="session")
def tiny_encoder(tmp_path_factory) -> Path:
    from precomet.estimator.tiny import build_tiny_encoder

    return build_tiny_encoder(tmp_path_factory.mktemp("tiny") / "encoder", texts=[r["src"] for r in _rows()], seed=0)


@pytest.fixture(scope="session")
def trained(tmp_path_factory, tiny_encoder) -> dict:
    """``precomet train --config configs/tiny.yaml`` for 2 epochs on CPU (the one Trainer run of this file)."""
    work = tmp_path_factory.mktemp("trained")
    rows = _rows()
    write_targets(rows, work / "targets.jsonl")
    status = main(
        [
            "train",
            "--config",
            str(REPO / "configs" / "tiny.yaml"),
            "--model.backbone",
            str(tiny_encoder),
            "--train",
            str(work / "targets.jsonl"),
            "-o",
            str(work / "ckpt"),
            "--trainer.max_epochs",
            "2",
        ]
    )
    assert status == 0
    return {"dir": work / "ckpt", "rows": rows, "work": work}


def test_checkpoint_directory_format(trained):
    ckpt = trained["dir"]
    for name in (
        "precomet.json",
        "head.safetensors",
        "encoder/config.json",
        "encoder/model.safetensors",
        "encoder/tokenizer.json",
    ):
        assert (ckpt / name).is_file(), name
    meta = json.loads((ckpt / "precomet.json").read_text())
    assert meta["format_version"] == 1 and meta["direction"] == "higher_first"
    assert meta["target"]["method"] == "neg_avg"
    assert meta["config"]["trainer"]["max_epochs"] == 2  # the CLI override reached the config
    assert len(meta["history"]) == 2 and "val_pearson" in meta["dev_metrics"]
    data = meta["training_data"]
    assert data["rows"] + data["dev_rows"] == len(trained["rows"]) and data["dev_rows"] > 0
    y = np.array([r["target"] for r in trained["rows"]])
    assert y.min() < meta["standardisation"]["mean"] < y.max()


def test_export_load_predict_identical(trained, tmp_path):
    from precomet.estimator import load_estimator, predict_sources

    ckpt = trained["dir"]
    (best,) = (ckpt / "lightning").glob("best-*.ckpt")
    assert main(["export", str(best), "-o", str(tmp_path / "exported")]) == 0
    sources = [r["src"] for r in trained["rows"][:30]]
    a = predict_sources(ckpt, sources)
    b = predict_sources(tmp_path / "exported", sources)
    np.testing.assert_allclose(a, b, atol=1e-6)
    # in-memory estimator from the .ckpt weights gives the same numbers
    estimator = load_estimator(tmp_path / "exported")
    assert not estimator.model.training
    np.testing.assert_allclose(predict_sources(estimator, sources), a, atol=1e-6)
    assert np.isfinite(a).all() and np.ptp(a) > 0


def test_predictions_invariant_to_order_and_batch_size(trained):
    from precomet.estimator import load_estimator, predict_sources

    estimator = load_estimator(trained["dir"])
    sources = [r["src"] for r in trained["rows"][:25]]
    reference = predict_sources(estimator, sources, batch_size=64)
    perm = np.random.default_rng(0).permutation(len(sources))
    for batch_size in (1, 3, 7):
        shuffled = predict_sources(estimator, [sources[i] for i in perm], batch_size=batch_size)
        np.testing.assert_allclose(shuffled, reference[perm], atol=1e-5)


def test_predict_cli_text_file_ids_are_line_numbers_and_blank_lines_refused(trained, tmp_path, capsys):
    text = tmp_path / "sources.txt"
    text.write_text("the cat sat on a mat\nnotwithstanding jurisprudence\n")
    out = tmp_path / "scores.jsonl"
    assert main(["predict", "--checkpoint", str(trained["dir"]), "--data", str(text), "-o", str(out)]) == 0
    signature, *lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert signature["signature"]["method"] == "estimator" and signature["signature"]["n_items"] == 2
    assert [line["id"] for line in lines] == ["1", "2"]  # 1-based line numbers, as every command reads .txt
    assert all(np.isfinite(line["utility"]) for line in lines)
    text.write_text("the cat sat on a mat\n\nnotwithstanding jurisprudence\n   \n")
    blank = tmp_path / "blank.jsonl"
    assert main(["predict", "--checkpoint", str(trained["dir"]), "--data", str(text), "-o", str(blank)]) == 2
    assert f"{text}:2: blank line" in capsys.readouterr().err and not blank.exists()


def test_predict_takes_the_docs_and_domains_select_takes_on_the_same_file(trained, tmp_path, capsys):
    text = tmp_path / "sources.txt"
    text.write_text("the cat sat on a mat\nnotwithstanding jurisprudence\n")
    (tmp_path / "docs.txt").write_text("d1\nd2\n")
    (tmp_path / "domains.txt").write_text("news\n")
    out = tmp_path / "scores.jsonl"
    base = ["predict", "--checkpoint", str(trained["dir"]), "--data", str(text), "--docs", str(tmp_path / "docs.txt")]
    assert main([*base, "-o", str(out)]) == 0
    assert json.loads(out.read_text().splitlines()[0])["signature"]["docs"] == str(tmp_path / "docs.txt")
    assert main([*base, "--domains", str(tmp_path / "domains.txt"), "-o", str(tmp_path / "b.jsonl")]) == 2
    assert "1 lines, but" in capsys.readouterr().err and not (tmp_path / "b.jsonl").exists()
    jsonl = tmp_path / "sources.jsonl"
    jsonl.write_text('{"id": "a", "src": "x"}\n')
    argv = ["predict", "--checkpoint", str(trained["dir"]), "--data", str(jsonl), "--docs", str(tmp_path / "docs.txt")]
    assert main([*argv, "-o", str(tmp_path / "c.jsonl")]) == 2
    assert "--docs applies to plain-text sources" in capsys.readouterr().err


def test_predict_campaign_matches_sources(trained):
    from precomet.estimator import predict_campaign, predict_sources

    campaign = simulate_history(n_campaigns=1, n_items=12, n_systems=3, seed=9)[0]
    np.testing.assert_allclose(
        predict_campaign(trained["dir"], campaign), predict_sources(trained["dir"], list(campaign.src)), atol=1e-6
    )


def test_overlong_sources_truncated_and_counted(trained, caplog):
    from precomet.estimator import predict_sources

    long = " ".join(["notwithstanding photosynthesis"] * 200)
    with caplog.at_level(logging.WARNING, logger="precomet.estimator.data"):
        values = predict_sources(trained["dir"], [long, "the cat", long + " dog"])
    assert np.isfinite(values).all()
    assert "2 of 3 sources are longer than max_length=64 tokens" in caplog.text


@pytest.mark.parametrize("sources, message", [([], "no sources"), (["a cat", "  "], "empty source at position 1")])
def test_empty_sources_rejected(trained, sources, message):
    from precomet.estimator import predict_sources

    with pytest.raises(PrecometError, match=message):
        predict_sources(trained["dir"], sources)


@pytest.mark.parametrize("missing", ["precomet.json", "head.safetensors", "encoder/model.safetensors"])
def test_checkpoint_missing_file(trained, tmp_path, missing):
    from precomet.estimator import load_estimator

    copy = shutil.copytree(trained["dir"], tmp_path / "ckpt", ignore=shutil.ignore_patterns("lightning"))
    (copy / missing).unlink()
    with pytest.raises(PrecometError, match="missing"):
        load_estimator(copy)


def test_checkpoint_unknown_format_version(trained, tmp_path):
    from precomet.estimator import load_estimator

    copy = shutil.copytree(trained["dir"], tmp_path / "ckpt", ignore=shutil.ignore_patterns("lightning"))
    meta = json.loads((copy / "precomet.json").read_text())
    (copy / "precomet.json").write_text(json.dumps({**meta, "format_version": 99}))
    with pytest.raises(PrecometError, match="unknown format_version 99"):
        load_estimator(copy)


def test_export_refuses_foreign_file(tmp_path):
    from precomet.estimator import export_checkpoint

    bad = tmp_path / "x.ckpt"
    torch.save({"state_dict": {}}, bad)
    with pytest.raises(PrecometError, match="not written by precomet train"):
        export_checkpoint(bad, tmp_path / "out")


def test_export_refuses_the_folder_holding_its_ckpt_and_leaves_it_alone(tmp_path):
    """``export_checkpoint(RUN/lightning/best.ckpt, RUN)`` from Python would replace RUN, the .ckpt with it."""
    from precomet.estimator import export_checkpoint

    ckpt = tmp_path / "run" / "lightning" / "best-epoch=0.ckpt"
    ckpt.parent.mkdir(parents=True)
    ckpt.write_bytes(b"weights")
    with pytest.raises(PrecometError, match="would replace the input"):
        export_checkpoint(ckpt, tmp_path / "run")
    assert ckpt.read_bytes() == b"weights"


def test_int8_predictions_close_to_fp32_and_input_untouched(trained, tmp_path):
    from precomet.estimator import load_estimator, predict_sources

    estimator = load_estimator(trained["dir"])
    before = {k: v.clone() for k, v in estimator.model.state_dict().items()}
    sources = [r["src"] for r in trained["rows"][:40]]
    fp32 = predict_sources(estimator, sources)
    int8 = predict_sources(estimator, sources, precision="int8")
    assert not np.array_equal(fp32, int8)  # quantised for real
    assert np.corrcoef(fp32, int8)[0, 1] > 0.9
    assert all(torch.equal(v, estimator.model.state_dict()[k]) for k, v in before.items())
    np.testing.assert_allclose(predict_sources(estimator, sources), fp32, atol=1e-6)
    out = tmp_path / "scores.jsonl"
    text = tmp_path / "sources.txt"
    text.write_text("\n".join(sources[:5]) + "\n")
    assert (
        main(
            ["predict", "--checkpoint", str(trained["dir"]), "--data", str(text), "--precision", "int8", "-o", str(out)]
        )
        == 0
    )
    assert json.loads(out.read_text().splitlines()[0])["signature"]["precision"] == "int8"


@pytest.mark.parametrize(
    "options, message",
    [
        ({"precision": "fp16"}, "unknown precision 'fp16'"),
        (
            {"precision": "int8", "device": "cuda"},
            "int8 runs on CPU only" if torch.cuda.is_available() else "device=cuda: (this torch build has )?no CUDA",
        ),
    ],
)
def test_bad_precision_rejected(trained, options, message):
    from precomet.estimator import predict_sources

    with pytest.raises(PrecometError, match=message):
        predict_sources(trained["dir"], ["a cat"], **options)


def test_lightning_predict_one_device_matches_plain_path(trained, tmp_path):
    from precomet.estimator import load_estimator, predict_sources

    estimator = load_estimator(trained["dir"])
    sources = [r["src"] for r in trained["rows"][:23]]
    plain = predict_sources(estimator, sources, batch_size=4)
    lightning = predict_sources(estimator, sources, batch_size=4, devices=1, accelerator="cpu")
    np.testing.assert_allclose(lightning, plain, atol=1e-6)
    text, out = tmp_path / "sources.txt", tmp_path / "scores.jsonl"
    text.write_text("\n".join(sources) + "\n")
    assert (
        main(
            [
                "predict",
                "--checkpoint",
                str(trained["dir"]),
                "--data",
                str(text),
                "--batch-size",
                "4",
                "--devices",
                "1",
                "--accelerator",
                "cpu",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    cli = [json.loads(line)["utility"] for line in out.read_text().splitlines()[1:]]
    np.testing.assert_allclose(cli, plain, atol=1e-6)


def test_lightning_predict_two_processes_ddp_spawn_in_input_order(trained):
    """gloo on CPU: 23 sources in batches of 2, steps of 8 batches -> one step per rank, the second one short
    (padded for the all-gather); input order kept."""
    from precomet.estimator import load_estimator, predict_sources

    estimator = load_estimator(trained["dir"])
    sources = [r["src"] for r in trained["rows"][:23]]
    plain = predict_sources(estimator, sources, batch_size=2)
    spawned = predict_sources(estimator, sources, batch_size=2, devices=2, accelerator="cpu", strategy="ddp_spawn")
    np.testing.assert_allclose(spawned, plain, atol=1e-6)


@pytest.mark.parametrize(
    "options, message",
    [({"strategy": "ddp"}, "need devices"), ({"devices": 1, "precision": "int8"}, "single-device path only")],
)
def test_lightning_predict_bad_options(trained, options, message):
    from precomet.estimator import predict_sources

    with pytest.raises(PrecometError, match=message):
        predict_sources(trained["dir"], ["a cat"], **options)


# ---------------------------------------------------------------- training-source fingerprint (leakage guard)
def test_checkpoint_fingerprint_covers_train_and_dev_sources(trained):
    from precomet.estimator import load_estimator
    from precomet.estimator.leakage import fingerprint_in

    fingerprint = fingerprint_in(load_estimator(trained["dir"]).meta, where="test")
    sources = [r["src"] for r in trained["rows"]]
    assert fingerprint.contains(sources).all() and len(fingerprint) == len({s.casefold() for s in sources})
    assert not fingerprint.contains(["a sentence no simulated campaign contains, surely"]).any()


def _simulated_campaign_file(tmp_path: Path) -> Path:
    from precomet.io import write_jsonl

    campaign = simulate_history(n_campaigns=3, n_items=40, n_systems=4, seed=3)[0]  # the first training campaign
    write_jsonl(campaign, tmp_path / "seen.jsonl")
    return tmp_path / "seen.jsonl"


def test_predict_counts_training_sources_and_strict_refuses(trained, tmp_path, caplog):
    data = _simulated_campaign_file(tmp_path)
    out = tmp_path / "pred.jsonl"
    with caplog.at_level(logging.WARNING):
        assert main(["predict", "--checkpoint", str(trained["dir"]), "--data", str(data), "-o", str(out)]) == 0
    assert "40 of 40 sources scored by checkpoint" in caplog.text
    signature = json.loads(out.read_text().splitlines()[0])["signature"]
    assert signature["seen_in_training"] == 40 and signature["training_sources"]["count"] > 0
    strict = tmp_path / "strict.jsonl"
    assert (
        main(["predict", "--checkpoint", str(trained["dir"]), "--data", str(data), "--strict", "-o", str(strict)]) == 2
    )
    assert not strict.exists()


def test_select_and_benchmark_report_seen_sources(trained, tmp_path, caplog, capsys):
    data = _simulated_campaign_file(tmp_path)
    subset = tmp_path / "subset.jsonl"
    assert (
        main(
            [
                "select",
                "--data",
                str(data),
                "--checkpoint",
                str(trained["dir"]),
                "--budget",
                "5",
                "--strict",
                "-o",
                str(subset),
            ]
        )
        == 2
    )
    assert "40 of 40 sources" in capsys.readouterr().err and not subset.exists()
    assert (
        main(["select", "--data", str(data), "--checkpoint", str(trained["dir"]), "--budget", "5", "-o", str(subset)])
        == 0
    )
    assert json.loads(subset.with_suffix(".manifest.json").read_text())["parameters"]["seen_in_training"] == 40
    scores = tmp_path / "pred.jsonl"
    assert main(["predict", "--checkpoint", str(trained["dir"]), "--data", str(data), "-o", str(scores)]) == 0
    bench = tmp_path / "bench.json"
    common = [
        "benchmark",
        "--data",
        str(data),
        "--utility-file",
        f"est={scores}",
        "--seeds",
        "2",
        "--props",
        "0.2,0.4",
        "-o",
        str(bench),
    ]
    assert main([*common, "--strict"]) == 2 and not bench.exists()
    assert main(common) == 0
    assert json.loads(bench.read_text())["signature"]["seen_in_training"] == {"est": 40}


def test_explicit_dev_rows_take_their_sources_out_of_training(tmp_path, tiny_encoder, caplog):
    from precomet.estimator import train
    from precomet.estimator.leakage import normalise_source

    rows = _rows()
    train_rows, dev_rows = rows[:60], rows[50:70]  # ten rows on both sides
    dev_texts = {normalise_source(r["src"]) for r in dev_rows}
    expected = sum(normalise_source(r["src"]) not in dev_texts for r in train_rows)
    with caplog.at_level(logging.WARNING):
        train(
            train_rows,
            dev_rows=dev_rows,
            out_dir=tmp_path / "ckpt",
            config=REPO / "configs" / "tiny.yaml",
            overrides={"model.backbone": str(tiny_encoder), "trainer.max_epochs": 1},
            progress=False,
        )
    meta = json.loads((tmp_path / "ckpt" / "precomet.json").read_text())
    assert meta["training_data"]["rows"] == expected < 60 and meta["training_data"]["dev_rows"] == 20
    assert f"dropped {60 - expected} training rows" in caplog.text


def test_frozen_packaged_encoder_is_named_not_copied(tmp_path):
    from precomet.estimator import load_estimator, predict_sources, train

    rows = _rows()[:40]
    train(
        rows,
        out_dir=tmp_path / "ckpt",
        config=REPO / "configs" / "precomet-minilm.yaml",
        overrides={"trainer.max_epochs": 1, "trainer.accelerator": "cpu"},
        progress=False,
    )
    meta = json.loads((tmp_path / "ckpt" / "precomet.json").read_text())
    assert not (tmp_path / "ckpt" / "encoder").exists() and meta["encoder_package"]["name"] == "minilm"
    assert "encoder_path" not in meta and len(meta["encoder_package"]["weights_sha256"]) == 64
    values = predict_sources(load_estimator(tmp_path / "ckpt"), [r["src"] for r in rows[:5]])
    assert np.isfinite(values).all()


def test_interrupted_train_keeps_nothing_and_says_so(tiny_encoder, tmp_path, monkeypatch, capsys):
    """Lightning answers Ctrl-C with its own shutdown and ``sys.exit(1)``, after writing ``lightning/*.ckpt``:
    the command reports the interruption (exit 130), keeps no half-written checkpoint directory, and
    SIGINT handling is restored."""
    import signal
    import sys

    import pytorch_lightning as pl

    def fit(self, module, datamodule=None):
        folder = Path(self.checkpoint_callback.dirpath)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "best-epoch=0.ckpt").write_bytes(b"partial")
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # as Lightning does on an interrupt
        sys.exit(1)

    monkeypatch.setattr(pl.Trainer, "fit", fit)
    write_targets(_rows(), tmp_path / "targets.jsonl")
    handler = signal.getsignal(signal.SIGINT)
    status = main(
        [
            "train",
            "--config",
            str(REPO / "configs" / "tiny.yaml"),
            "--model.backbone",
            str(tiny_encoder),
            "--train",
            str(tmp_path / "targets.jsonl"),
            "-o",
            str(tmp_path / "out" / "ckpt"),
        ]
    )
    assert status == 130
    assert "interrupted; no output was written" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["targets.jsonl"]
    assert signal.getsignal(signal.SIGINT) is handler


def test_train_into_a_relative_folder(tiny_encoder, tmp_path, monkeypatch):
    """The checkpoint is built in a temporary folder and moved into place; Lightning reports absolute paths,
    the user gives a relative one (the demo's default ``demo-output``)."""
    from precomet.estimator.training import train

    monkeypatch.chdir(tmp_path)
    result = train(
        _rows(),
        out_dir="out/ckpt",
        config=REPO / "configs" / "tiny.yaml",
        overrides={"model.backbone": str(tiny_encoder), "trainer.max_epochs": 1},
    )
    assert result.checkpoint_dir == Path("out/ckpt") and (tmp_path / "out" / "ckpt" / "precomet.json").is_file()
    assert result.best_ckpt.is_file() and result.best_ckpt.parent == Path("out/ckpt/lightning")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["ckpt"]  # no temporary left beside it
