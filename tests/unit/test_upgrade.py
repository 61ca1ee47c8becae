"""The upgrade verdict's decisions: ratios paired in sessions, intervals, a line a transport."""

from __future__ import annotations

import pytest

from sentinel.analysis.variables import declaration
from sentinel.errors import SentinelError
from sentinel.results import upgrade
from sentinel.results.report.load import Case, Variable

NAME = "Pt2ptCheck %transport={t} %mapping=core %build.bench=pt2pt"


def _case(environ: str, transport: str, session: int, latency: float, bw: float) -> Case:
    variables = {n: Variable(n, v, 0.0, None, None, unit, "pass",
                             declaration("Pt2ptCheck", n))
                 for n, v, unit in (("latency_8B", latency, "us"), ("bw_peak", bw, "MB/s"))}
    return Case("Pt2ptCheck", NAME.format(t=transport), "local", "cpu", environ, transport,
                "core", "pass", "", f"s{session}", float(session), variables,
                judged=["latency_8B", "bw_peak"])


def _history(sessions: int, new_latency: list[float], new_bw: list[float],
             old_transport: str = "ob1-vader", new_transport: str = "ob1-sm"
             ) -> list[tuple[dict, list[Case]]]:
    """Sessions that ran both: the old at 1 us and 1000 MB/s, the new as given."""
    return [({"uuid": f"s{i}", "time_start_unix": i},
             [_case("openmpi", old_transport, i, 1.0, 1000.0),
              _case("openmpi-5_0", new_transport, i, new_latency[i % len(new_latency)],
                    new_bw[i % len(new_bw)])])
            for i in range(sessions)]


def test_a_slower_latency_is_worse_and_named_and_vader_pairs_with_sm():
    found = upgrade.compare(_history(6, [1.30, 1.28, 1.33], [1000.0, 1004.0, 996.0]),
                            "openmpi", "openmpi-5_0", "local:cpu")
    assert len(found.sessions) == 6 and len(found.pairs) == 1
    pair = found.pairs[0]
    assert pair.transport == "ob1-vader"
    line = pair.line(found.tolerance)
    assert line.startswith("worse: latency_8B 0.769 [0.752, 0.781]"), line
    assert "bw_peak" not in line
    verdicts = {r.variable: r.verdict for r in pair.ratios}
    assert verdicts == {"latency_8B": "worse", "bw_peak": "no worse"}


def test_an_unchanged_version_is_no_worse_within_the_tolerance():
    found = upgrade.compare(_history(8, [1.01, 0.99, 1.02, 0.98], [990.0, 1010.0]),
                            "openmpi", "openmpi-5_0", "local:cpu")
    assert found.pairs[0].line(found.tolerance) == "no worse within 5% (2 variables)"


def test_a_faster_bandwidth_is_better():
    found = upgrade.compare(_history(6, [1.0], [1500.0, 1450.0, 1550.0]),
                            "openmpi", "openmpi-5_0", "local:cpu")
    assert found.pairs[0].line(found.tolerance).startswith("better: bw_peak 1.5")


def test_a_spread_that_straddles_the_tolerance_is_unresolved_with_its_bound():
    found = upgrade.compare(_history(6, [1.0, 1.2, 0.9, 1.1, 0.95, 1.15], [1000.0]),
                            "openmpi", "openmpi-5_0", "local:cpu")
    line = found.pairs[0].line(found.tolerance)
    assert line.startswith("unresolved: latency_8B "), line
    low = next(r.low for r in found.pairs[0].ratios if r.variable == "latency_8B")
    assert low < 0.95


def test_fewer_sessions_than_a_verdict_needs_are_unresolved_and_said():
    found = upgrade.compare(_history(3, [1.5], [1000.0]), "openmpi", "openmpi-5_0",
                            "local:cpu")
    assert all(r.verdict == "unresolved" for r in found.pairs[0].ratios)
    assert any("at least 6 are needed" in line for line in found.lines())


def test_no_session_that_ran_both_is_an_error_naming_them():
    only_old = [(info, [c for c in cases if c.environ == "openmpi"])
                for info, cases in _history(6, [1.0], [1000.0])]
    with pytest.raises(SentinelError, match="no stored session ran both openmpi and "
                                            "openmpi-5_0 on local:cpu"):
        upgrade.compare(only_old, "openmpi", "openmpi-5_0", "local:cpu")


def test_another_partition_is_not_compared():
    with pytest.raises(SentinelError, match="on local:slurm-two"):
        upgrade.compare(_history(6, [1.0], [1000.0]), "openmpi", "openmpi-5_0",
                        "local:slurm-two")


def test_a_tolerance_outside_zero_and_one_is_an_error():
    with pytest.raises(SentinelError, match="tolerance 1.5"):
        upgrade.compare(_history(6, [1.0], [1000.0]), "openmpi", "openmpi-5_0", "local:cpu",
                        tolerance=1.5)


def test_another_version_of_an_environment_on_its_partition_is_a_candidate():
    cases = [c for _, cs in _history(1, [1.0], [1.0]) for c in cs]
    cases.append(_case("openmpi-packed", "ob1-tcp", 0, 1.0, 1.0))  # not a version
    cases.append(_case("mpich-5_0", "ucx-sm", 0, 1.0, 1.0))  # its default did not run
    cases.append(_case("mpich-5_0-abi", "ucx-sm", 0, 1.0, 1.0))  # the ABI build of one
    assert upgrade.candidates(cases) == [("local:cpu", "mpich-5_0", "mpich-5_0-abi"),
                                         ("local:cpu", "openmpi", "openmpi-5_0")]


def test_the_reports_summary_gives_the_upgrade_verdict_first():
    from sentinel.results.report import summary, tables
    from sentinel.results.report.load import Inputs

    history = _history(6, [1.30, 1.28, 1.33], [1000.0])
    inputs = Inputs(cases=history[-1][1], sessions=[history[-1][0]], history=history)
    said = summary.summarise(inputs, tables.acceptance(inputs.cases, inputs.contracts), [])
    first = said.changed[0]
    assert first.title.startswith("upgrade openmpi -> openmpi-5_0 on local:cpu (6 stored "
                                  "sessions ran both")
    assert first.verdict == "FAIL"
    assert [line.text for line in first.lines] == [
        "Pt2ptCheck ob1-vader core: worse: latency_8B 0.769 [0.752, 0.781]"]


def test_an_unchanged_upgrade_reads_as_a_pass_in_the_summary():
    from sentinel.results.report import summary, tables
    from sentinel.results.report.load import Inputs

    history = _history(6, [1.01, 0.99], [1000.0])
    inputs = Inputs(cases=history[-1][1], sessions=[history[-1][0]], history=history)
    said = summary.summarise(inputs, tables.acceptance(inputs.cases, inputs.contracts), [])
    assert said.changed[0].verdict == "PASS"
    assert said.changed[0].lines[0].text.endswith("no worse within 5% (2 variables)")
