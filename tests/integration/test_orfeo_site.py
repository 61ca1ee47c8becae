"""The Orfeo worked site: PBS Pro job scripts and the study's references, through ReFrame.

``--dry-run`` writes every job script without submitting it: no PBS server
is needed (none is packaged for Debian or on PyPI). IMB's directory is
given with ``-S ImbCheck.suite_dir``: a dry run scripts the command the
site's layout implies.
"""

import re
import shutil
from pathlib import Path

import pytest

from sentinel.results.references import systems_from_config, validate_file
from tests.integration.conftest import ROOT, Run, reframe

pytestmark = pytest.mark.integration

IMB_DIR = "/apps/imb/2021.7/bin"
ORFEO = ["--system", "orfeo", "--mode", "acceptance", "--dry-run",
         "-S", f"ImbCheck.suite_dir={IMB_DIR}"]


@pytest.fixture(scope="module")
def acceptance(tmp_path_factory) -> Run:
    out = tmp_path_factory.mktemp("orfeo")
    run = reframe([*ORFEO, "-n", "^ImbCheck.*%transport=(openmpi-all|intelmpi-all|ob1-tcp-ib0|"
                                  "ofi-mlx)"], out, checks=("imb.py",))
    assert run.report, run.output[-3000:]
    return run


def _case(run: Run, partition: str, transport: str, mapping: str) -> dict:
    cases = [tc for tc in run.cases("ImbCheck", transport=transport, mapping=mapping)
             if tc["partition"] == partition]
    assert len(cases) == 1, [tc["display_name"] for tc in run.cases("ImbCheck")]
    assert cases[0]["result"] == "pass", cases[0].get("fail_reason")
    return cases[0]


def _script(case: dict) -> list[str]:
    return (Path(case["stagedir"]) / "rfm_job.sh").read_text().splitlines()


def _launch(lines: list[str], transport: str) -> str:
    """The line of a packed job script that launches ``transport``, its exported variables."""
    found = [line for line in lines if line.startswith(f"(cd packed/{transport} && export ")]
    assert len(found) == 1, lines
    return found[0]


def test_node_mapping_is_one_rank_on_each_of_two_exclusive_pbs_hosts(acceptance):
    lines = _script(_case(acceptance, "thin", "openmpi-all", "node"))
    assert lines[0] == "#!/bin/bash"
    assert re.fullmatch(r"#PBS -l walltime=\d+:\d+:\d+", lines[4])
    assert lines[5:8] == ["#PBS -l select=2:mpiprocs=1:ncpus=1", "#PBS -q dssc",
                          "#PBS -l place=scatter:excl"]
    # every launch of the job: the affinity probe, then IMB up to 256 MiB
    launches = [line for line in lines if line.startswith("mpirun ")]
    assert launches[0].startswith("mpirun -np 2 --map-by node --bind-to core ")
    assert launches[1] == (f"mpirun -np 2 --map-by node --bind-to core {IMB_DIR}/IMB-MPI1 "
                           "PingPong PingPing Sendrecv Exchange Allreduce Alltoall Bcast "
                           "Barrier -msglog 28 -iter 1000 -time 10.0")
    # one transport of the family, as the library reads it
    ib0 = _launch(lines, "ob1-tcp-ib0")
    for setting in ("OMPI_MCA_pml=ob1", "OMPI_MCA_btl=self,tcp",
                    "OMPI_MCA_btl_tcp_if_include=ib0", "OMPI_MCA_btl_base_verbose=100"):
        assert f" {setting} " in ib0, ib0
    # vader cannot cross nodes: not in the node packed job
    assert not any("packed/ob1-vader" in line for line in lines)


def test_intel_mpi_node_series_runs_one_rank_per_host_at_the_study_sizes(acceptance):
    lines = _script(_case(acceptance, "gpu", "intelmpi-all", "node"))
    assert lines[5:8] == ["#PBS -l select=2:mpiprocs=1:ncpus=1", "#PBS -q dssc_gpu",
                          "#PBS -l place=scatter:excl"]
    assert "export I_MPI_PIN_DOMAIN=core" in lines
    launches = [line for line in lines if line.startswith("mpirun ")]
    assert launches[1].startswith(f"mpirun -np 2 -ppn 1 {IMB_DIR}/IMB-MPI1 ")
    assert " -msglog 22 " in launches[1]  # the study's Intel MPI rows: IMB's default
    mlx = _launch(lines, "ofi-mlx")
    assert " I_MPI_FABRICS=ofi I_MPI_OFI_PROVIDER=mlx " in mlx, mlx
    assert "I_MPI_DEBUG=5" in mlx


def test_core_mapping_packs_both_ranks_on_one_exclusive_host(acceptance):
    lines = _script(_case(acceptance, "thin", "openmpi-all", "core"))
    assert lines[5:8] == ["#PBS -l select=1:mpiprocs=2:ncpus=2", "#PBS -q dssc",
                          "#PBS -l place=pack:excl"]
    launches = [line for line in lines if line.startswith("mpirun ")]
    assert launches[1].startswith(f"mpirun -np 2 --map-by core --bind-to core {IMB_DIR}/")


def test_one_study_row_is_read_back_through_reframes_ref_lookup(acceptance):
    # the study: node, ob1, tcp, ib0: THIN 12.172 us, 2447.668 MB/s; GPU 13.910, 2162.637
    thin = _case(acceptance, "thin", "ob1-tcp-ib0", "node")
    assert thin["reference_status"].endswith("orfeo.yaml: orfeo:thin/openmpi/ob1-tcp-ib0/node")
    assert thin["reference_entry"] == {
        "pingpong_fit_lambda": ["12.172", "-0.1", "0.1", "us"],
        "pingpong_fit_bw": ["2447.668", "-0.1", "0.1", "MB/s"]}
    gpu = _case(acceptance, "gpu", "ob1-tcp-ib0", "node")
    assert gpu["reference_entry"]["pingpong_fit_lambda"] == ["13.91", "-0.1", "0.1", "us"]
    # Intel MPI, node, ofi, mlx: THIN 1.192 us, 11827.264 MB/s
    mlx = _case(acceptance, "thin", "ofi-mlx", "node")
    assert mlx["reference_entry"]["pingpong_fit_bw"] == ["11827.264", "-0.1", "0.1", "MB/s"]


def test_the_acceptance_runs_what_the_study_requires_and_its_dry_run_passes(tmp_path):
    """The documented command (docs/acceptance.md), on the checks the study's Jacobi needs."""
    run = reframe(["--system", "orfeo", "--mode", "acceptance", "--dry-run"], tmp_path,
                  checks=("pt2pt.py", "jacobi.py"))
    assert run.returncode == 0, run.output[-3000:]
    ran = [tc for tc in run.cases() if tc["result"] == "pass" and not tc["display_name"]
           .startswith("BenchBuild")]
    jacobi = {(tc["partition"], tc["transport"], tc["mapping"], tc["mode"], tc["threads"])
              for tc in ran if tc["display_name"].startswith("JacobiCheck")}
    # the study's four Jacobi rows, and no series the references do not cover
    assert jacobi == {(p, "ucx-sm", m, "pure", "one") for p in ("thin", "gpu")
                      for m in ("core", "socket")}
    pings = {(tc["partition"], tc["transport"], tc["mapping"]) for tc in ran
             if tc["display_name"].startswith("Pt2ptCheck")}
    # the ping-pongs the series' model takes B and T_L from, in packed jobs of theirs alone
    assert {x for x in pings if x[1] != "openmpi-all"} == {
        (p, "ucx-sm", m) for p in ("thin", "gpu") for m in ("core", "socket")}
    packed = [tc for tc in ran if tc["transport"] == "openmpi-all"]
    assert packed and all("ucx-sm" in (Path(tc["stagedir"]) / "rfm_job.sh").read_text()
                          and "ob1-tcp" not in (Path(tc["stagedir"]) / "rfm_job.sh").read_text()
                          for tc in packed)
    skipped = [tc["skip_reason"] for tc in run.cases() if "not among the requirements of orfeo"
               in (tc.get("skip_reason") or "")]
    assert skipped and all("has no entry for orfeo:" in why for why in skipped)


def test_the_validator_accepts_the_study_references(site_configuration):
    path = ROOT / "config" / "references" / "orfeo.yaml"
    assert validate_file(path, systems_from_config(site_configuration)) == []


def test_the_listing_is_the_studys_matrix(tmp_path):
    run = reframe(["--system", "orfeo", "-n", "^ImbCheck", "-l"], tmp_path, checks=("imb.py",))
    assert run.returncode == 0, run.output[-3000:]
    listed = set(re.findall(r"%transport=(\S+) %mapping=(\w+)", run.output))
    openmpi = {"ob1-tcp-ib0", "ob1-tcp-br0", "ob1-vader", "ucx-sm", "ucx-rc"}
    intelmpi = {"shm", "ofi-tcp", "ofi-sockets", "ofi-shm", "ofi-mlx", "shm-ofi-tcp",
                "shm-ofi-sockets", "shm-ofi-mlx"}
    assert {t for t, _ in listed} == openmpi | intelmpi
    # shared memory is never listed between nodes
    assert not {("ob1-vader", "node"), ("ucx-sm", "node"), ("shm", "node"),
                ("ofi-shm", "node")} & listed


def test_torque_asks_for_distinct_nodes_exclusively(tmp_path):
    run = reframe(["--system", "torque_site", "--dry-run", "-S", f"ImbCheck.suite_dir={IMB_DIR}",
                   "-n", "^ImbCheck.*%transport=ob1-tcp-ib0"], tmp_path,
                  config=ROOT / "tests" / "config" / "torque.py", checks=("imb.py",))
    assert run.returncode == 0, run.output[-3000:]
    node = _case(run, "thin", "ob1-tcp-ib0", "node")
    lines = _script(node)
    assert lines[5:8] == ["#PBS -l nodes=2:ppn=1", "#PBS -q dssc", "#PBS -n"]
    assert "export OMPI_MCA_btl_tcp_if_include=ib0" in lines
    core = _script(_case(run, "thin", "ob1-tcp-ib0", "core"))
    assert core[5:8] == ["#PBS -l nodes=1:ppn=2", "#PBS -q dssc", "#PBS -n"]


def _catalogue_listing(check: str, checks_file: str, tmp_path) -> set[tuple[str, str]]:
    """(transport, mapping) of each variant of ``check`` the catalogue site lists."""
    run = reframe(["--system", "catalogue_site", "-n", f"^{check}", "-l"], tmp_path,
                  config=ROOT / "tests" / "config" / "catalogue.py", checks=(checks_file,))
    assert run.returncode == 0, run.output[-3000:]
    return set(re.findall(rf"^- {check} %transport=(\S+) %mapping=(\w+)", run.output,
                          re.MULTILINE))


def test_every_catalogue_entry_and_interface_generates_and_lists(tmp_path):
    from sentinel.mpi.transports import CATALOGUE, lookup

    listed = _catalogue_listing("Pt2ptCheck", "pt2pt.py", tmp_path)
    # A pair with halves is one level at a time in a 2-rank check: its halves measure it.
    own = [t for t in CATALOGUE.values() if not t.halves]
    expected = {(t.name, m) for t in own for m in ("core", "socket", "node")
                if not (t.intra_node and m == "node")}
    expected |= {(lookup(t.family, f"{t.name}-ib0").name, m) for t in own
                 if t.interface_vars for m in ("core", "socket", "node")}
    assert {t for t, _ in expected} <= {t for t, _ in listed}
    assert {(t, m) for t, m in expected} <= listed
    assert not {t for t, _ in listed} & {t.name for t in CATALOGUE.values() if t.halves}


def test_every_production_pair_generates_where_both_halves_are_offered(tmp_path):
    from sentinel.mpi.transports import CATALOGUE, lookup

    listed = _catalogue_listing("FabricCheck", "fabric.py", tmp_path)
    pairs = [t for t in CATALOGUE.values() if t.halves]
    expected = {t.name for t in pairs}
    expected |= {lookup(t.family, f"{t.name}-ib0").name for t in pairs if t.interface_vars}
    assert expected <= {t for t, _ in listed}
    # One rank per node is one level: the off-node half measures it, the pair is not run.
    assert {m for t, m in listed if t in expected} == {"core", "socket"}


def test_a_processor_without_numa_domains_is_said_once_per_partition_and_its_level_skipped(
        tmp_path):
    config = tmp_path / "config"
    shutil.copytree(ROOT / "config", config, ignore=shutil.ignore_patterns("__pycache__"))
    site = config / "systems" / "example_cluster.py"
    text = site.read_text()
    numa = ('            "numa_nodes": [hex(socket_mask << (s * cores_per_socket)) '
            'for s in range(sockets)],\n')
    assert numa in text
    site.write_text(text.replace(numa, ""))
    run = reframe(["--system", "example_cluster", "-n", "^HybridCheck.*ob1-tcp.*mapping=core",
                   "--dry-run"], tmp_path, config=config / "settings.py", checks=("hybrid.py",))
    assert run.returncode == 0, run.output[-3000:]
    said = [line for line in run.output.splitlines() if "processor topology.numa_nodes" in line]
    # one line a partition, naming the key and what fills it
    assert sorted(re.search(r"partition (\S+): ", line).group(1) for line in said) == [
        "example_cluster:gpu", "example_cluster:thin", "example_cluster:thin-node"], said
    assert all("reframe --detect-host-topology" in line for line in said)
    cases = run.cases("HybridCheck")
    numa_cases = [tc for tc in cases if tc["threads"] == "numa"]
    assert numa_cases and all(tc["result"] == "skip" and "topology.numa_nodes" in
                              tc["skip_reason"] for tc in numa_cases)
    assert any(tc["threads"] == "socket" and tc["result"] == "pass" for tc in cases)
