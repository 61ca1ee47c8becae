import pytest

from sentinel.analysis.pt2pt import analyse, curves, logp
from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import parse, require_complete
from tests.conftest import DATA

# Real output of src/bench/pt2pt, Open MPI ob1-vader, 2 cores bound.
REAL = (DATA / "pt2pt_openmpi_ob1-vader.out").read_text()


def test_real_output_is_complete_with_every_metric():
    out = parse(REAL, "pt2pt")
    require_complete(out, "rfm_job.out")
    table = curves(out)
    assert set(table) == {("latency", m) for m in ("standard", "synchronous", "buffered",
                                                   "ready", "diffbuf")} | {
        ("unilatency", "standard"), ("bw", "standard"), ("bibw", "standard"),
        ("logp_g0", "standard"), ("logp_os", "standard"), ("logp_or", "standard")}
    assert max(table[("latency", "standard")]) == 1048576
    assert 0 not in table[("bw", "standard")]  # no bandwidth of empty messages


def test_values_curves_and_switches():
    values, switches = analyse(parse(REAL, "pt2pt"))
    assert values["latency_8B"] == (0.2066, "us")
    assert values["latency_synchronous_8B"][0] > values["latency_8B"][0]  # extra handshake
    assert values["bw_peak"][0] == max(v for k, (v, _) in values.items()
                                       if k.startswith("bw_") and k[3:-1].isdigit())
    assert values["bibw_peak"][0] > values["bw_peak"][0]
    assert values["fit_lambda"][0] == pytest.approx(
        sum(values[f"latency_{s}B"][0] for s in (0, 1, 2, 4, 8, 16)) / 6)
    assert switches == [4096]  # vader: the 4 KiB eager limit
    assert 0 < values["latency_8B_spread"][0] < 1


def test_logp_formulas():
    table = {("latency", "standard"): {0: 1.0, 1: 1.5, 8: 2.0},
             ("logp_g0", "standard"): {0: 0.25},
             ("logp_os", "standard"): {0: 0.1, 1: 0.2, 8: 0.3},
             ("logp_or", "standard"): {0: 0.1, 1: 0.4, 8: 0.5}}
    v = {k: x for k, (x, _) in logp(table).items()}
    assert v["logp_L"] == pytest.approx(1.0 - 0.25)          # RTT(0)/2 - g(0)
    assert v["logp_g"] == pytest.approx(3.0 - 2.0 + 0.25)    # RTT(1) - RTT(0) + g(0)
    assert v["logp_L_classic"] == pytest.approx(0.75 + 1.25 - 0.2 - 0.4)
    assert v["logp_o"] == pytest.approx(0.3)
    assert (v["logp_os_8B"], v["logp_or_8B"]) == (0.3, 0.5)


def test_logp_without_size_one_is_named():
    table = {("latency", "standard"): {0: 1.0}, ("logp_g0", "standard"): {0: 0.2},
             ("logp_os", "standard"): {0: 0.1}, ("logp_or", "standard"): {0: 0.1}}
    with pytest.raises(SentinelError, match="LogP needs sizes 0 and 1"):
        logp(table)
