"""Parquet files and saved Hugging Face datasets as inputs (precomet.io.hf)."""

import math

import datasets
import numpy as np
import pytest

from precomet.campaign import HUMAN
from precomet.cli import main
from precomet.errors import CampaignError, DataError, PrecometError
from precomet.io import detect_format, list_campaigns, load, write_parquet
from precomet.io.hf import from_dataset, to_dataset


def _same(a, b):
    assert a.ids.tolist() == b.ids.tolist() and a.src.tolist() == b.src.tolist()
    assert a.systems == b.systems and a.doc.tolist() == b.doc.tolist() and a.domain.tolist() == b.domain.tolist()
    np.testing.assert_allclose(a.cost, b.cost)
    assert {s: list(t) for s, t in a.outputs.items()} == {s: list(t) for s, t in b.outputs.items()}
    assert sorted(a.scores) == sorted(b.scores)
    for name in a.scores:
        np.testing.assert_array_equal(a.scores[name], b.scores[name])


def _with_missing_score(campaign):
    human = campaign.score(HUMAN).copy()
    human[0, 1] = math.nan
    return campaign.with_scores(HUMAN, human)


def test_parquet_round_trip_keeps_missing_scores(tiny_campaign, tmp_path):
    campaign = _with_missing_score(tiny_campaign)
    path = tmp_path / "items.parquet"
    write_parquet(campaign, path)
    assert detect_format(path) == "parquet"
    back = load(path, complete=False)
    _same(campaign, back)
    assert back.name == "tiny"  # the items' campaign, as in JSONL (was the file's stem)
    assert math.isnan(back.score(HUMAN)[0, 1])


def test_saved_dataset_directory(tiny_campaign, tmp_path):
    to_dataset(tiny_campaign).save_to_disk(str(tmp_path / "tiny"))
    assert detect_format(tmp_path / "tiny") == "hf-dataset"
    _same(tiny_campaign, load(tmp_path / "tiny"))
    with pytest.raises(PrecometError, match="single campaign"):
        load(tmp_path / "tiny", campaign="test")


def test_saved_dataset_dict_splits_are_campaigns(tiny_campaign, tmp_path):
    other = tiny_campaign.take([2, 0])
    datasets.DatasetDict({"dev": to_dataset(other), "test": to_dataset(tiny_campaign)}).save_to_disk(
        str(tmp_path / "dd")
    )
    assert detect_format(tmp_path / "dd") == "hf-dataset-dict"
    assert list_campaigns(tmp_path / "dd") == ["dev", "test"]
    dev = load(tmp_path / "dd", campaign="dev")
    _same(other, dev)
    assert dev.name == "dev"
    with pytest.raises(PrecometError, match=r"needs a split.*\['dev', 'test'\]"):
        load(tmp_path / "dd")
    with pytest.raises(PrecometError, match="no split 'train'"):
        load(tmp_path / "dd", campaign="train")


def test_rows_are_validated_like_jsonl_items():
    rows = [
        {"id": "a", "src": "x", "scores": {"s": {"human": 1.0}}},
        {"id": "a", "src": "y", "scores": {"s": {"human": 2.0}}},
    ]
    with pytest.raises(CampaignError, match="duplicate"):
        from_dataset(rows)
    with pytest.raises(CampaignError, match=r"dataset\[1\]"):
        from_dataset([{"id": "a", "src": "x"}, {"src": "y"}])


def test_unreadable_parquet_names_the_file(tmp_path):
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"not parquet at all")
    with pytest.raises(DataError, match="broken.parquet.*Parquet"):
        load(path)


def test_convert_writes_parquet_that_select_reads(tiny_campaign, tmp_path, capsys):
    from precomet.io import write_jsonl

    write_jsonl(tiny_campaign, tmp_path / "items.jsonl")
    assert main(["convert", "--data", str(tmp_path / "items.jsonl"), "-o", str(tmp_path / "items.parquet")]) == 0
    _same(tiny_campaign, load(tmp_path / "items.parquet"))
    out = tmp_path / "subset.jsonl"
    assert (
        main(
            [
                "select",
                "--data",
                str(tmp_path / "items.parquet"),
                "--method",
                "metric_var",
                "--metric",
                "metric",
                "--budget",
                "2",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    assert len(out.read_text().splitlines()) == 2
