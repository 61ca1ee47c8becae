"""References from a YAML file asserted by the real ReFrame on real runs."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sentinel.results.references import systems_from_config, validate_file
from tests.conftest import ROOT
from tests.integration.conftest import QUICK, need_stack, reframe

pytestmark = pytest.mark.integration

# In an acceptance every entry of the file is a requirement (in a nightly only
# the headline variables are judged). ob1-vader: M per unsuccessful match in
# the unexpected queue must lie in [0, 1000] ns: measured here about 2 ns, so
# this passes unless matching became 500 times slower (or the fit went negative).
# ob1-tcp: a reference of 1e-6 ns +-50% that no real run reaches: must fail.
def openmpi_entries(check: str, entries: dict[str, list[str]]) -> str:
    """A local.yaml for ``check`` with Open MPI core-mapping entries per transport."""
    lines = [f"{check}:", "  $index: [$partition, $environ, transport_name, mapping]",
             "  local:cpu:", "    openmpi:"]
    for transport, variables in entries.items():
        lines += [f"      {transport}:", "        core:"]
        lines += [f"          {v}" for v in variables]
    return "\n".join(lines) + "\n"


REFERENCES = openmpi_entries("MatchingCheck", {
    "ob1-vader": ["match_time_umq_tag: [500.0, -1.0, 1.0, ns]"],
    "ob1-tcp": ["match_time_umq_tag: [1.0e-6, -0.5, 0.5, ns]"]})


def reference_env(tmp_path, site_configuration, text: str) -> dict[str, str]:
    """A validated references directory holding ``local.yaml``, as reframe's environment."""
    refdir = tmp_path / "refs"
    refdir.mkdir()
    (refdir / "local.yaml").write_text(text)
    assert validate_file(refdir / "local.yaml", systems_from_config(site_configuration)) == []
    return {"SENTINEL_REFERENCES": str(refdir)}


@pytest.fixture
def references(tmp_path, site_configuration):
    return reference_env(tmp_path, site_configuration, REFERENCES)


def test_reference_file_passes_and_fails_per_partition_entry(tmp_path, references):
    need_stack("openmpi")
    run = reframe([*QUICK, "-n", "MatchingCheck.*transport=ob1-(vader|tcp)", "-p", "openmpi$",
                   "-S", "require_partition_reference=true", "-r"],
                  tmp_path, env=references, checks=("matching.py",))
    vader = run.case("MatchingCheck", environ="openmpi", transport="ob1-vader", mapping="core")
    assert vader["result"] == "pass", vader.get("fail_reason")
    assert vader["reference_status"].endswith("local.yaml: local:cpu/openmpi/ob1-vader/core")
    value, ref, lower, upper, unit, result = vader["perfvalues"]["local:cpu:match_time_umq_tag"]
    assert (ref, lower, upper, unit, result) == (500.0, -1.0, 1.0, "ns", "pass")
    tcp = run.case("MatchingCheck", environ="openmpi", transport="ob1-tcp", mapping="core")
    assert tcp["result"] == "fail" and tcp["fail_phase"] == "performance"
    assert "match_time_umq_tag" in tcp["fail_reason"]


def test_acceptance_skips_a_combination_its_requirements_do_not_cover(tmp_path, references):
    need_stack("openmpi")
    run = reframe([*QUICK, "-n", "MatchingCheck.*transport=ucx-sm", "-p", "openmpi$",
                   "-S", "require_partition_reference=true", "-r"], tmp_path, env=references,
                  checks=("matching.py",))
    assert run.returncode == 0, run.output[-3000:]
    tc = run.case("MatchingCheck", environ="openmpi", transport="ucx-sm", mapping="core")
    assert tc["result"] == "skip"
    assert ("not among the requirements of local: " in tc["skip_reason"]
            and "has no entry for local:cpu/openmpi/ucx-sm/core" in tc["skip_reason"])


CURVE = openmpi_entries("Pt2ptCheck", {"ob1-vader": [
    "latency_8B: [0.5, -1.0, 1.0, us]", "latency_1024B: [0.5, -1.0, 3.0, us]",
    "bw_1024B: [1.0e+9, -0.5, 0.5, MB/s]"]})


def test_curve_references_are_asserted_per_size(tmp_path, site_configuration):
    """In an acceptance each size of a curve is a requirement with its own tolerance."""
    need_stack("openmpi")
    run = reframe([*QUICK, "-n", "Pt2ptCheck.*transport=ob1-vader", "-p", "openmpi$",
                   "-S", "require_partition_reference=true", "-r"],
                  tmp_path, env=reference_env(tmp_path, site_configuration, CURVE),
                  checks=("pt2pt.py",))
    tc = run.case("Pt2ptCheck", environ="openmpi", transport="ob1-vader", mapping="core")
    perf = {k.split(":")[-1]: v for k, v in tc["perfvalues"].items()}
    assert perf["latency_8B"][-1] == "pass" and perf["latency_1024B"][-1] == "pass"
    assert perf["bw_1024B"][-1] == "fail"  # no link moves 1 PB/s
    assert tc["result"] == "fail" and "bw_1024B" in tc["fail_reason"]

    # The report's acceptance section: each reference a requirement, with its margin.
    proc = subprocess.run([str(Path(sys.executable).parent / "sentinel"), "report"],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "SENTINEL_OUTPUT": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "reports" / "sentinel-report.json").read_text())
    assert summary["verdict"] == "FAIL"
    verdicts = {v["variable"]: v for v in summary["variables"]
                if v["verdict"] in ("PASS", "FAIL")}
    assert verdicts["latency_8B"]["verdict"] == "PASS" and verdicts["latency_8B"]["margin"] > 0
    assert verdicts["bw_1024B"]["verdict"] == "FAIL" and verdicts["bw_1024B"]["margin"] < 0
    assert [c["test"] for c in summary["failed_test_cases"]] == [tc["display_name"]]
    assert proc.stdout.startswith(f"acceptance: FAIL ({len(verdicts)} requirements, "
                                  "0 not measured, 1 failed test cases)")


# pure: the 2-rank ratio to the model must lie in [0.2, 5]; multiple: a ratio of
# 100 (+-10%) that no run reaches must fail in the performance stage.
JACOBI = """\
JacobiCheck:
  $index: [$partition, $environ, transport_name, mapping, mode, threads]
  local:cpu:
    openmpi:
      ob1-vader:
        core:
          pure:
            one:
              model_ratio_N2: [1.0, -0.8, 4.0, "1"]
          multiple:
            one:
              model_ratio_N2: [100.0, -0.1, 0.1, "1"]
"""


def test_model_ratio_reference_per_mode(tmp_path, site_configuration):
    need_stack("openmpi")
    run = reframe([*QUICK, "-n", "JacobiCheck", "-p", "openmpi$", "-E",
                   "transport == 'openmpi/ob1-vader' and mapping == 'core' and threads == 'one' "
                   "and mode in ('pure', 'multiple')", "-r"],
                  tmp_path, env=reference_env(tmp_path, site_configuration, JACOBI),
                  checks=("jacobi.py", "pt2pt.py"))
    pure = run.case("JacobiCheck", environ="openmpi", mode="pure", threads="one")
    assert pure["result"] == "pass", pure.get("fail_reason")
    assert pure["perfvalues"]["local:cpu:model_ratio_N2"][-1] == "pass"
    multiple = run.case("JacobiCheck", environ="openmpi", mode="multiple", threads="one")
    assert multiple["result"] == "fail" and multiple["fail_phase"] == "performance"
    assert "model_ratio_N2" in multiple["fail_reason"]


#: Three requirements of ob1-vader's 8 B latency, one per mapping: on the
#: one-socket, one-node local:cpu only core can be measured (socket needs
#: two sockets, and shared memory never runs with mapping node).
MAPPINGS = "\n".join([
    "Pt2ptCheck:", "  $index: [$partition, $environ, transport_name, mapping]",
    "  local:cpu:", "    openmpi:", "      ob1-vader:",
    *(line for m in ("core", "socket", "node")
      for line in (f"        {m}:", "          latency_8B: [1.0, -1.0, 9.0, us]"))]) + "\n"
#: The real acceptance mode, its Pt2ptCheck sizes cut to keep the run short.
ACCEPTANCE = ["--mode", "acceptance", "-p", "openmpi$", "-n", "Pt2ptCheck",
              "-S", "Pt2ptCheck.max_size=65536", "-S", "Pt2ptCheck.iterations=100"]


def _sentinel(args: list[str], env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).parent / "sentinel"), *args],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env, "SENTINEL_OUTPUT": str(tmp_path)})


def _acceptance(tmp_path, site_configuration, text: str) -> tuple[str, dict, str, str]:
    """Plan, run, report, metrics and the mail of the acceptance against ``text``."""
    need_stack("openmpi")
    env = reference_env(tmp_path, site_configuration, text)
    plan = _sentinel(["plan", "--system", "local", "--mode", "acceptance", "--",
                      "-c", str(ROOT / "checks" / "pt2pt.py"), *ACCEPTANCE[2:]], env,
                     tmp_path / "plan")
    assert plan.returncode in (0, 1), plan.stderr
    run = reframe([*ACCEPTANCE, "-r"], tmp_path, env=env, checks=("pt2pt.py",))
    assert run.returncode == 0, run.output[-3000:]
    report = _sentinel(["report"], env, tmp_path)
    assert report.returncode == 0, report.stderr
    summary = json.loads((tmp_path / "reports" / "sentinel-report.json").read_text())
    metrics = _sentinel(["metrics", "--textfile", str(tmp_path / "m.prom")], env, tmp_path)
    assert metrics.returncode == 0, metrics.stderr
    mail = _sentinel(["notify"], env, tmp_path)
    assert mail.returncode == 0, mail.stderr
    return plan.stdout, summary, report.stdout, (tmp_path / "m.prom").read_text() + mail.stdout


def test_an_acceptance_that_measured_part_of_its_contract_is_incomplete_and_says_why(
        tmp_path, site_configuration):
    plan, summary, said, sent = _acceptance(tmp_path, site_configuration, MAPPINGS)
    # before anything runs, the plan names what cannot be measured here
    assert "acceptance: 2 requirement(s) of the reference file cannot be measured" in plan
    assert "ob1-vader/socket latency_8B: skipped" in plan
    assert "ob1-vader/node latency_8B: not generated" in plan
    assert summary["verdict"] == "INCOMPLETE" and summary["requirements"] == 3
    why = {u["entry"].rsplit("/", 1)[1]: u for u in summary["unmeasured_requirements"]}
    assert set(why) == {"socket", "node"}
    assert "mapping socket needs 2 sockets" in why["socket"]["why"]
    assert "shared memory" in why["node"]["why"]
    assert said.startswith("acceptance: INCOMPLETE (3 requirements, 2 not measured, "
                           "0 failed test cases)")
    assert 'mpi_sentinel_acceptance_requirements{status="not_measured",system="local"} 2.0' \
        in sent
    assert "Acceptance: INCOMPLETE (3 requirements, 2 not measured" in sent


def test_an_acceptance_that_measured_its_whole_contract_in_band_passes(
        tmp_path, site_configuration):
    core = "\n".join(MAPPINGS.splitlines()[:7]) + "\n"
    plan, summary, said, sent = _acceptance(tmp_path, site_configuration, core)
    assert "cannot be measured" not in plan
    assert summary["verdict"] == "PASS" and summary["unmeasured_requirements"] == []
    assert said.startswith("acceptance: PASS (1 requirements, 0 not measured, "
                           "0 failed test cases)")
    assert 'mpi_sentinel_acceptance_requirements{status="met",system="local"} 1.0' in sent
    assert 'mpi_sentinel_acceptance_requirements{status="not_measured",system="local"} 0.0' \
        in sent
