"""The node before the MPI: the probe's figures and the host verdict, on captured runs.

``tests/data/host`` holds what ``tests/integration/test_host_local.py``
captured (SENTINEL_CAPTURE=1): a Pt2ptCheck run (ob1-vader, core) with a
busy loop on each CPU of this host, one without, against the references two
clean runs calibrated, and the probe's output of the hogged job.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from sentinel.analysis.host import HOST_FILE, ONE_CPU, host_values
from sentinel.analysis.variables import spec_of
from sentinel.results.report import headline, summary
from sentinel.results.report.files import load_reports
from sentinel.results.report.load import Inputs
from sentinel.results.report.tables import acceptance, host_slowdowns, rows
from tests.conftest import DATA

HOST = DATA / "host"
PROBE = (HOST / "rfm_host-hog.txt").read_text()
SPEC = spec_of("Pt2ptCheck")


def test_the_probe_gives_both_figures_with_their_intervals():
    values = host_values(SPEC, PROBE, HOST_FILE)
    assert values["host_roundtrip"] == (1130.9, "ns")
    assert values["host_copy_bw"] == (4.685, "GB/s")
    assert values.intervals["host_copy_bw"] == (4.016, 5.821)
    assert values.unresolved == {}


def test_a_probe_given_one_cpu_gives_the_copy_and_says_why_it_has_no_round_trip():
    values = host_values(SPEC, (HOST / "rfm_host-one-cpu.txt").read_text(), HOST_FILE)
    assert values["host_copy_bw"] == (33.998, "GB/s")
    assert values.intervals["host_copy_bw"] == (32.212, 34.771)
    assert values.unresolved == {"host_roundtrip": ONE_CPU}


@pytest.mark.parametrize("text, why", [
    (None, "the job wrote no rfm_host.txt"),
    ("\n".join(PROBE.splitlines()[:2]), "output of host is truncated"),
    ("/apps/x/bin/host: cannot execute: Permission denied\n", "cannot execute"),
    (PROBE.replace("SENTINEL_HOST", "SENTINEL_HOSTS"), "has 0 SENTINEL_HOST lines"),
])
def test_a_probe_that_did_not_run_leaves_both_unresolved_saying_why(text, why):
    values = host_values(SPEC, text, HOST_FILE)
    assert dict(values) == {}
    assert set(values.unresolved) == {"host_roundtrip", "host_copy_bw"}
    assert all(why in reason for reason in values.unresolved.values()), values.unresolved


def _inputs(name: str) -> Inputs:
    inputs = Inputs()
    load_reports([HOST / f"run-report-{name}.json"], inputs)
    assert not inputs.problems, inputs.problems
    return inputs


def test_a_hogged_node_is_named_once_with_the_probes_figure_and_its_failures_folded():
    inputs = _inputs("hog")
    acc = acceptance(inputs.cases)
    (slowed,) = host_slowdowns(acc, inputs.cases)
    assert (slowed.where, slowed.node) == ("local:cpu", "vm")
    assert [t.split()[0] for t in slowed.probe] == ["host_copy_bw", "host_roundtrip"]
    assert "host_copy_bw 4.685 GB/s, 59.6 % worse than its reference 11.61 GB/s" in slowed.text
    assert "host_roundtrip 1131 ns, 1834.8 % worse than its reference 58.45 ns" in slowed.text
    assert "1 test case(s) and 3 MPI value(s) failed with it there" in slowed.text
    said = summary.summarise(inputs, acc, [])
    groups = {g.title: g.lines for g in said.changed}
    (line,) = groups["nodes slowed as a whole (their host probe, before the MPI)"]
    assert line.text.startswith("local:cpu node vm slowed as a whole")
    # not a line per failed MPI value, nor per failed test case
    assert "requirements not met (values outside their reference band)" not in groups
    assert not any(t.startswith("test cases that fail") for t in groups)
    lines = headline(rows(inputs.cases), acc)
    assert sum(x.startswith("host: local:cpu node vm slowed") for x in lines) == 1


def test_a_clean_run_against_the_same_references_names_no_host():
    inputs = _inputs("clean")
    acc = acceptance(inputs.cases)
    assert acc.requirements and acc.verdict == "PASS"
    assert host_slowdowns(acc, inputs.cases) == []


@pytest.mark.parametrize("quiet", [(0, 1), (0,), (1,)])
def test_mpi_failures_beside_a_probe_in_its_band_stay_the_mpis(tmp_path, quiet):
    # The hogged run (its probe off in both attempts: the node's, above) with
    # the probe's figures put back in their band in both attempts (a
    # regression of the MPI alone), in the first only (the node was quiet
    # when the MPI failed) or in the retry only (it waited for a quiet node
    # and the MPI failed again): a probe off once is the probe's noise, not
    # the node. Named per value as before.
    report = json.loads((HOST / "run-report-hog.json").read_text())
    for attempt in quiet:
        for tc in report["runs"][attempt]["testcases"]:
            tc["host_outside"] = []
    path = tmp_path / "run-report-mpi.json"
    path.write_text(json.dumps(report))
    inputs = Inputs()
    load_reports([Path(path)], inputs)
    acc = acceptance(inputs.cases)
    # the node's probe off in the retry alone is said as information, folding nothing
    said = [s.cases for s in host_slowdowns(acc, inputs.cases)]
    assert said == ([[]] if quiet == (0,) else []), said
    groups = {g.title: g.lines for g in summary.summarise(replace(inputs), acc, []).changed}
    assert len(groups["requirements not met (values outside their reference band)"]) == 3


def test_a_hogged_node_whose_run_failed_sanity_is_named_from_its_message():
    # every variable referenced: under the hog fit_bw went unresolved, and
    # sanity failed before any band was compared; the probe leads the reason
    inputs = _inputs("hog-sanity")
    acc = acceptance(inputs.cases)
    (case,) = [c for c in acc.failed_cases if c.check == "Pt2ptCheck"]
    assert case.fail_reason.startswith("sanity error: the node slowed as a whole (its host "
                                       "probe, before any MPI): host_copy_bw 6.067 GB/s, "
                                       "47.7 % worse than its reference 11.61 GB/s; and so: "
                                       "referenced variable(s) unresolved: fit_bw")
    (slowed,) = host_slowdowns(acc, inputs.cases)
    assert (slowed.where, slowed.node) == ("local:cpu", "vm")
    assert slowed.probe == ["host_copy_bw 6.067 GB/s, 47.7 % worse than its reference 11.61 GB/s"]
    assert "(the host probe, before any MPI): host_copy_bw 6.067 GB/s, 47.7 % worse than its " \
           "reference 11.61 GB/s; 1 test case(s) and 0 MPI value(s) failed" in slowed.text
    groups = {g.title: g.lines for g in summary.summarise(inputs, acc, []).changed}
    assert len(groups["nodes slowed as a whole (their host probe, before the MPI)"]) == 1
    assert not any(t.startswith("test cases that fail") for t in groups)


def test_the_probe_out_of_its_band_is_said_only_when_worse():
    from sentinel.analysis.host import slowed

    entry = {"host_copy_bw": ["8.7", "-0.3", "0.3", "GB/s"],
             "host_roundtrip": ["57.0", "-0.3", "0.3", "ns"]}
    assert slowed({"host_copy_bw": (4.3, "GB/s"), "host_roundtrip": (50.0, "ns")}, entry) == [
        "host_copy_bw 4.3 GB/s, 50.6 % worse than its reference 8.7 GB/s"]
    # faster than the band is no slowdown; no reference, nothing said
    assert slowed({"host_copy_bw": (20.0, "GB/s"), "host_roundtrip": (20.0, "ns")}, entry) == []
    assert slowed({"host_copy_bw": (4.3, "GB/s")}, {}) == []


def test_a_retrys_wait_for_a_quiet_node_is_said():
    from sentinel.analysis.host import waited

    line = ("SENTINEL_CONFIG bench=host cpu_a=0 cpu_b=1 batches=9 trips=2000 copy_mib=8\n"
            "SENTINEL_HOST roundtrip_ns=53.6 roundtrip_lo=53.0 roundtrip_hi=53.8 "
            "copy_gbs=9.626 copy_lo=8.569 copy_hi=10.689 waited_s=6.6 tries=4 quiet={q}\n"
            "SENTINEL_DONE bench=host\n")
    assert waited(line.format(q=0)) == ("the probe waited 7 s over 4 measurement(s) for the "
                                        "node to be within its bands: still outside its bands "
                                        "at the end")
    assert waited(line.format(q=1)).endswith("quiet at the end")
    assert waited(PROBE) == ""  # a first run's probe waits for nothing
    assert waited("garbage") == ""
