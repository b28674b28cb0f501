"""Waves replayed on a real campaign: the guaranteed rule's calibration and the weighted estimates at the stop."""

from __future__ import annotations

import numpy as np
import pytest

from precomet.campaign import HUMAN, source_length
from precomet.io import load
from precomet.utilities import compute_utility
from precomet.waves.choosers import make_chooser, metric_features
from precomet.waves.plan import parse_wave_size
from precomet.waves.replay import fewer_than, replay
from precomet.waves.step import WaveSettings


@pytest.mark.slow
def test_on_wmt23_en_de_the_guaranteed_stop_is_calibrated_and_learning_spends_fewer_cells_than_random(raw_data):
    campaign = load(raw_data / "mt-metrics-eval-v2", campaign="wmt23/en-de", human="mqm")
    truth, metric = campaign.score(HUMAN), campaign.score("MetricX-23-c")
    length = source_length(campaign.src)
    prior = compute_utility(campaign, "metric_var", metric="MetricX-23-c")
    settings = WaveSettings(size=parse_wave_size("5%", len(campaign)))
    common = {"doc": campaign.doc, "cost": campaign.cost, "runs": 40, "metric": metric}
    random = replay(truth, lambda: make_chooser("random", length), settings, **common)
    learn = replay(
        truth, lambda: make_chooser("learn", length, prior=prior, features=metric_features(metric)), settings, **common
    )
    for result in (random, learn):
        summary = result.summary()
        assert summary["reached_target"] >= 0.9, summary
        assert summary["cells_share"]["median"] < 1.0
    assert np.median(learn.cell_shares()) < np.median(random.cell_shares())
    assert fewer_than(learn.cell_shares(), random.cell_shares()) < 0.05
