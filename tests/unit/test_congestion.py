"""The congestion benchmark's figures, impact and placement (sentinel.analysis.congestion)."""

from __future__ import annotations

import re

import pytest

from sentinel.analysis import congestion
from sentinel.analysis.fits import median_coverage
from sentinel.analysis.variables import spec_of
from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import parse
from tests.conftest import DATA

#: Two victims (m1, m2) and two congestors (m3, m4) of the rig, its spine as it
#: is and limited to 200 Mbit/s (tests/data/checks/README.md).
QUIET = (DATA / "checks" / "congestion-openmpi-ob1-tcp-node" / "rfm_job.out").read_text()
SPINE = (DATA / "checks" / "congestion-openmpi-ob1-tcp-node-spine" / "rfm_job.out").read_text()


def _values(text: str, patterns=congestion.PATTERNS):
    return congestion.values(parse(text, "congestion"), "out", patterns)


def test_every_pattern_reports_both_states_its_impact_and_its_congestors():
    found = _values(QUIET)
    assert set(found) - {n for n in found if n.startswith("host_")} == set(
        congestion.expected(congestion.PATTERNS))
    assert found["alltoall_latency_p50_quiet"] == (20.155, "us")
    assert found.intervals["alltoall_latency_p50_quiet"] == (19.128, 21.777)
    assert found["alltoall_congestor_bw"][1] == "MB/s"
    # the impact is the median of the paired ratios, printed by the benchmark:
    # not the ratio of the medians
    assert found["alltoall_impact_latency_p50"] == (4.798, "1")
    assert found.intervals["alltoall_impact_latency_p50"] == (4.071, 4.949)
    assert found.coverage["alltoall_impact_latency_p50"] == pytest.approx(median_coverage(3))


def test_only_the_impacts_are_judged_and_the_quiet_figures_followed():
    spec = spec_of("CongestionCheck")
    judged = {n for n in congestion.expected(congestion.PATTERNS) if spec.judged(n)}
    assert judged == {f"{p}_impact_{f}" for p in congestion.PATTERNS
                      for f in congestion.FIGURES}
    followed = {n for n in congestion.expected(congestion.PATTERNS)
                if spec.lookup(n).is_followed(n) and n not in judged}
    assert followed == {n for n in congestion.expected(congestion.PATTERNS)
                        if n.endswith("_quiet")}
    assert spec.lookup("bcast_bw_loaded").better == "higher"
    assert spec.lookup("bcast_impact_bw").better == "lower"  # quiet over loaded
    assert spec.lookup("bcast_impact_latency_fooB") is None


def test_a_shared_queue_raises_the_impact_tens_of_times_over():
    quiet, spine = _values(QUIET), _values(SPINE)
    for p in congestion.PATTERNS:
        name = f"{p}_impact_latency_p50"
        assert spine[name][0] > 10 * quiet[name][0], p
        # the queue is on the spine: the quiet victims kept their figures
        assert spine[f"{p}_latency_p50_quiet"][0] < 2 * quiet[f"{p}_latency_p50_quiet"][0]


def test_a_victim_pair_on_one_node_or_a_shared_node_is_named():
    one_node = QUIET.replace("rank=1 host=m2", "rank=1 host=m1")
    with pytest.raises(SentinelError, match="victim ranks 0 and 1 are both on m1"):
        _values(one_node)
    shared = QUIET.replace("rank=2 host=m3", "rank=2 host=m2")
    with pytest.raises(SentinelError, match=r"node\(s\) m2 hold both victims and congestors"):
        _values(shared)


def test_congestors_that_delivered_nothing_measured_no_congestion():
    idle = re.sub(r"(pattern=incast state=loaded .*?)congestor_mbs=[\d.]+",
                  r"\1congestor_mbs=0.000", QUIET)
    with pytest.raises(SentinelError, match="the incast congestors delivered 0 MB/s in "
                       r"\d+ burst\(s\) while the victims measured: no congestion"):
        _values(idle)


def test_a_pattern_asked_for_and_not_reported_is_named():
    text = re.sub(r"^SENTINEL_CONGESTION_IMPACT pattern=bcast .*\n", "", QUIET, flags=re.M)
    with pytest.raises(SentinelError, match=r"no result for congestor pattern\(s\) bcast"):
        _values(text)
    assert set(_values(text, ["alltoall"])) >= {"alltoall_impact_bw"}
