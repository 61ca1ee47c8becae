"""``sentinel calibrate`` on this host: real runs, a real reference file."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from tests.conftest import ROOT
from tests.integration.conftest import QUICK, need_stack, outside_bands, reframe

pytestmark = pytest.mark.integration

SELECTION = [*QUICK, "-n", "MatchingCheck.*transport=ob1-vader.*mapping=core"]
# M, a fit's slope of a few nanoseconds, drifts on this 2-vCPU VM by 12-13 % within
# minutes (3.52 ns above a band of 2.80-3.42, and 3.03 below 3.09-3.78, in two full
# test runs): the floor a site gives such a variable (docs/coverage.md).
M_FLOOR = 0.25


def test_calibrate_writes_references_that_judge_the_next_unchanged_session(tmp_path):
    need_stack("openmpi")
    refs = tmp_path / "refs"
    refs.mkdir()
    other = {"MatchingCheck": {"$index": ["$partition", "$environ", "transport_name", "mapping"],
                               "local:slurm-two": {"openmpi": {"ob1-tcp": {"node": {
                                   "match_time_tag": [500.0, None, 0.2, "ns"]}}}}}}
    (refs / "local.yaml").write_text(yaml.safe_dump(other))
    env = {**os.environ, "SENTINEL_OUTPUT": str(tmp_path)}
    if os.geteuid() == 0:  # a local-test environment: never set in a site config
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    # The default: what the test cases judged (M, the headline) and the host probe.
    proc = subprocess.run([sys.executable, "-m", "sentinel.results.cli", "calibrate",
                           "--partition", "local:cpu", "--runs", "3", "--references", str(refs),
                           "--floor", f"match_time_.*={M_FLOOR}",
                           "--checks", str(ROOT / "checks" / "matching.py"),
                           "--", *SELECTION], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert f"+++ {refs / 'local.yaml'} (after)" in proc.stdout
    assert "wrote " in proc.stdout and "references of local:cpu" in proc.stdout
    assert "note: provisional: the 3 runs span" in proc.stdout  # minutes, not nights
    data = yaml.safe_load((refs / "local.yaml").read_text())
    check = data["MatchingCheck"]
    assert check["local:slurm-two"] == other["MatchingCheck"]["local:slurm-two"]  # kept
    entries = check["local:cpu"]["openmpi"]["ob1-vader"]["core"]
    assert set(entries) <= {"match_time_tag", "match_time_comm", "host_roundtrip",
                            "host_copy_bw"}, entries
    assert "host_copy_bw" in entries
    for name, (median, lower, upper, unit) in entries.items():
        floor = M_FLOOR if name.startswith("match_time") else 0.10
        assert median > 0
        if name == "host_copy_bw":  # a rate: its better side, above, is open
            assert unit == "GB/s" and upper is None and -1.0 < lower <= -floor
        else:  # a time: its better side, below, is open
            assert lower is None and upper >= floor
    # An M the quick run does not resolve from 0 is named with its bound, not written.
    for name in ("match_time_tag", "match_time_comm"):
        assert name in entries or f"core {name}: " in proc.stdout, proc.stdout[-3000:]
    # The next session, nothing changed, run as the nightly runs it (a failed
    # test retried once, the retry's cause the band and nothing else), is judged
    # by the file's M and by nothing else: the host probe's bands attribute, the
    # per-message times are recorded (this VM changes their speed by a factor of
    # 2 between minutes: README, docs/coverage.md). The file without the kept
    # partition: it has no Slurm running here.
    del check["local:slurm-two"]
    (tmp_path / "next" / "refs").mkdir(parents=True)
    (tmp_path / "next" / "refs" / "local.yaml").write_text(yaml.safe_dump(data))
    run = reframe([*SELECTION, "-p", "openmpi$", "-r"], tmp_path / "next",
                  env={"SENTINEL_REFERENCES": str(tmp_path / "next" / "refs")},
                  checks=("matching.py",))
    run.assert_retries("performance")
    tc = run.case("MatchingCheck", environ="openmpi", transport="ob1-vader", mapping="core")
    worse, better = outside_bands(run.report)
    print("better than the band (not a regression):", better)
    assert [w for w in worse if w[1].startswith("match_time")] == [], tc.get("fail_reason")
    assert tc["result"] == "pass", tc.get("fail_reason")
    judged = {k.split(":")[-1] for k, v in tc["perfvalues"].items() if v[2] or v[3]}
    assert judged == {n for n in entries if n.startswith("match_time")} & set(
        tc["judged_variables"])
    assert tc["reference_origin"] == dict.fromkeys(entries, "file")


def test_calibrate_refuses_a_single_run_a_bad_partition_and_missing_checks(tmp_path):
    for args, message in ((["--partition", "local:cpu", "--runs", "1"],
                           "at least 2 runs (--runs, --from-reports): the tolerance comes "
                           "from the spread"),
                          (["--partition", "cpu"], "--partition 'cpu': expected system:partition"),
                          (["--partition", "local:cpu", "--checks", "checks/nope.py"],
                           "--checks checks/nope.py: no such file or directory")):
        proc = subprocess.run([sys.executable, "-m", "sentinel.results.cli", "calibrate", *args],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 1
        assert proc.stderr.strip() == f"sentinel calibrate: {message}"
