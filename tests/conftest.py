"""Shared fixtures: the network is blocked for every test; paths to ../shared data when present."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest

from precomet.campaign import HUMAN, Campaign
from precomet.encoders import SentenceEncoder, clear_embedding_cache
from precomet.simulate import simulate_history

pytest_plugins = ["tests.slow_guard"]  # CI fails on an unmarked test over 5 s

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TQDM_DISABLE", "1")

REPO = Path(__file__).resolve().parent.parent
RAW = Path(os.environ.get("PRECOMET_RAW_DATA", REPO.parent / "shared" / "data" / "raw"))
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def history_rows(*, n_campaigns: int, n_items: int, n_systems: int, seed: int, normalisation: str) -> list[dict]:
    """Estimator target rows from a simulated history: target = minus the item's mean human score."""
    rows = []
    for campaign in simulate_history(n_campaigns=n_campaigns, n_items=n_items, n_systems=n_systems, seed=seed):
        human = campaign.score(HUMAN).mean(axis=1)
        rows += [
            {
                "src": campaign.src[i],
                "target": float(-human[i]),
                "campaign": campaign.name,
                "doc": campaign.doc[i],
                "lp": campaign.lp,
                "id": campaign.ids[i],
                "method": "neg_avg",
                "normalisation": normalisation,
            }
            for i in range(len(campaign))
        ]
    return rows


def untimed_json(result) -> str:
    """``result.to_dict()`` as sorted JSON without its timings (keys ending in ``seconds``): what two runs that must
    agree are compared on."""

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if not k.endswith("seconds")}
        return [strip(v) for v in value] if isinstance(value, list) else value

    return json.dumps(strip(result.to_dict()), sort_keys=True)


def assert_unchanged(before, after, where="value"):
    """Deep equality of a deep copy taken before a call and the object after it (mappings, lists, tuples item by
    item, arrays by dtype, shape and values with NaN equal to NaN): the "never mutate the caller's data" check."""
    if isinstance(before, Mapping):
        assert isinstance(after, Mapping) and before.keys() == after.keys(), where
        for key in before:
            assert_unchanged(before[key], after[key], f"{where}[{key!r}]")
    elif isinstance(before, (list, tuple)):
        assert type(before) is type(after) and len(before) == len(after), where
        for i, (old, new) in enumerate(zip(before, after)):
            assert_unchanged(old, new, f"{where}[{i}]")
    elif isinstance(before, np.ndarray):
        assert isinstance(after, np.ndarray) and before.dtype == after.dtype and before.shape == after.shape, where
        assert np.array_equal(before, after, equal_nan=before.dtype.kind in "fc"), where
    else:
        assert before == after, where


@pytest.fixture(autouse=True)
def _block_network(monkeypatch):
    """Any attempt to open a non-local socket fails the test."""
    real_connect = socket.socket.connect

    def guarded(self, address):
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and (host.startswith("127.") or host in ("localhost", "::1") or host.startswith("/")):
            return real_connect(self, address)
        raise RuntimeError(f"network access blocked in tests: {address!r}")

    monkeypatch.setattr(socket.socket, "connect", guarded)
    monkeypatch.setattr(
        socket, "create_connection", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("network blocked"))
    )


@pytest.fixture(autouse=True)
def _fresh_embedding_cache(monkeypatch, tmp_path_factory):
    """Each test starts with an empty in-process embedding cache and a disk cache of its own (never the user's):
    tests stub encoders under shared names."""
    clear_embedding_cache()
    monkeypatch.setenv("PRECOMET_CACHE", str(tmp_path_factory.mktemp("encoder-cache")))


def pytest_collection_modifyitems(items):
    """Every test that reads ../shared/data/raw (the ``raw_data`` fixture, directly or through another fixture)
    carries the ``realdata`` marker, even where a new test forgot it: ``-m "not realdata"`` deselects them all."""
    for item in items:
        if "raw_data" in getattr(item, "fixturenames", ()) and item.get_closest_marker("realdata") is None:
            item.add_marker(pytest.mark.realdata)


@pytest.fixture
def raw_data() -> Path:
    """../shared/data/raw; the test is skipped (with the reason) when it is absent."""
    if not RAW.exists():
        pytest.skip(f"real data not found at {RAW} (set PRECOMET_RAW_DATA)")
    return RAW


@pytest.fixture
def tiny_campaign() -> Campaign:
    """4 items × 3 systems with hand-chosen scores (used for hand-computed expectations)."""
    return Campaign.build(
        ids=["a", "b", "c", "d"],
        src=["one two", "three four five", "six", "seven eight"],
        systems=["s1", "s2", "s3"],
        outputs={
            "s1": ["one two", "three four five", "six", "seven eight"],
            "s2": ["one too", "three for five", "six", "seven ate"],
            "s3": ["won two", "tree four fife", "six", "heaven eight"],
        },
        scores={
            HUMAN: [[1.0, 2.0, 3.0], [4.0, 4.0, 4.0], [0.0, 10.0, 5.0], [3.0, 1.0, 2.0]],
            "metric": np.array([[0.9, 0.5, 0.1], [0.8, 0.8, 0.2], [0.3, 0.9, 0.6], [0.5, 0.4, 0.3]]),
        },
        doc=["d1", "d1", "d2", "d2"],
        domain=["news", "news", "chat", "chat"],
        cost=[10.0, 20.0, 5.0, 15.0],
        name="tiny",
    )


def loaded_after(code: str) -> set[str]:
    """Names in ``sys.modules`` after running ``code`` in a fresh interpreter on this source tree (import checks)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env, cwd=REPO)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


class Counting(SentenceEncoder):
    """A fake encoder of 2-long vectors (length, count of 'a') that records every text it is asked to encode."""

    name = "counting"
    languages = "any"
    batch_size = 2

    def __init__(self) -> None:
        self.seen: list[str] = []

    @property
    def dim(self) -> int:
        return 2

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        self.seen += texts
        return np.array([[len(t), t.count("a")] for t in texts], dtype=float)


@pytest.fixture
def stub_sentence_encoder(monkeypatch):
    """The default encoder (``minilm``), and ``stub-a`` and ``stub-b``, replaced in the registry by deterministic
    384-d stubs; the returned list holds the number of texts of every encoding call (all stubs together)."""
    from precomet.encoders import ENCODERS, SentenceEncoder

    calls: list[int] = []

    def stub(stub_name: str):
        class Stub(SentenceEncoder):
            name = stub_name
            languages = "any"
            dim = 384

            def encode(self, texts, *, progress=None):
                calls.append(len(texts))
                return super().encode(texts, progress=progress)

            def _encode_batch(self, texts):
                rng = np.random.default_rng([len(t) for t in texts] or [0])
                vectors = rng.normal(size=(len(texts), 384)).astype(np.float32)
                return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

        return Stub

    for name in ("minilm", "stub-a", "stub-b"):
        monkeypatch.setitem(ENCODERS, name, stub(f"{name}-stub"))
    return calls
