import numpy as np
import pytest

from sentinel.analysis.fits import MatchFit, fit_matching, queue_model
from sentinel.errors import SentinelError

NS = [1, 10, 20, 30, 40, 45, 50, 60, 70, 80, 90]


def diffs(m, legs, offset=0.0, noise=0.0, seed=1):
    rng = np.random.default_rng(seed)
    return [offset + legs * n * (n - 1) / 2 * m + rng.normal(0, noise) for n in NS]


def test_recovers_table36_indy_value_exactly():
    fit = fit_matching(NS, diffs(0.061953, 2, offset=0.4), legs=2)
    assert fit.m_us == pytest.approx(0.061953, rel=1e-9)
    assert fit.intercept_us == pytest.approx(0.4)
    assert fit.r2 == pytest.approx(1.0)
    assert fit.resolved
    lo, hi = fit.interval_us
    assert lo == pytest.approx(0.061953) and hi == pytest.approx(0.061953)


def test_noise_lowers_r2_and_flat_diff_is_not_resolved():
    noisy = fit_matching(NS, diffs(0.001, 2, noise=5.0), legs=2)
    assert noisy.r2 < 0.5 and not noisy.resolved
    assert noisy.describe("tag").startswith("tag M < ")
    flat = fit_matching(NS, diffs(0.0, 2, offset=1.0, noise=0.01), legs=2)
    assert abs(flat.m_us) < 1e-5 and not flat.resolved
    # bounded: 0.01 us of noise over n <= 90 leaves M < about 0.003 ns
    assert flat.no_search_cost and flat.interval_us[0] < 0 < flat.interval_us[1]


def test_legs_divide_the_slope():
    one = fit_matching(NS, diffs(0.02, 1), legs=1)
    two = fit_matching(NS, diffs(0.02, 2), legs=2)
    assert one.m_us == pytest.approx(two.m_us)


def test_too_few_sizes_is_an_error():
    with pytest.raises(SentinelError, match="need at least 3 distinct batch sizes"):
        fit_matching([1, 2], [0.0, 0.1], legs=2)


def fit(m, stderr=1e-4):
    return MatchFit(m, 0.0, 0.99, stderr, 11)


@pytest.mark.parametrize("tag,comm,model", [
    (fit(0.0366), fit(0.0236), "shared"),          # Blue Gene/Q, Table 36
    (fit(0.0167), fit(0.0056), "inconclusive"),    # HECToR: ratio 0.33
    (fit(0.0620), fit(0.0151), "per-communicator"),  # INDY: ratio 0.24
    (fit(0.001), fit(-0.0001), "per-communicator"),
    (fit(0.001, stderr=0.01), fit(0.001), "inconclusive"),  # tag cost not measurable
    # hashed queues: both M bounded far below any list search
    (fit(1e-6, stderr=5e-6), fit(-2e-6, stderr=5e-6), "no per-message search cost"),
    (fit(1e-6, stderr=5e-6), None, "no per-message search cost"),
    (fit(0.0366), None, "inconclusive"),           # a search cost, communicators unknown
])
def test_queue_model(tag, comm, model):
    found, evidence = queue_model(tag, comm)
    assert found == model
    assert evidence.startswith("tag M ")


def test_a_line_of_three_points_or_more_carries_its_intervals():
    from sentinel.analysis.fits import linear_fit

    exact = linear_fit([2, 4], [3.0, 7.0])  # two points: exact, no interval of its own
    assert (exact.slope, exact.intercept) == pytest.approx((2.0, -1.0))
    assert exact.slope_interval is None and exact.intercept_interval is None
    # t = 5 + 2 N with residuals of 0.1: both intervals tight around the truth
    fit = linear_fit([2, 4, 8, 16, 32], [9.1, 12.9, 21.1, 36.9, 69.1])
    lo, hi = fit.slope_interval
    assert lo < 2.0 < hi and hi - lo < 0.1
    lo, hi = fit.intercept_interval
    assert lo < 5.0 < hi and lo > 0


@pytest.mark.parametrize("n, exact", [(3, 0.75), (5, 0.9375), (6, 0.96875), (10, 0.978515625)])
def test_the_median_intervals_coverage_is_exact_and_holds_for_a_skewed_distribution(n, exact):
    from sentinel.analysis.fits import median_coverage, median_interval

    assert median_coverage(n) == pytest.approx(exact)
    # 20000 samples of n from an exponential (median ln 2): the interval holds
    # it as often as stated, within the simulation's own spread
    rng = np.random.default_rng(7)
    draws = rng.exponential(size=(20000, n))
    held = sum(lo <= np.log(2) <= hi for lo, hi in map(median_interval, draws))
    assert held / 20000 == pytest.approx(exact, abs=0.01)


def test_values_say_the_coverage_of_an_interval_that_is_not_95_percent():
    from sentinel.analysis.jacobi import SPEC
    from sentinel.analysis.variables import Values

    values = Values(SPEC)
    values.put("mlups_N{n}", 10.0, (9.0, 11.0), 0.75, n=2)
    values.put("mlups_N{n}", 20.0, (19.0, 21.0), n=4)
    assert values.coverage == {"mlups_N2": 0.75}
    values.unresolve("mlups_N2", "test")
    assert values.coverage == {}
