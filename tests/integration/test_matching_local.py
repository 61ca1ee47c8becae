"""The matching check for real, over the local transport x mapping matrix."""

import pytest

from tests.conftest import MPI_PREFIXES, ROOT
from tests.integration.conftest import QUICK, need_environ, need_stack, reframe

pytestmark = pytest.mark.integration

# (environment, transport): the distribution's MPIs, Intel MPI, and PyPI's
# Open MPI 5 and MPICH 5 beside them (MPICH 5 has both netmods: ucx and ofi)
MATRIX = [
    ("openmpi", "ob1-tcp"), ("openmpi", "ob1-vader"), ("openmpi", "ucx-sm"),
    ("openmpi", "ucx-tcp"), ("mpich", "ucx-sm"), ("mpich", "ucx-tcp"),
    ("intelmpi", "shm"), ("intelmpi", "ofi-tcp"), ("intelmpi", "shm-ofi-tcp"),
    ("openmpi-5_0", "ob1-tcp"), ("openmpi-5_0", "ob1-sm"), ("openmpi-5_0", "ucx-sm"),
    ("openmpi-5_0", "ucx-tcp"), ("openmpi-5_0", "ofi-tcp"),
    ("mpich-5_0", "ucx-sm"), ("mpich-5_0", "ucx-tcp"), ("mpich-5_0", "ofi-tcp"),
]
# What each transport's verification must have seen in the library log.
SELECTED = {
    "ob1-tcp": "btl=tcp", "ob1-vader": "btl=vader", "ob1-sm": "btl=sm",
    "ucx-sm": "ucx=cma,sysv", "ucx-tcp": "ucx=tcp", "shm": "fabrics=shm", "ofi-tcp": "ofi=tcp",
    "shm-ofi-tcp": "fabrics=shm:ofi",
}
#: And, for MPICH, the netmod it ran (both are in MPICH 5's library).
NETMOD = {"ucx-sm": "netmod=ucx", "ucx-tcp": "netmod=ucx", "ofi-tcp": "netmod=ofi"}


def _selected(environ: str, transport: str) -> list[str]:
    """What the log must show for ``transport`` of ``environ``."""
    return [SELECTED[transport], *([NETMOD[transport]] if environ.startswith("mpich") else [])]


@pytest.mark.parametrize("environ,transport", MATRIX, ids=lambda x: x)
def test_transport_runs_verified_with_matching_time(quick_matrix, environ, transport):
    need_environ(environ)
    tc = quick_matrix.case("MatchingCheck", environ=environ, transport=transport, mapping="core")
    assert tc["result"] == "pass", tc.get("fail_reason")
    for seen in _selected(environ, transport):
        assert seen in tc["transport_selected"], tc["transport_selected"]
    perf = tc["perfvalues"]
    for var in ("match_r2_tag", "iot_tag", "rot_tag", "diff_tag"):
        value, *_, unit, _result = perf[f"local:cpu:{var}"]
        assert isinstance(value, float)
    # M is a value in ns above zero, with its interval, or unresolved with its
    # bound: never a bare negative time
    for var in ("match_time_tag", "match_time_comm", "match_time_umq_tag",
                "match_time_prq_tag"):
        if f"local:cpu:{var}" in perf:
            value, *_, unit, _result = perf[f"local:cpu:{var}"]
            low, high = tc["intervals"][var]
            assert unit == "ns" and 0 < low <= value <= high
        else:
            assert tc["unresolved"][var].startswith("< "), tc.get("unresolved")
    models = dict(part.split(": ") for part in tc["queue_model"].split("; "))
    assert set(models) == {"pingpong", "umq", "prq"}
    assert set(models.values()) <= {"shared", "per-communicator",
                                    "no per-message search cost", "inconclusive"}
    assert all(tc["queue_evidence"][q].startswith(f"{m}: tag M ") for q, m in models.items())
    assert tc["reference_status"].startswith("no reference file: ")


def test_impossible_mappings_skip_with_their_reason(quick_matrix):
    need_stack("openmpi")
    out = quick_matrix.output
    assert "mapping socket needs 2 sockets; partition local:cpu has 1" in out
    assert "mapping node needs 2 nodes; partition local:cpu has 1" in out
    skipped = quick_matrix.cases("MatchingCheck", environ="openmpi", transport="ob1-tcp",
                                 mapping="node")
    assert [tc["result"] for tc in skipped] == ["skip"]


def test_listing_generates_only_valid_pairs(tmp_path):
    need_stack("openmpi")
    run = reframe(["-l"], tmp_path)
    assert run.returncode == 0, run.output
    lines = [ln for ln in run.output.splitlines() if ln.startswith("- MatchingCheck")]
    assert any("%transport=ob1-vader %mapping=core" in ln for ln in lines)
    assert not any("%transport=ob1-vader %mapping=node" in ln for ln in lines)
    assert not any("%transport=ucx-sm %mapping=node" in ln for ln in lines)
    assert not any("%transport=ofi-cxi" in ln for ln in lines)  # offered by nothing here


def test_example_site_lists_and_dry_runs_without_a_cluster(tmp_path):
    run = reframe(["--system", "example_cluster", "-n", "transport=ucx-sm", "--dry-run"],
                  tmp_path)
    assert run.returncode == 0, run.output
    scripts = sorted((tmp_path / "var" / "stage" / "example_cluster").rglob("rfm_job.sh"))
    text = "\n".join(p.read_text() for p in scripts if "MatchingCheck" in str(p))
    assert "srun --cpu-bind=cores --distribution=block:cyclic --mpi=pmix" in text
    assert "export UCX_TLS=sm,self" in text and "#SBATCH --partition=THIN" in text
    third_party = "\n".join(p.read_text() for p in scripts if "Osu" in str(p) or "Imb" in str(p))
    assert "/apps/imb/2021.7/openmpi-4.1.1/bin/IMB-MPI1 PingPong PingPing" in third_party
    assert "osu-micro-benchmarks/7.3/openmpi-4.1.1/osu_latency\n" in third_party  # OSU's range
    assert "openmpi-4.1.1/osu_bcast -m 1048576" in third_party
    assert "/affinity/affinity" in third_party  # the placement probe runs first


def test_forced_transport_is_caught_by_verification(tmp_path):
    need_stack("openmpi")
    run = reframe([*QUICK, "-n", "MatchingCheck.*transport=ucx-sm", "-p", "openmpi-forced",
                   "-r"], tmp_path,
                  config=ROOT / "tests" / "config" / "negative.py", checks=("matching.py",))
    tc = run.case("MatchingCheck", environ="openmpi-forced", mapping="core")
    assert tc["result"] == "fail"
    assert ("transport openmpi/ucx-sm not verified: requested pml=ucx, the run selected "
            "pml=ob1") in tc["fail_reason"]


def test_a_run_that_took_the_other_netmod_fails_naming_both(tmp_path):
    need_stack("mpich5")
    run = reframe([*QUICK, "-n", "MatchingCheck.*transport=ucx-sm", "-p", "mpich5-forced-ofi",
                   "-r"], tmp_path, config=ROOT / "tests" / "config" / "negative.py",
                  env={"SENTINEL_MPI_PREFIXES": MPI_PREFIXES}, checks=("matching.py",))
    tc = run.case("MatchingCheck", environ="mpich5-forced-ofi", mapping="core")
    assert tc["result"] == "fail"
    assert ("transport mpich/ucx-sm not verified: requested netmod=ucx, the run selected "
            "netmod=ofi") in tc["fail_reason"], tc["fail_reason"]


def test_transport_the_mpi_lacks_fails_with_the_reason(tmp_path):
    need_stack("mpich")
    run = reframe([*QUICK, "-n", "MatchingCheck.*transport=ofi-tcp", "-p", "mpich-claims-ofi",
                   "-r"],
                  tmp_path, config=ROOT / "tests" / "config" / "negative.py",
                  checks=("matching.py",))
    tc = run.case("MatchingCheck", environ="mpich-claims-ofi", mapping="core")
    assert tc["result"] == "fail"
    assert "requested netmod=ofi, the run selected netmod=ucx" in tc["fail_reason"]


PT2PT_VARS = ("latency_0B", "latency_8B", "latency_synchronous_8B", "latency_buffered_8B",
              "latency_ready_8B", "latency_diffbuf_8B", "unilatency_8B", "bw_peak",
              "bibw_peak", "fit_lambda", "fit_bw", "logp_L", "logp_g0", "logp_o", "logp_g",
              "latency_1048576B", "bw_1048576B")


@pytest.mark.parametrize("environ,transport", MATRIX, ids=lambda x: x)
def test_pt2pt_runs_verified_with_curves_fits_and_logp(quick_matrix, environ, transport):
    need_environ(environ)
    tc = quick_matrix.case("Pt2ptCheck", environ=environ, transport=transport, mapping="core")
    assert tc["result"] == "pass", tc.get("fail_reason")
    for seen in _selected(environ, transport):
        assert seen in tc["transport_selected"], tc["transport_selected"]
    perf = {k.split(":")[-1]: v for k, v in tc["perfvalues"].items()}
    # g(1) = RTT(1) - RTT(0) + g(0) may come out below zero: then unresolved, with why
    reported = set(perf) | set(tc.get("unresolved") or {})
    assert set(PT2PT_VARS) <= reported, set(PT2PT_VARS) - reported
    assert perf["latency_8B"][0] > 0 and perf["bw_peak"][0] > 0


def test_binary_of_another_mpi_fails_the_linkage_check(tmp_path):
    need_stack("mpich")
    need_stack("openmpi")
    run = reframe([*QUICK, "-n", "MatchingCheck.*transport=ucx-sm", "-p", "mpich-wrong-cc",
                   "-r"], tmp_path, config=ROOT / "tests" / "config" / "negative.py",
                  checks=("matching.py",))
    tc = run.case("MatchingCheck", environ="mpich-wrong-cc", mapping="core")
    assert tc["result"] == "fail"
    assert tc["fail_phase"] == "sanity"
    assert ("MPI linkage of " in tc["fail_reason"]
            and "the binary runs with openmpi's libmpi.so.40" in tc["fail_reason"]
            and tc["fail_reason"].endswith("the environment is mpich"))
