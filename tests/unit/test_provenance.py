"""Provenance: what a result depends on, read from real job texts (tests/data/provenance)."""

from __future__ import annotations

import json
import subprocess

import pytest

from sentinel.errors import SentinelError
from sentinel.mpi.linkage import resolved
from sentinel.mpi.transports import CATALOGUE
from sentinel.parsers.provenance import (
    FACTS,
    compiler_version,
    gather_command,
    library_version,
    logged_versions,
    parse_facts,
)
from sentinel.results import provenance
from sentinel.results.report.load import cases_of
from sentinel.site.spack import installed_spec, parse_spec_json
from tests.conftest import DATA

CAPTURED = DATA / "provenance"


def _text(name: str) -> str:
    return (CAPTURED / name).read_text()


def test_the_facts_a_job_gathered_on_debian():
    assert parse_facts(_text("job-openmpi-ucx-sm.txt")) == {
        "kernel": "6.18.44-fc-v782",
        "node": "vm",
        "cpu": "AMD EPYC",
        "ucx": "not found (ucx_info is not on PATH)",
        "libfabric": "1.17.0",
    }


def test_ucx_info_on_path_gives_the_ucx_version():
    assert parse_facts(_text("gathered-ucx-info.txt"))["ucx"] == "1.13.1"


@pytest.mark.parametrize("line,version", [
    ("# Version 1.13.1", "1.13.1"),              # UCX 1.13 (captured above)
    ("# Library version: 1.15.0", "1.15.0"),     # later UCX
    ("# UCT version=1.8.0 revision 0000000", "1.8.0"),
])
def test_each_ucx_info_spelling(line, version):
    text = f"@@ ucx\n/usr/bin/ucx_info\n{line}\n# Git branch ''\n@@ ucx exit 0\n"
    assert parse_facts(text)["ucx"] == version


def test_a_tool_that_fails_is_not_found_with_its_error():
    # Intel MPI's environment puts its fi_info wrapper first on PATH; it fails here.
    found = parse_facts(_text("gathered-intelmpi-env.txt"))["libfabric"]
    assert found.startswith("not found (/work/main/.venv-impi/bin/fi_info --version: "
                            "exit status 127: ")
    assert "No such file or directory" in found


def test_the_cpu_model_from_lscpu_where_proc_cpuinfo_names_none():
    assert parse_facts(_text("gathered-lscpu.txt"))["cpu"] == "AMD EPYC"


def test_a_cut_or_missing_file_is_not_found_never_a_guess():
    text = _text("job-openmpi-ucx-sm.txt")
    cut = parse_facts(text[:text.index("@@ cpu exit")])
    assert cut["kernel"] == "6.18.44-fc-v782"
    assert cut["cpu"].startswith("not found (") and "cut short" in cut["cpu"]
    assert cut["ucx"] == "not found (no '@@ ucx' section in the gathered facts)"
    assert all(v.startswith("not found (") for v in parse_facts("").values())
    garbled = parse_facts("@@ kernel\nline one\nline two\n@@ kernel exit 0\n")
    assert garbled["kernel"] == "not found (uname -r: unexpected output: line two)"


def test_the_gather_command_runs_here_and_reads_back(tmp_path):
    path = tmp_path / "facts.txt"
    subprocess.run(["bash", "-c", gather_command(str(path))], check=True, timeout=30)
    facts = parse_facts(path.read_text())
    assert set(facts) == set(FACTS)
    for name in ("kernel", "node", "cpu"):
        assert not facts[name].startswith("not found"), facts


def test_the_versions_the_libraries_logged():
    assert logged_versions(_text("job-openmpi-ucx-sm.err")) == {"ucx": "1.13.1"}
    impi = (DATA / "joberr" / "intelmpi-ofi-provider.txt").read_text()
    assert logged_versions(impi) == {"libfabric": "2.4.0-impi"}
    ob1 = (DATA / "checks" / "pt2pt-openmpi-ob1-vader-core" / "rfm_job.err").read_text()
    assert logged_versions(ob1) == {}


def test_the_mpi_library_version_from_the_benchmark():
    ompi = (DATA / "pt2pt_openmpi_ob1-vader.out").read_text()
    assert library_version(ompi) == ("Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, "
                                     "repo rev: v4.1.4, May 26, 2022")
    mpich = (DATA / "joberr" / "mpich-finalize-hang.txt").read_text()
    assert library_version(mpich) == "MPICH Version: 4.0.2"
    assert library_version("SENTINEL_CONFIG ranks=2\n").startswith("not found (no SENTINEL_LIBRARY")


def test_the_mpi_library_ldd_resolved():
    ldd = DATA / "ldd"
    assert resolved((ldd / "intelmpi.txt").read_text()) == \
        "libmpi.so.12 => /work/main/.venv-impi/lib/libmpi.so.12"
    assert resolved((ldd / "intelmpi-no-ld-path.txt").read_text()) == "libmpi.so.12 => not found"
    assert resolved((ldd / "script.txt").read_text()) == ""


def test_the_compiler_a_build_ran():
    assert compiler_version(_text("compiler-openmpi.txt"), "/usr/bin/mpicc.openmpi") == \
        "/usr/bin/mpicc.openmpi: gcc (Debian 12.2.0-14+deb12u1) 12.2.0"
    assert compiler_version(_text("compiler-missing.txt"), "mpicc.nowhere") == \
        ("not found (mpicc.nowhere --version: exit status 127: "
         "bash: line 1: mpicc.nowhere: command not found)")
    assert compiler_version("", "cc") == "not found (cc --version: cut short)"


def test_the_variables_that_select_a_transport():
    t = CATALOGUE["openmpi/ucx-sm"]
    exported = {**t.run_env(), "OMPI_MCA_pml_ucx_tls": "any", "OTHER": "x"}
    assert t.selection(exported) == ("OMPI_MCA_pml=ucx OMPI_MCA_pml_ucx_devices=any "
                                     "OMPI_MCA_pml_ucx_tls=any UCX_TLS=sm,self")
    assert CATALOGUE["mpich/ucx-tcp"].selection({}) == (
        "MPIR_CVAR_CH4_NETMOD=<unset> UCX_TLS=<unset>")


def test_what_spack_installed(tmp_path):
    spec = parse_spec_json(_text("spack-spec.json"), "spec.json")
    assert spec.concrete == "sentinel-bench@1.0 %gcc@12.2.0 /q3lh7nb"
    assert spec.compiler == "gcc@12.2.0"
    no_compiler = json.loads(_text("spack-spec.json"))
    del no_compiler["spec"]["nodes"][0]["compiler"]
    spec = parse_spec_json(json.dumps(no_compiler), "spec.json")
    assert (spec.concrete, spec.compiler) == ("sentinel-bench@1.0 /q3lh7nb", None)
    with pytest.raises(SentinelError, match="x.json: not a Spack spec.json"):
        parse_spec_json('{"spec": {"nodes": []}}', "x.json")
    with pytest.raises(SentinelError, match="cannot be read"):
        installed_spec(str(tmp_path))


def _report() -> dict:
    return json.loads(_text("run-report-pt2pt-ob1-vader.json"))


def test_the_provenance_of_a_real_run_reports_test_case():
    tc = next(tc for tc in _report()["runs"][0]["testcases"] if tc["name"].startswith("Pt2pt"))
    found = provenance.of_testcase(tc)
    assert found["mpi"].startswith("Open MPI v4.1.4")
    assert found["transport_env"] == "OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1"
    assert {"ucx", "libfabric", "compiler", "kernel", "nodes", "cpu"} <= set(found)


def test_cases_carry_their_provenance_and_older_sessions_none():
    cases = {c.check: c for c in cases_of(_report(), "report.json")}
    assert cases["Pt2ptCheck"].provenance["cpu"] == "AMD EPYC"
    assert cases["BenchBuild"].provenance == {}
    old = json.loads((DATA / "run-report-slurm-two.json").read_text())
    assert all(c.provenance == {} for c in cases_of(old, "old.json"))


@pytest.mark.parametrize("value,message", [
    (["ucx"], "'provenance' must be an object, got list"),
    ({"ucx": 1}, "'provenance' values must be strings; ucx is not"),
])
def test_a_malformed_provenance_is_named(value, message):
    tc = {"name": "Pt2ptCheck", "display_name": "Pt2ptCheck %transport=x", "provenance": value}
    with pytest.raises(SentinelError, match=f"test case Pt2ptCheck %transport=x: {message}"):
        provenance.of_testcase(tc)
    report = _report()
    report["runs"][0]["testcases"][1]["provenance"] = value
    with pytest.raises(ValueError, match="report.json: test case Pt2ptCheck"):
        cases_of(report, "report.json")


def test_undefined_or_absent_is_empty():
    assert provenance.of_testcase({"provenance": "<undefined>"}) == {}
    assert provenance.of_testcase({}) == {}


def test_diff_names_what_changed_in_a_fixed_order():
    before = {"cpu": "AMD EPYC", "ucx": "1.13.1", "transport_env": "UCX_TLS=sm",
              "kernel": "6.1.0-18-amd64", "spack_spec": "sentinel-bench ^openmpi", "zeta": "1"}
    after = {"cpu": "AMD EPYC", "ucx": "1.15.0", "transport_env": "UCX_TLS=sm,tcp",
             "kernel": "6.1.0-21-amd64", "nodes": "n1,n2", "alpha": "2", "zeta": "1"}
    assert provenance.diff(before, after) == [
        "ucx: 1.13.1 -> 1.15.0",
        "spack_spec: removed (was sentinel-bench ^openmpi)",
        "transport_env: UCX_TLS=sm -> UCX_TLS=sm,tcp",
        "kernel: 6.1.0-18-amd64 -> 6.1.0-21-amd64",
        "nodes: added (n1,n2)",
        "alpha: added (2)",
    ]
    assert provenance.diff(before, dict(before)) == []
    assert provenance.diff({}, {}) == []
