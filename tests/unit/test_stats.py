"""precomet.stats equals its scipy counterparts exactly (they replace scipy.stats on the common paths)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import rankdata as scipy_rankdata

from precomet.stats import normal_cdf, rankdata, t_quantile


def test_rankdata_hand_computed():
    assert rankdata([3.0, 1.0, 3.0, 2.0]).tolist() == [3.5, 1.0, 3.5, 2.0]
    assert rankdata([[1, 1], [2, 0]], axis=1).tolist() == [[1.5, 1.5], [2.0, 1.0]]
    assert rankdata([]).tolist() == []


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_rankdata_equals_scipy_bit_for_bit(seed, axis):
    rng = np.random.default_rng(seed)
    shape = (int(rng.integers(1, 40)), int(rng.integers(1, 15)))
    values = rng.integers(0, 6, shape) * 0.5 if seed % 2 else rng.normal(size=shape)  # many ties / none
    ours, theirs = rankdata(values, axis=axis), scipy_rankdata(values, axis=axis)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    assert np.array_equal(ours, theirs)


def test_rankdata_nan_propagates_per_slice_like_scipy():
    values = np.array([[1.0, np.nan, 2.0], [3.0, 3.0, 1.0]])
    for axis in (None, 0, 1):
        assert np.array_equal(rankdata(values, axis=axis), scipy_rankdata(values, axis=axis), equal_nan=True)


def test_rankdata_three_dimensions_and_empty_axis():
    values = np.random.default_rng(0).integers(0, 4, (3, 5, 4)).astype(float)
    for axis in (None, 0, 1, 2):
        assert np.array_equal(rankdata(values, axis=axis), scipy_rankdata(values, axis=axis))
    assert rankdata(np.zeros((3, 0)), axis=1).shape == (3, 0)


def test_benchmark_interval_uses_the_student_t_quantile_of_scipy_stats():
    from scipy.stats import t

    from precomet.benchmark import ci90

    for n in (2, 3, 10, 100, 1000):
        values = np.random.default_rng(n).normal(size=n)
        half = t.ppf(0.95, n - 1) * values.std(ddof=1)
        assert ci90(values) == pytest.approx((values.mean() - half, values.mean() + half), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("df", [*range(1, 41), 99, 100, 199, 999, 1000, 1001, 5000, 10_000, 100_000, 10**7])
def test_t_quantile_equals_scipy(df):
    from scipy.special import stdtrit

    for p in (0.001, 0.01, 0.05, 0.1, 0.3, 0.7, 0.9, 0.95, 0.975, 0.99, 0.999):
        assert t_quantile(p, df) == pytest.approx(stdtrit(df, p), rel=1e-10)


def test_t_quantile_hand_computed():
    assert t_quantile(0.5, 7) == 0.0
    assert t_quantile(0.75, 1) == pytest.approx(1.0, rel=1e-14)  # Cauchy: tan(π/4)
    assert t_quantile(0.975, 2) == pytest.approx(4.302652729749464, rel=1e-13)  # (2p−1)/√(2p(1−p)) for df 2
    assert t_quantile(0.95, 99) == pytest.approx(1.6603911560169906, rel=1e-13)
    with pytest.raises(ValueError, match="whole number"):
        t_quantile(0.95, 2.5)
    with pytest.raises(ValueError, match="0 < p < 1"):
        t_quantile(1.0, 3)


def test_normal_cdf_equals_scipy_ndtr():
    from scipy.special import ndtr

    x = np.concatenate([np.linspace(-40, 40, 2001), [np.inf, -np.inf, np.nan, 0.0, -0.0]])
    ours = normal_cdf(x)
    assert ours.dtype == np.float64 and ours.shape == x.shape
    np.testing.assert_allclose(ours, ndtr(x), rtol=1e-12, atol=1e-300)  # scipy flushes the deepest tail to 0
    assert normal_cdf(np.zeros((2, 3))).shape == (2, 3) and normal_cdf(1.0).shape == ()
