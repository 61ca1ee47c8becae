"""The declaration's judgement of what can be a measurement."""

from sentinel.analysis import matching, pt2pt


def test_times_and_rates_must_be_positive():
    var = pt2pt.SPEC.var("fit_lambda")
    assert var.implausible(0.5) == ""
    assert var.implausible(-0.2).startswith("-0.2 us is not positive")
    assert var.implausible(0.0).startswith("0 us is not positive")
    assert var.implausible(float("nan")) == "nan is not a number"


def test_a_difference_may_be_negative():
    assert matching.SPEC.var("diff_{alg}").implausible(-1.3) == ""


def test_plausible_ranges_of_a_transport():
    lat, bw = pt2pt.SPEC.var("latency_{size}B"), pt2pt.SPEC.var("bw_peak")
    assert lat.implausible(0.001) == "0.001 us is below 0.01 us, the plausible floor"
    assert bw.implausible(2.0e7) == "2e+07 MB/s is above 1e+07 MB/s, the plausible ceiling"


def test_values_keep_the_unresolved_apart():
    values = pt2pt.Values(pt2pt.SPEC)
    values.put("logp_{param}", -0.3, param="L_classic")
    values.put("logp_{param}", 0.4, param="L")
    assert dict(values) == {"logp_L": (0.4, "us")}
    assert list(values.unresolved) == ["logp_L_classic"]

