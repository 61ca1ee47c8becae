"""Every check class, set up and judged offline on outputs of this project's own runs.

The real check classes run through ReFrame's setup and (dry-run) job-script
generation on the fixed ``offline`` system, then sanity and performance on
the captured job outputs in ``tests/data/checks`` (``README.md`` there says
how each was produced). Nothing here needs an MPI, a compiler or a scheduler.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from reframe.core.exceptions import PerformanceError, SanityError, SkipTestError
from reframe.utility import import_module_from_file

from sentinel.analysis import rma as rma_analysis
from sentinel.analysis.variables import all_specs
from sentinel.errors import SentinelError
from sentinel.parsers import imb
from sentinel.site.sources import file_sha256
from tests.conftest import DATA, ROOT
from tests.offline import Offline, check_classes, offline_runtime


@pytest.fixture(scope="module")
def offline(tmp_path_factory):
    prefix = tmp_path_factory.mktemp("offline")
    with offline_runtime(prefix):
        yield Offline(prefix)


@pytest.fixture
def references(tmp_path, monkeypatch):
    """A reference file for the offline system, written by the test."""
    monkeypatch.setenv("SENTINEL_REFERENCES", str(tmp_path))

    def write(body: str) -> Path:
        path = tmp_path / "offline.yaml"
        path.write_text(body)
        return path
    return write


#: The parameters the outputs in tests/data/checks were captured with (the
#: quick mode's, config/common.py) where they change what a check expects.
CAPTURED = {"max_size": 1048576}
#: The standard suites' captures made before they repeated their launches.
ONE_LAUNCH = {"repetitions": 1}


def one(offline, check: str, env: str, partition: str = "cpu", variables=None, **params):
    cases = offline.cases([(check, params)], variables={**CAPTURED, **(variables or {})},
                          environ=env, partition=partition)
    assert len(cases) == 1, [c.check.name for c in cases]
    return cases[0]


OB1 = {"transport": "openmpi/ob1-vader", "mapping": "core"}


def test_pt2pt_script_sanity_and_values(offline):
    case = one(offline, "Pt2ptCheck", "openmpi", **OB1)
    script = case.script()
    assert "export OMPI_MCA_pml=ob1" in script and "export OMPI_MCA_btl=self,vader" in script
    assert "mpirun -np 2 --map-by core --bind-to core" in script
    assert "> rfm_ldd.txt" in script
    case.give_outputs("pt2pt-openmpi-ob1-vader-core")
    case.sanity()
    assert case.check.transport_selected
    assert "libmpi.so.40" in case.check.mpi_linkage
    values = case.performance()
    assert values["latency_8B"][4] == "us" and 0 < values["latency_8B"][0] < 10
    assert values["bw_peak"][4] == "MB/s" and values["bw_peak"][0] > 100
    assert {"fit_lambda", "fit_bw", "logp_L", "latency_synchronous_8B"} <= set(values)


def test_pt2pt_over_ucx_on_mpich(offline):
    case = one(offline, "Pt2ptCheck", "mpich", transport="mpich/ucx-sm", mapping="core")
    assert "export UCX_TLS=sm,self" in case.script()
    case.give_outputs("pt2pt-mpich-ucx-sm-core")
    case.sanity()
    assert "libmpich.so.12" in case.check.mpi_linkage


def test_provenance_from_what_the_job_and_build_left(offline):
    """What the job gathered (tests/data/provenance), the library's own log, the transport."""
    case = one(offline, "Pt2ptCheck", "mpich", transport="mpich/ucx-sm", mapping="core")
    assert "> rfm_provenance.txt 2>&1 || true" in case.script()
    build = case.fixture("build")
    assert "--version" in (Path(build.stagedir) / "rfm_build.sh").read_text()
    case.give_outputs("pt2pt-mpich-ucx-sm-core")
    shutil.copy(DATA / "provenance" / "job-openmpi-ucx-sm.txt",
                case.stagedir / "rfm_provenance.txt")
    case.sanity()
    found = case.check.provenance
    assert found["mpi"] == "MPICH Version: 4.0.2"
    assert found["mpi_library"] == "libmpich.so.12 => /lib/x86_64-linux-gnu/libmpich.so.12"
    assert found["ucx"] == "1.13.1"  # logged by UCX itself: no ucx_info on PATH there
    assert found["libfabric"] == "1.17.0"
    assert found["transport_env"] == "MPIR_CVAR_CH4_NETMOD=ucx UCX_TLS=sm,self"
    assert (found["kernel"], found["cpu"]) == ("6.18.44-fc-v782", "AMD EPYC")
    assert found["nodes"]  # the (dry-run) job's node list, else the node's name
    # Offline nothing was compiled: the build recorded no compiler.
    assert found["compiler"].startswith("not found (BenchBuild")
    assert "spack_spec" not in found


def test_provenance_without_the_gathered_file_says_so(offline):
    case = one(offline, "Pt2ptCheck", "openmpi", **OB1)
    case.give_outputs("pt2pt-openmpi-ob1-vader-core")
    case.sanity()
    found = case.check.provenance
    assert found["kernel"] == "not found (the job wrote no rfm_provenance.txt)"
    assert found["mpi"].startswith("Open MPI v4.1.4")


def test_reference_lookup_and_band(offline, references):
    path = references(
        "Pt2ptCheck:\n"
        "  $index: [$partition, $environ, transport_name, mapping]\n"
        "  offline:cpu:\n    openmpi:\n      ob1-vader:\n        core:\n"
        "          bw_peak: [1.0e+9, -0.1, 0.1, MB/s]\n")
    case = one(offline, "Pt2ptCheck", "openmpi", **OB1)
    assert case.check.reference_status.startswith(
        f"{path}: offline:cpu/openmpi/ob1-vader/core; no learnt baseline: ")
    case.give_outputs("pt2pt-openmpi-ob1-vader-core")
    case.sanity()
    with pytest.raises(PerformanceError, match=r"bw_peak=.* MB/s, expected 1000000000.0"):
        case.performance()


def test_acceptance_skips_what_the_reference_file_does_not_cover(offline, references):
    references("Pt2ptCheck:\n  $index: [$partition, $environ, transport_name, mapping]\n")
    skipped = one(offline, "Pt2ptCheck", "openmpi",
                  variables={"require_partition_reference": True}, **OB1)
    assert re.fullmatch(r"not among the requirements of offline: .* has no entry for "
                        r"offline:cpu/openmpi/ob1-vader/core \(the acceptance runs what the "
                        r"reference file covers\)", skipped.skipped or "")
    # outside an acceptance the same combination runs, without a reference
    case = one(offline, "Pt2ptCheck", "openmpi", **OB1)
    assert case.skipped is None and case.check.reference_status.startswith("no reference: ")


def test_acceptance_runs_a_ping_pong_a_required_jacobi_series_takes_its_model_from(
        offline, references):
    references("Pt2ptCheck:\n  $index: [$partition, $environ, transport_name, mapping]\n"
               "JacobiCheck:\n"
               "  $index: [$partition, $environ, transport_name, mapping, mode, threads]\n"
               "  offline:cpu:\n    openmpi:\n      ob1-vader:\n        core:\n"
               "          pure:\n            one:\n"
               "              mlups_N1: [100.0, -0.1, 0.1, MLUP/s]\n")
    feeding = one(offline, "Pt2ptCheck", "openmpi",
                  variables={"require_partition_reference": True}, **OB1)
    assert feeding.skipped is None
    assert feeding.check.reference_status.endswith("run for a required test that takes its "
                                                   "results")
    other = one(offline, "Pt2ptCheck", "openmpi", variables={"require_partition_reference": True},
                transport="openmpi/ob1-tcp", mapping="core")
    assert "not among the requirements of offline" in (other.skipped or "")


def test_acceptance_fails_a_system_without_reference_file(offline, monkeypatch, tmp_path):
    monkeypatch.setenv("SENTINEL_REFERENCES", str(tmp_path / "none"))
    with pytest.raises(SentinelError, match=r"a reference is required \(acceptance\): .*"
                                            r"offline.yaml does not exist"):
        one(offline, "Pt2ptCheck", "openmpi", variables={"require_partition_reference": True},
            **OB1)


def _without(*patterns: str):
    """An edit of a captured stdout that drops the result lines matching a pattern."""
    def edit(text: str) -> str:
        return "".join(line for line in text.splitlines(True)
                       if not any(re.search(p, line) for p in patterns))
    return edit


def test_a_complete_output_lacking_sizes_fails_naming_them(offline):
    case = one(offline, "Pt2ptCheck", "openmpi", **OB1)
    # Ends with SENTINEL_DONE, but the bandwidth of two sizes is not there.
    case.give_outputs("pt2pt-openmpi-ob1-vader-core",
                      edit=_without(r"metric=bw .*bytes=(4096|8192) "))
    with pytest.raises(SanityError, match=r"2 variable\(s\) its parameters or references "
                                          r"call for are missing from the results: "
                                          r"bw_4096B, bw_8192B \(output: .*rfm_job.out\)"):
        case.sanity()


def test_a_referenced_variable_missing_fails(offline, references):
    references("Pt2ptCheck:\n  $index: [$partition, $environ, transport_name, mapping]\n"
               "  offline:cpu:\n    openmpi:\n      ob1-vader:\n        core:\n"
               "          latency_8388608B: [1.0, -0.5, 0.5, us]\n")
    case = one(offline, "Pt2ptCheck", "openmpi", **OB1)
    assert case.check.referenced_variables == ["latency_8388608B"]
    case.give_outputs("pt2pt-openmpi-ob1-vader-core")
    with pytest.raises(SanityError, match=r"missing from the results: latency_8388608B"):
        case.sanity()


def test_a_value_that_cannot_be_physical_is_unresolved(offline, references):
    # o_s(1) edited to 3 us: the classic LogP L = L + g(1) - o_s(1) - o_r(1) < 0.
    def big_overhead(text: str) -> str:
        return re.sub(r"(metric=logp_os mode=standard bytes=1 .*?median_us=)\S+", r"\g<1>3.0",
                      text)
    case = one(offline, "Pt2ptCheck", "openmpi", **OB1)
    case.give_outputs("pt2pt-openmpi-ob1-vader-core", edit=big_overhead)
    case.sanity()
    values = case.performance()
    assert "logp_L_classic" not in values and "logp_L" in values
    assert re.fullmatch(r"-\S+ us is not positive, so it is not a measurement "
                        r"\(parameterised and classic LogP parameters\)",
                        case.check.unresolved["logp_L_classic"])
    # Referenced, it cannot pass: the reference asks for a measurement.
    references("Pt2ptCheck:\n  $index: [$partition, $environ, transport_name, mapping]\n"
               "  offline:cpu:\n    openmpi:\n      ob1-vader:\n        core:\n"
               "          logp_L_classic: [0.5, -0.5, 0.5, us]\n")
    case = one(offline, "Pt2ptCheck", "openmpi", **OB1)
    case.give_outputs("pt2pt-openmpi-ob1-vader-core", edit=big_overhead)
    with pytest.raises(SanityError, match=r"referenced variable\(s\) unresolved: "
                                          r"logp_L_classic \(-\S+ us is not positive"):
        case.sanity()


def test_another_transport_in_the_log_fails_naming_it(offline):
    case = one(offline, "Pt2ptCheck", "openmpi", transport="openmpi/ucx-sm", mapping="core")
    case.give_outputs("pt2pt-openmpi-ob1-vader-core")
    with pytest.raises(SanityError, match="transport openmpi/ucx-sm not verified"):
        case.sanity()


def test_truncated_output_is_named(offline):
    case = one(offline, "Pt2ptCheck", "openmpi", **OB1)
    case.give_outputs("pt2pt-openmpi-ob1-vader-core",
                      edit=lambda text: text.split("SENTINEL_DONE")[0])
    with pytest.raises(SanityError, match="truncated"):
        case.sanity()


def test_matching_values_and_queue_model(offline):
    # captured with the nightly mode's lengths (config/common.py), adaptive batches
    nightly = {"lengths": [10, 1000]}
    case = one(offline, "MatchingCheck", "openmpi", variables=nightly, **OB1)
    script = case.script()
    assert "--algorithms tag,comm" in script and "--batches adaptive" in script
    assert "--checkpoint 45 " in script
    case.give_outputs("matching-openmpi-ob1-vader-core")
    case.sanity()
    assert case.check.queue_model == ("pingpong: per-communicator; umq: per-communicator; "
                                      "prq: per-communicator")
    assert set(case.check.queue_evidence) == {"pingpong", "umq", "prq"}
    values = case.performance()
    assert {"match_r2_tag", "iot_tag", "diff_tag", "match_time_tag"} <= set(values)
    assert values["iot_tag"][4] == "us" and values["match_time_tag"][4] == "ns"
    assert all(values[n][0] > 0 for n in values if n.startswith("match_time"))
    # every value with an interval is stored with it, for the report
    lo, hi = case.check.intervals["match_time_tag"]
    assert lo < values["match_time_tag"][0] < hi
    # one message per communicator is never searched past: a bound, not a value
    assert "match_time_comm" not in values
    assert case.check.unresolved["match_time_comm"].startswith("< ")


def test_fixed_batches_need_three_sizes(offline):
    with pytest.raises(SentinelError, match=r"MatchingCheck.messages=\[1, 2\]: the fit needs "
                                            "at least 3 distinct batch sizes"):
        one(offline, "MatchingCheck", "openmpi",
            variables={"batches": "fixed", "messages": [1, 2]}, **OB1)


def test_hybrid_threads_are_placed_and_too_many_are_skipped(offline):
    case = one(offline, "HybridCheck", "openmpi", mode="funnelled", threads="one", **OB1)
    assert "export OMP_PLACES=cores" in case.script()
    case.give_outputs("hybrid-openmpi-ob1-vader-core-funnelled-1")
    case.sanity()
    assert any(name.startswith("pingpong_") for name in case.performance())
    big = one(offline, "HybridCheck", "openmpi", mode="funnelled", threads="node", **OB1)
    assert big.skipped == "2 rank(s) x 2 threads per node; partition offline:cpu has 2 " \
                          "cores per node"
    # one socket, one NUMA domain: both are the whole node, measured as threads=node
    numa = one(offline, "HybridCheck", "openmpi", mode="funnelled", threads="numa", **OB1)
    assert numa.skipped == "threads=numa is 2 core(s) on partition offline:cpu, as " \
                           "threads=node: measured there"


def test_jacobi_series_plan_and_model(offline):
    pt2pt, jacobi = offline.cases([("Pt2ptCheck", OB1),
                                   ("JacobiCheck", {"mode": "pure", "threads": "one", **OB1})],
                                  variables=CAPTURED, environ="openmpi")
    assert jacobi.check.series == [1, 2] and jacobi.check.num_tasks == 2
    script = jacobi.script()
    assert "mpirun -np 1 " in script and "mpirun -np 2 " in script
    pt2pt.give_outputs("pt2pt-openmpi-ob1-vader-core")
    pt2pt.sanity()
    jacobi.give_outputs("jacobi-openmpi-ob1-vader-core-pure-1")
    jacobi.sanity()
    values = jacobi.performance()
    assert {"mlups_N1", "mlups_N2", "model_mlups_N2", "model_ratio_N2", "t_halo_N2"} <= set(values)
    assert values["model_ratio_N2"][0] > 0
    # the Orfeo study's N P(L,1) / P(L,N), measured
    assert values["scaling_ratio_N2"][0] == pytest.approx(
        2 * values["mlups_N1"][0] / values["mlups_N2"][0])
    assert jacobi.check.checksums.startswith("1:")


def test_jacobi_series_across_nodes_is_planned_off_cluster(offline):
    tcp = {"transport": "openmpi/ob1-tcp", "mapping": "node"}
    _, case = offline.cases([("Pt2ptCheck", tcp),
                             ("JacobiCheck", {"mode": "pure", "threads": "one", **tcp})],
                            environ="openmpi", partition="cluster")
    assert case.check.series == [1, 2, 4]
    assert case.check.num_tasks_per_node == 1
    script = case.script()
    assert "#SBATCH --ntasks=4" in script and "#SBATCH --ntasks-per-node=1" in script
    assert "srun --ntasks=1 --cpus-per-task=1" not in script  # a launch is one step
    assert "--nodes=2 --ntasks=2 --ntasks-per-node=1 --cpus-per-task=1" in script


def test_jacobi_grid_and_ranks_per_node_of_the_node_mapping(offline):
    tcp = {"transport": "openmpi/ob1-tcp", "mapping": "node"}
    _, case = offline.cases([("Pt2ptCheck", tcp),
                             ("JacobiCheck", {"mode": "pure", "threads": "one", **tcp})],
                            variables={"dims": [2, 2, 2], "ranks_per_node": 2},
                            environ="openmpi", partition="cluster")
    assert case.check.series == [2, 4, 8]  # whole nodes of 2 ranks, up to the grid's 8
    script = case.script()
    assert "#SBATCH --ntasks=8" in script and "#SBATCH --ntasks-per-node=2" in script
    launches = [line for line in script.splitlines() if line.startswith("srun")]
    assert ["--dims 2,2,2" in line for line in launches] == [False, False, True]
    assert all("--distinct-cpus" in line for line in launches)  # 2 ranks share a node


def test_imb_through_the_probe_and_its_variants(offline):
    case = one(offline, "ImbCheck", "intelmpi", transport="intelmpi/shm", mapping="core")
    script = case.script()
    assert script.count("/opt/intel/mpi/bin/IMB-MPI1 PingPong") == 3  # repetitions
    assert script.index("/affinity") < script.index("IMB-MPI1 PingPong")
    case.give_outputs("imb-intelmpi-shm-core")
    case.sanity()
    values = case.performance()
    assert {"pingpong_latency_8B", "pingpong_bw_peak", "allreduce_latency_8B",
            "barrier_latency", "pingpong_fit_bw"} <= set(values)
    # each value the median of the three launches, within their range (75 %)
    text = (DATA / "checks" / "imb-intelmpi-shm-core" / "rfm_job.out").read_text()
    runs = [imb.parse(chunk).table("PingPong").column("t[usec]")[8] for chunk in imb.split(text)]
    assert len(runs) == 3 and values["pingpong_latency_8B"][0] == sorted(runs)[1]
    assert case.check.intervals["pingpong_latency_8B"] == [min(runs), max(runs)]
    assert case.check.interval_coverage["pingpong_latency_8B"] == 0.75
    assert set(case.check.intervals) == set(values) - {"host_roundtrip", "host_copy_bw"}
    assert case.check.program_path == "/opt/intel/mpi/bin/IMB-MPI1"
    names = {c.check.name.split()[0] for c in offline.cases(
        [(n, {"transport": "openmpi/ob1-vader", "mapping": "core"})
         for n in ("ImbCheck", "ImbSourceCheck", "ImbSpackCheck")], environ="openmpi")}
    assert names == {"ImbCheck", "ImbSourceCheck"}  # no +spack environment here


NET = {"transport": "intelmpi/ofi-tcp", "mapping": "node"}
NET_CAPTURE = "collectives-intelmpi-ofi-tcp-node-net"


def test_collectives_series_over_the_nodes_in_one_imb_launch(offline):
    case = one(offline, "CollectivesCheck", "intelmpi", partition="cluster",
               variables=ONE_LAUNCH, **NET)
    assert case.check.series == [1, 2, 4]
    script = case.script()
    assert "#SBATCH --ntasks=4" in script and "#SBATCH --ntasks-per-node=1" in script
    assert "-npmin 1 -msglen imb_sizes.txt" in script
    assert script.count("srun ") == 2  # the probe, then IMB once: no launch per count
    assert (Path(case.check.stagedir) / "imb_sizes.txt").read_text() == "8\n65536\n"
    case.give_outputs(NET_CAPTURE)
    case.sanity()
    values = case.performance()
    assert len(values) == 7 * 2 * 3 + 3  # 7 sized operations x 2 sizes x P = 1, 2, 4; barrier
    assert values["allreduce_latency_8B_P4"][4] == "us"
    assert values["barrier_latency_P4"][0] > values["barrier_latency_P1"][0]


def test_a_launch_missing_or_cut_short_is_named(offline):
    def cut(text: str) -> str:  # the third launch stopped in its PingPong table
        return text[:text.rindex("# Benchmarking PingPing")]

    def lost(text: str) -> str:  # the third launch printed nothing
        return text[:text.rindex("#    Intel(R) MPI Benchmarks")]
    for edit, message in ((cut, r"IMB output is truncated: no '# All processes entering "
                                r"MPI_Finalize' line \(last table: PingPong"),
                          (lost, r"2 IMB-MPI1 output\(s\), the job launched it 3 time\(s\) "
                                 r"\(repetitions\): a launch failed or was cut short")):
        case = one(offline, "ImbCheck", "intelmpi", transport="intelmpi/shm", mapping="core")
        case.give_outputs("imb-intelmpi-shm-core", edit)
        with pytest.raises(SanityError, match=message):
            case.sanity()


def test_collectives_placement_and_counts_are_proven(offline):
    def crowd(text: str) -> str:  # rank 1 reported on rank 0's node
        return re.sub(r"(SENTINEL_AFFINITY rank=1 host=)\S+", r"\1m1", text)

    def drop_p4(text: str) -> str:  # a run that never reached 4 processes
        return re.sub(r"# Benchmarking Alltoall \n# #processes = 4.*?(?=\n#-{10,}\n# Bench)",
                      "", text, flags=re.S)
    for edit, message in ((crowd, r"4-rank launch: placement node not honoured: mapping "
                                  r"node: 2 ranks \(0, 1\) on m1"),
                          (drop_p4, r"IMB ran Alltoall at \[1, 2\] process counts, the "
                                    r"series is \[1, 2, 4\]")):
        case = one(offline, "CollectivesCheck", "intelmpi", partition="cluster",
               variables=ONE_LAUNCH, **NET)
        case.give_outputs(NET_CAPTURE, edit)
        with pytest.raises(SanityError, match=message):
            case.sanity()


OSU_NET = {"transport": "openmpi/ob1-tcp", "mapping": "node"}


def _osu_collective(offline, program: str, repetitions: int = 1):
    return one(offline, "OsuCollectivesCheck", "openmpi", partition="cluster",
               benchmark=program, variables={"suite_dir": "/opt/osu",
                                             "repetitions": repetitions}, **OSU_NET)


def test_osu_collectives_one_launch_per_count_each_after_its_probe(offline):
    case = _osu_collective(offline, "osu_allreduce")
    assert case.check.series == [2, 4]  # OSU needs two processes: not P = 1
    launches = [line.split()[-3 if "-m" in line else -1].rsplit("/", 1)[-1]
                for line in case.script().splitlines() if line.startswith("srun")]
    assert launches == ["affinity", "osu_allreduce", "affinity", "osu_allreduce"]
    case.give_outputs("osu-allreduce-collectives-openmpi-ob1-tcp-node-net")
    case.sanity()
    values = case.performance()
    assert set(values) == {f"allreduce_latency_{s}B_P{p}" for s in (8, 65536) for p in (2, 4)}
    barrier = _osu_collective(offline, "osu_barrier")
    barrier.give_outputs("osu-barrier-collectives-openmpi-ob1-tcp-node-net")
    barrier.sanity()
    assert set(barrier.performance()) == {"barrier_latency_P2", "barrier_latency_P4"}


def _osu_twice(text: str) -> str:
    """Each OSU launch of a one-launch capture followed by a copy 1.5x slower (an edit)."""
    def slower(table: str) -> str:
        return re.sub(r"^(\d+\s+)([\d.]+)$", lambda m: f"{m[1]}{1.5 * float(m[2]):.2f}",
                      table, flags=re.M)
    return re.sub(r"# OSU MPI.*?(?=SENTINEL_CONFIG|\Z)", lambda m: m[0] + slower(m[0]),
                  text, flags=re.S)


def test_osu_collectives_repeat_each_count_after_its_probe(offline):
    case = _osu_collective(offline, "osu_allreduce", repetitions=2)
    launches = [line.split()[-3 if "-m" in line else -1].rsplit("/", 1)[-1]
                for line in case.script().splitlines() if line.startswith("srun")]
    assert launches == ["affinity", "osu_allreduce", "osu_allreduce", "affinity",
                        "osu_allreduce", "osu_allreduce"]
    case.give_outputs("osu-allreduce-collectives-openmpi-ob1-tcp-node-net", _osu_twice)
    case.sanity()
    values = case.performance()
    # 13.38 us at P = 2, then 20.07: the median of two is their mean, the range 50 %
    assert values["allreduce_latency_8B_P2"][0] == pytest.approx((13.38 + 20.07) / 2)
    assert case.check.intervals["allreduce_latency_8B_P2"] == [13.38, 20.07]
    assert case.check.interval_coverage["allreduce_latency_8B_P2"] == 0.5


def test_osu_collectives_missing_launch_or_misplaced_rank_is_named(offline):
    def cut_last(text: str) -> str:  # the 4-rank launch printed nothing
        return text[:text.rindex("# OSU MPI Allreduce")]

    def crowd(text: str) -> str:  # the 4-rank launch put ranks 0 and 1 on one node
        head, tail = text.rsplit("SENTINEL_CONFIG bench=affinity ranks=4", 1)
        return head + "SENTINEL_CONFIG bench=affinity ranks=4" + tail.replace(
            "rank=1 host=m2", "rank=1 host=m1", 1)
    for edit, message in ((cut_last, r"1 OSU output\(s\), the series \[2, 4\] has 2 launches"),
                          (crowd, r"4-rank launch: placement node not honoured: mapping node: "
                                  r"2 ranks \(0, 1\) on m1")):
        case = _osu_collective(offline, "osu_allreduce")
        case.give_outputs("osu-allreduce-collectives-openmpi-ob1-tcp-node-net", edit)
        with pytest.raises(SanityError, match=message):
            case.sanity()


def test_osu_latency_through_the_probe(offline):
    case = one(offline, "OsuCheck", "openmpi", benchmark_info=lambda b: b[0] == "osu_latency",
               variables={"suite_dir": "/opt/osu", **ONE_LAUNCH}, **OB1)
    assert case.skipped is None, case.skipped
    case.give_outputs("osu-latency-openmpi-ob1-vader-core")
    case.sanity()
    values = case.performance()
    assert values["latency_8B"][4] == "us" and {"fit_lambda", "latency_4194304B"} <= set(values)
    assert "4096" in case.check.protocol_switches.split(",")


def test_osu_without_binaries_is_skipped_naming_where_it_looked(offline):
    case = one(offline, "OsuCheck", "openmpi", benchmark_info=lambda b: b[0] == "osu_latency",
               **OB1)
    assert case.skipped and "osu_latency" in case.skipped
    assert "OsuSourceCheck builds it from the release tarball" in case.skipped


def test_release_builds_use_the_wrappers(offline, tmp_path):
    tarball = tmp_path / "suite.tar.gz"
    tarball.write_bytes(b"not fetched from the network in a unit test")
    fetch = {"url": f"file://{tarball}", "sha256": file_sha256(tarball)}
    osu, imb = (one(offline, name, "openmpi", variables=fetch, **OB1, **extra)
                for name, extra in (("OsuSourceCheck",
                                     {"benchmark_info": lambda b: b[0] == "osu_latency"}),
                                    ("ImbSourceCheck", {})))
    osu_build = Path(osu.fixture("suite_build").stagedir) / "rfm_build.sh"
    imb_build = Path(imb.fixture("suite_build").stagedir) / "rfm_build.sh"
    prefix = osu.fixture("suite_build").install_prefix
    assert f'./configure CC="mpicc.openmpi" CXX="mpicc.openmpi" --prefix={prefix}' in \
        osu_build.read_text()
    assert "make install" in osu_build.read_text()
    text = imb_build.read_text()
    assert 'make -j 2 CC="mpicc.openmpi" CXX="mpicc.openmpi"' in text and "TARGET=MPI1" in text
    assert f"cp IMB-MPI1 {imb.fixture('suite_build').install_prefix}/bin/" in text
    assert osu.skipped is None and "osu_latency" in osu.script()


def test_every_check_class_and_its_declaration_name_each_other():
    modules = [import_module_from_file(str(path))
               for path in sorted((ROOT / "checks").glob("*.py"))]
    registered = {cls for module in modules for cls in module._rfm_test_registry._tests}
    classes = check_classes()
    assert registered <= set(classes.values())
    assert {"OsuSpackCheck", "ImbSpackCheck"} <= classes.keys()
    for name, cls in classes.items():
        assert name in cls.spec.checks, name
    declared = {name for spec in all_specs().values() for name in spec.checks}
    assert declared == set(classes)


def test_jacobi_series_stops_at_max_nodes(offline):
    tcp = {"transport": "openmpi/ob1-tcp", "mapping": "node"}
    _, case = offline.cases([("Pt2ptCheck", tcp),
                             ("JacobiCheck", {"mode": "pure", "threads": "one", **tcp})],
                            variables={"max_nodes": 2}, environ="openmpi", partition="cluster")
    assert case.check.series == [1, 2]  # of the partition's 4 nodes, as the nightly asks
    assert "#SBATCH --ntasks=2" in case.script()


def test_ring_series_and_its_line(offline):
    case = one(offline, "RingCheck", "openmpi", **OB1)
    assert case.check.series == [1, 2]  # one node of two cores
    script = case.script()
    assert "mpirun -np 1 " in script and "mpirun -np 2 " in script
    case.give_outputs("ring-openmpi-ob1-vader-core")
    case.sanity()
    values = case.performance()
    assert values["lap_N2"][4] == "us" and values["lap_N2"][0] > values["lap_N1"][0] > 0
    assert {"hop", "lap_offset", "lap_fit_r2"} <= set(values) | set(case.check.unresolved)
    # a launch cut short is named, not read as the series
    cut = one(offline, "RingCheck", "openmpi", **OB1)
    cut.give_outputs("ring-openmpi-ob1-vader-core", lambda text: text.rsplit(
        "SENTINEL_DONE", 1)[0])
    with pytest.raises(SanityError, match="2-rank launch"):
        cut.sanity()


def test_mixed_mode_collectives_and_the_barrier_splits(offline):
    coll = one(offline, "HybridCollectivesCheck", "openmpi", mode="funnelled", threads="one",
               **OB1)
    assert "export OMP_NUM_THREADS=1" in coll.script()
    coll.give_outputs("hybridcollectives-openmpi-ob1-vader-core-funnelled-one")
    coll.sanity()
    values = coll.performance()
    assert any(name.startswith("allreduce_") for name in values)
    assert all(entry[4] == "s" and entry[0] > 0 for entry in values.values())
    split = one(offline, "BarrierSplitCheck", "openmpi", mode="funnelled", **OB1)
    script = split.script()
    assert "env OMP_NUM_THREADS=2 " in script  # the 1 x 2 split before the 2 x 1 launch
    split.give_outputs("barriersplit-openmpi-ob1-vader-core-funnelled")
    split.sanity()
    values = split.performance()
    assert {"barrier_R1", "barrier_R2"} <= set(values)
    # a split whose threads left their cores fails naming the thread
    bad = one(offline, "BarrierSplitCheck", "openmpi", mode="funnelled", **OB1)
    bad.give_outputs("barriersplit-openmpi-ob1-vader-core-funnelled",
                     lambda text: text.replace("thread=1 cpu=1 cpus=1", "thread=1 cpu=0 cpus=0",
                                               1))
    with pytest.raises(SanityError, match="placement not honoured"):
        bad.sanity()


def test_device_buffers_pt2pt_built_with_cuda_judged_on_its_runs(offline):
    host, device = (one(offline, "Pt2ptGpuCheck", "openmpi-cuda", partition="gpu",
                        variables={"modes": ["standard"]}, buffers=b, **OB1)
                    for b in ("host", "device"))
    build = host.fixture("build")
    assert "pt2pt GPU=cuda CUDA_HOME=/opt/cuda-wheels" in (
        Path(build.stagedir) / "rfm_build.sh").read_text()
    launch = [line for line in host.script().splitlines() if "mpirun" in line]
    assert " --buffers host " in launch[-1]
    host.give_outputs("pt2ptgpu-openmpi-ob1-vader-core-host")
    host.sanity()
    assert host.performance()["latency_8B"][0] > 0
    # on a host without a GPU the device run stops before measuring, and says why
    device.give_outputs("pt2ptgpu-openmpi-ob1-vader-core-device")
    with pytest.raises(SanityError, match="no CUDA device visible to rank 0"):
        device.sanity()


def _slow_node(node: str, factor: float):
    """An edit of a pairs sweep's output: every pair through ``node`` ``factor`` times slower."""
    ranks: dict[str, str] = {}

    def edit(text: str) -> str:
        ranks.update(re.findall(r"SENTINEL_AFFINITY rank=(\d+) host=(\S+)", text))
        mine = {r for r, host in ranks.items() if host == node}

        def slower(m: re.Match) -> str:
            src, dst, bw = m.group(1), m.group(2), float(m.group(3))
            if {src, dst} & mine:
                bw /= factor
            return f"src={src} dst={dst} bytes=1048576 bw_mbs={bw:.2f}"
        return re.sub(r"src=(\d+) dst=(\d+) bytes=1048576 bw_mbs=([\d.]+)", slower, text)
    return edit


def test_fabric_pairs_sweep_judged_on_four_namespaced_nodes(offline):
    params = {"transport": "openmpi/ob1-tcp", "mapping": "node", "mode": "pairs"}
    case = one(offline, "FabricCheck", "openmpi", partition="rig", **params)
    assert "#SBATCH --ntasks=4" in case.script() and "--mode pairs " in case.script()
    case.give_outputs("fabric-openmpi-ob1-tcp-node-pairs-net")
    case.sanity()
    assert case.check.outliers == ""
    assert len(json.loads(case.check.fabric_pairs)) == 12  # 4 x 3 pairs, each way
    values = case.performance()
    assert values["pair_bw_median"][4] == "MB/s" and values["pair_bw_median"][0] > 100
    assert values["outlier_nodes"][0] == 0 and values["outlier_links"][0] == 0
    # the same sweep with node m3's pairs 20 times slower names m3, and only m3
    slow = one(offline, "FabricCheck", "openmpi", partition="rig", **params)
    slow.give_outputs("fabric-openmpi-ob1-tcp-node-pairs-net", _slow_node("m3", 20.0))
    with pytest.raises(SanityError, match=r"node m3: bandwidth \d+\.\dx below") as err:
        slow.sanity()
    assert not re.search(r"node m[124]\b", str(err.value))


def test_fabric_verifies_the_pairs_sweep_and_gives_the_other_modes_no_verify(offline):
    # the nightly sets FabricCheck.verify for every mode; the benchmark refuses
    # it outside the pairs sweep, so only the sweep's job carries it
    verify = {"verify": 2}
    sweep = one(offline, "FabricCheck", "openmpi", partition="rig", variables=verify,
                transport="openmpi/ob1-tcp", mapping="node", mode="pairs")
    assert "--verify 2 --corrupt-link none" in sweep.script()
    for mode, mapping in (("patterns", "core"), ("aggregate", "node")):
        other = one(offline, "FabricCheck", "openmpi", partition="rig", variables=verify,
                    transport="openmpi/ob1-tcp", mapping=mapping, mode=mode)
        assert f"--mode {mode} " in other.script() and "--verify" not in other.script()
        assert "--corrupt-link" not in other.script()


def test_fabric_patterns_on_the_production_pair_verified_at_both_levels(offline):
    params = {"transport": "openmpi/ob1-vader+tcp", "mapping": "core", "mode": "patterns"}
    case = one(offline, "FabricCheck", "openmpi", partition="rig", **params)
    script = case.script()
    assert "export OMPI_MCA_btl=self,vader,tcp" in script and "#SBATCH --ntasks=8" in script
    case.give_outputs("fabric-openmpi-ob1-vader+tcp-core-patterns-net")
    case.sanity()
    values = case.performance()
    assert values["neighbour_onnode_bw"][0] > 0 and values["cube_offnode_bw"][0] > 0
    # 8 ranks as 2 x 4: the transpose sends every rank to itself, no traffic to report
    assert not [name for name in values if name.startswith("transpose_")]
    # the pair's on-node half not taken: ranks on one node over TCP fails naming both
    tcp_only = one(offline, "FabricCheck", "openmpi", partition="rig", **params)
    tcp_only.give_outputs("fabric-openmpi-ob1-vader+tcp-core-patterns-net")
    err = tcp_only.stagedir / "rfm_job.err"
    err.write_text(re.sub(r"Using vader btl for send to (\S+) on node (\S+)",
                          r"Using tcp btl for send to \1 on node \2", err.read_text()))
    with pytest.raises(SanityError, match="requested on-node traffic over btl=vader, the run "
                       "used btl=tcp"):
        tcp_only.sanity()


def test_fabric_skips_shared_memory_where_a_pair_measures_it_else_holds_it(offline):
    patterns = {"mapping": "core", "mode": "patterns"}
    vader = one(offline, "FabricCheck", "openmpi", partition="rig",
                transport="openmpi/ob1-vader", **patterns)
    assert vader.skipped == ("ob1-vader carries no traffic between nodes; its traffic within "
                             "one is measured over ob1-vader+tcp")
    # Intel MPI's OFI shm provider has no pair over it: held to one node, said why
    alone = one(offline, "FabricCheck", "intelmpi", partition="rig",
                transport="intelmpi/ofi-shm", **patterns)
    assert not alone.skipped
    assert "#SBATCH --ntasks=2\n#SBATCH --ntasks-per-node=2\n" in alone.script()  # one node
    assert alone.check.span_note.startswith("ofi-shm carries traffic within a node only")


def test_the_pt2pt_checks_variants_are_named_from_the_base_tests_parameters():
    # Jacobi depends on Pt2ptCheck's variants by name, computed from
    # TransportMappingTest's parameters (sentinel.rfm.pt2pt): it adds none.
    from sentinel.rfm.base import TransportMappingTest
    from sentinel.rfm.pt2pt import pt2pt_check_name

    cls = check_classes()["Pt2ptCheck"]
    assert list(cls.param_space.params) == list(TransportMappingTest.param_space.params)
    for num in range(cls.num_variants):
        params = cls.get_variant_info(num)["params"]
        assert pt2pt_check_name(params["transport"], params["mapping"]) == cls.variant_name(num)


def test_an_environment_with_its_own_launcher_runs_the_series_with_it_in_the_allocation(offline):
    pair = {"transport": "openmpi/ob1-sm+tcp", "mapping": "core"}
    own = one(offline, "RingCheck", "openmpi-5_0", partition="rig", **pair)
    script = own.script()
    assert "#SBATCH --ntasks=8" in script and "#SBATCH --ntasks-per-node=2" in script
    for n in (1, 2, 4, 8):  # each step its own mpirun, placed by the mapping; no srun
        assert f"mpirun -np {n} --map-by core --bind-to core " in script
    assert "srun" not in script and "--mpi=" not in script
    mpich = one(offline, "RingCheck", "mpich-5_0", partition="rig",
                transport="mpich/ucx-sm+tcp", mapping="core")
    assert "mpiexec -n 8 -map-by core -bind-to core " in mpich.script()
    # the partition's launcher for every other environment
    srun = one(offline, "RingCheck", "openmpi", partition="rig",
               transport="openmpi/ob1-vader+tcp", mapping="core")
    assert "mpirun -np" not in srun.script() and "srun --cpus-per-task=1 --cpu-bind=cores" \
        in srun.script()


def test_a_launcher_reframe_does_not_have_is_named_with_its_environment(offline):
    with pytest.raises(SentinelError, match=r"environment openmpi-misspelt: extras\['launcher'\] "
                                            r"'mpirn' is no launcher ReFrame has"):
        one(offline, "RingCheck", "openmpi-misspelt", partition="rig",
            transport="openmpi/ob1-sm+tcp", mapping="core")


#: The quick mode's sizes, which tests/data/checks/rma-* were captured with.
RMA_QUICK = {"max_size": 4096, "repetitions": 3}


def test_rma_exports_its_one_sided_path_and_is_judged_on_its_run(offline):
    case = one(offline, "RmaCheck", "openmpi", variables=RMA_QUICK, **OB1)
    script = case.script()
    assert "export OMPI_MCA_osc=^ucx" in script and "export OMPI_MCA_osc_base_verbose=100" \
        in script
    assert "--ops put,get,acc --syncs fence,lock,pscw,flush --min-size 8 --max-size 4096" \
        in script
    case.give_outputs("rma-openmpi-ob1-vader-core")
    case.sanity()
    assert case.check.one_sided_selected == "osc=rdma"
    values = case.performance()
    assert values["put_lock_latency_8B"][4] == "us" and 0 < values["put_lock_latency_8B"][0] < 50
    assert values["get_lock_bw_peak"][4] == "MB/s" and values["get_lock_bw_peak"][0] > 10
    assert {f"{op}_{sync}_bw_peak" for op in ("put", "get", "acc")
            for sync in ("fence", "lock", "pscw", "flush")} <= set(values)


def test_rma_over_ucx_selects_osc_ucx(offline):
    case = one(offline, "RmaCheck", "openmpi", variables=RMA_QUICK,
               transport="openmpi/ucx-sm", mapping="core")
    assert "export OMPI_MCA_osc=ucx" in case.script()
    # the ob1-vader run's log shows osc rdma: not the UCX transport's path
    case.give_outputs("rma-openmpi-ob1-vader-core")
    with pytest.raises(SanityError, match="transport openmpi/ucx-sm not verified"):
        case.sanity()


def test_rma_data_that_landed_wrong_fails_naming_the_epoch_and_the_pair(offline):
    case = one(offline, "RmaCheck", "openmpi", variables={"max_size": 64, "corrupt_at": 64},
               **OB1)
    case.give_outputs("rma-openmpi-ob1-vader-core-corrupt")
    with pytest.raises(SanityError, match=r"one-sided data corrupted over openmpi/ob1-vader: "
                       r"the 64-byte put under fence from rank 0 on vm to rank 1 on vm landed "
                       r"with the byte at offset 32 = 0xe9 instead of 0xe8 \(1 wrong\);.* and "
                       r"9 more epoch\(s\)"):
        case.sanity()


def test_rma_an_epoch_the_benchmark_did_not_verify_fails_naming_it(offline):
    case = one(offline, "RmaCheck", "openmpi", variables=RMA_QUICK, **OB1)
    case.give_outputs("rma-openmpi-ob1-vader-core", lambda text: re.sub(
        r"^SENTINEL_VERIFY op=get sync=lock bytes=64 .*\n", "", text, flags=re.M))
    with pytest.raises(SanityError, match="the rma benchmark verified no epoch of get under "
                                          "lock at 64 B"):
        case.sanity()


def test_imb_rma_reports_the_flush_variables_and_proves_its_one_sided_path(offline):
    case = one(offline, "ImbRmaCheck", "intelmpi", variables={"msglog": 12},
               transport="intelmpi/ofi-tcp", mapping="core")
    script = case.script()
    assert script.count("/opt/intel/mpi/bin/IMB-RMA Unidir_put Unidir_get Accumulate "
                        "-msglog 3:12") == 3  # repetitions
    assert "export MPIR_CVAR_CH4_OFI_CAPABILITY_SETS_DEBUG=1" in script
    case.give_outputs("imbrma-intelmpi-ofi-tcp-core")
    case.sanity()
    assert case.check.one_sided_selected == "ofi_rma=0 ofi_atomics=0"
    values = case.performance()
    assert set(values) - {"host_roundtrip", "host_copy_bw"} == set(
        rma_analysis.imb_expected(["put", "get", "acc"], 12))
    # each value the median of the three launches: NON-AGGREGATE's time, AGGREGATE's rate
    text = (DATA / "checks" / "imbrma-intelmpi-ofi-tcp-core" / "rfm_job.out").read_text()
    runs = [imb.parse(chunk) for chunk in imb.split(text)]
    times = sorted(r.table("Unidir_put", mode="NON-AGGREGATE").column("t[usec]")[8]
                   for r in runs)
    assert values["put_flush_latency_8B"][0] == times[1]
    rates = sorted(max(r.table("Unidir_get", mode="AGGREGATE").column("Mbytes/sec").values())
                   for r in runs)
    assert values["get_flush_bw_peak"][0] == rates[1]


def test_imb_rma_on_the_shm_provider_expecting_native_rma_fails_naming_it(offline):
    case = one(offline, "ImbRmaCheck", "intelmpi", variables={"msglog": 12},
               transport="intelmpi/ofi-shm", mapping="core")
    case.give_outputs("imbrma-intelmpi-ofi-tcp-core")  # its log: tcp, RMA off
    with pytest.raises(SanityError, match="transport intelmpi/ofi-shm not verified"):
        case.sanity()


#: The quick mode's timing, which tests/data/checks/msgrate-* were captured with.
MSGRATE_QUICK = {"target_time": 0.3, "repetitions": 5}
#: The rig's nodes as one socket of this host's two CPUs (``--sockets 1``), as
#: partition ``cluster`` declares them: a rank of each node holds two cores.
OB1_TCP_NODE = {"transport": "openmpi/ob1-tcp", "mapping": "node"}


def test_thread_rate_plans_a_socket_of_threads_a_rank_on_a_site_node(offline):
    core = one(offline, "ThreadRateCheck", "openmpi", partition="site",
               transport="openmpi/ob1-tcp", mapping="core")
    assert core.check.thread_counts == [1, 2, 4, 8]  # two ranks on a socket of 16 cores
    script = core.script()
    assert "--thread-counts 1,2,4,8 --size 8 --window 64 --space comm" in script
    assert "export OMP_NUM_THREADS=8" in script and "--cpus-per-task=8" in script
    assert "--serialise" not in script
    for mapping in ("socket", "node"):
        case = one(offline, "ThreadRateCheck", "openmpi", partition="site",
                   transport="openmpi/ob1-tcp", mapping=mapping)
        assert case.check.thread_counts == [1, 2, 4, 8, 16], mapping
    capped = one(offline, "ThreadRateCheck", "openmpi", partition="site",
                 variables={"max_threads": 12, "serialise": True},
                 transport="openmpi/ob1-tcp", mapping="node")
    assert capped.check.thread_counts == [1, 2, 4, 8, 12]
    assert "--serialise" in capped.script()
    # this machine: two cores of one socket, one thread for each of the pair
    assert one(offline, "ThreadRateCheck", "openmpi", **OB1).check.thread_counts == [1]


def test_thread_rate_judged_on_its_run(offline):
    case = one(offline, "ThreadRateCheck", "openmpi", variables=MSGRATE_QUICK, **OB1)
    case.give_outputs("msgrate-openmpi-ob1-vader-core")
    case.sanity()
    values = case.performance()
    assert values["rate_T1"][4] == "messages/s" and values["rate_T1"][0] > 1e5
    assert not any(name.startswith("scaling_") for name in values)


def test_thread_rate_a_message_that_arrived_wrong_fails_naming_the_pair(offline):
    case = one(offline, "ThreadRateCheck", "openmpi", variables=MSGRATE_QUICK, **OB1)
    case.give_outputs("msgrate-openmpi-ob1-vader-core",
                      lambda text: text.replace("wrong=0", "wrong=3"))
    with pytest.raises(SanityError, match=r"3 message\(s\) of 8 bytes from rank 0 on vm to "
                       r"rank 1 on vm over openmpi/ob1-vader arrived wrong at 1 thread\(s\)"):
        case.sanity()


def test_thread_rate_a_count_that_did_not_report_is_named(offline):
    case = one(offline, "ThreadRateCheck", "openmpi", variables=MSGRATE_QUICK,
               partition="cluster", **OB1_TCP_NODE)
    case.give_outputs("msgrate-openmpi-ob1-tcp-node", lambda text: re.sub(
        r"^SENTINEL_MSGRATE threads=2 .*\n", "", text, flags=re.M))
    with pytest.raises(SanityError, match=r"no message rate at 2 thread\(s\)"):
        case.sanity()


def test_thread_rate_without_thread_multiple_is_skipped_with_the_level(offline):
    case = one(offline, "ThreadRateCheck", "openmpi", variables=MSGRATE_QUICK, **OB1)
    case.give_outputs("msgrate-openmpi-ob1-vader-core", lambda text: (
        "SENTINEL_UNSUPPORTED bench=msgrate mode=multiple required=MPI_THREAD_MULTIPLE "
        "provided=MPI_THREAD_SERIALIZED\n"))
    with pytest.raises(SkipTestError, match="MPI_THREAD_SERIALIZED"):
        case.sanity()


def test_thread_rate_scaling_below_its_band_fails_naming_the_thread_count(offline, references):
    """The verdict: a scaling outside its band fails at the thread count it names.

    The capture is real (the rig brought up with one socket a node, a rank on
    each of two nodes, two threads each), but its nodes share this host's
    two CPUs: its scaling is the scheduler's (0.88 here). The band is what a
    site whose threads each have a core of their own would learn (1.8 at two
    threads); a library that serialised its threads would measure about 1.
    """
    entry = ("ThreadRateCheck:\n"
             "  $index: [$partition, $environ, transport_name, mapping]\n"
             "  offline:cluster:\n    openmpi:\n      ob1-tcp:\n        node:\n"
             "          scaling_T2: [{0}, -0.2, 0.2, '1']\n")
    references(entry.format(1.8))
    case = one(offline, "ThreadRateCheck", "openmpi", variables=MSGRATE_QUICK,
               partition="cluster", **OB1_TCP_NODE)
    assert case.check.thread_counts == [1, 2]
    case.give_outputs("msgrate-openmpi-ob1-tcp-node")
    case.sanity()
    with pytest.raises(PerformanceError, match=r"scaling_T2=0\.87\d* 1, expected 1\.8"):
        case.performance()
    # silent: the same run within the band it learnt
    references(entry.format(0.9))
    case = one(offline, "ThreadRateCheck", "openmpi", variables=MSGRATE_QUICK,
               partition="cluster", **OB1_TCP_NODE)
    case.give_outputs("msgrate-openmpi-ob1-tcp-node")
    case.sanity()
    values = case.performance()
    assert values["scaling_T2"][0] == pytest.approx(values["rate_T2"][0] / values["rate_T1"][0])


#: Partition ``rig`` is the test cluster's four nodes of two sockets, where
#: tests/data/checks/congestion-* were captured (the quick mode's timing).
CONGESTION_NODE = {"transport": "openmpi/ob1-tcp", "mapping": "node"}
CONGESTION_QUICK = {"samples": 300, "repetitions": 3, "bw_iterations": 4, "burst": 2}


def test_congestion_runs_a_rank_on_every_node_and_only_with_four(offline):
    case = one(offline, "CongestionCheck", "openmpi", partition="site",
               variables={"victims": 2}, **CONGESTION_NODE)
    assert case.skipped is None, case.skipped
    assert case.check.num_tasks == 4 and case.check.num_tasks_per_node == 1
    assert ("--patterns alltoall,incast,bcast --victims 2 --samples 2000 --size 1048576 "
            "--bw-iterations 16 --congestor-size 1048576 --burst 8 --repetitions 5"
            in case.script())
    assert "--distinct-cpus" not in case.script()  # one rank a node
    core = one(offline, "CongestionCheck", "openmpi", partition="site",
               transport="openmpi/ob1-tcp", mapping="core")
    assert core.skipped == ("victims and congestors on nodes of their own: mapping node "
                            "only, not core")
    three = one(offline, "CongestionCheck", "openmpi", partition="site",
                variables={"nodes": 3}, **CONGESTION_NODE)
    assert three.skipped == "2 victim and 2 congestor nodes at least; 3 of partition " \
                            "offline:site"


def _congestion_band(references, limit_of_three: float) -> None:
    references("CongestionCheck:\n"
               "  $index: [$partition, $environ, transport_name, mapping]\n"
               "  offline:rig:\n    openmpi:\n      ob1-tcp:\n        node:\n" + "".join(
                   f"          {p}_impact_latency_p50: [3.0, -1.0, {limit_of_three / 3 - 1}, '1']\n"
                   for p in ("alltoall", "incast", "bcast")))


def test_congestion_impact_outside_its_band_fails_naming_the_pattern(offline, references):
    """The verdict on the rig's captures: quiet (silent) and with its spine congested (fires).

    The band (up to 15 on the median's impact) is what a site with the rig's
    fabric would hold it to: the rig's nodes share this host's CPUs, so its
    quiet impact (4.3 to 4.8 here) is the scheduler's; a queue shared on the
    spine gave 103 to 122.
    """
    _congestion_band(references, 15.0)
    quiet = one(offline, "CongestionCheck", "openmpi", partition="rig",
                variables=CONGESTION_QUICK, **CONGESTION_NODE)
    quiet.give_outputs("congestion-openmpi-ob1-tcp-node")
    quiet.sanity()
    values = quiet.performance()
    assert values["alltoall_impact_latency_p50"][0] == pytest.approx(4.798)
    assert values["alltoall_impact_latency_p50"][3] is not None  # judged, within
    congested = one(offline, "CongestionCheck", "openmpi", partition="rig",
                    variables=CONGESTION_QUICK, **CONGESTION_NODE)
    congested.give_outputs("congestion-openmpi-ob1-tcp-node-spine")
    congested.sanity()
    with pytest.raises(PerformanceError, match=r"alltoall_impact_latency_p50=104\.057 1, "
                       r"expected 3(\.0)? \(l=0\.0, u=15\.0\)"):
        congested.performance()


def test_congestion_a_run_that_congested_nothing_fails_saying_so(offline):
    case = one(offline, "CongestionCheck", "openmpi", partition="rig",
               variables=CONGESTION_QUICK, **CONGESTION_NODE)
    case.give_outputs("congestion-openmpi-ob1-tcp-node", lambda text: re.sub(
        r"(pattern=bcast state=loaded .*?) bursts=\d+", r"\1 bursts=0", text))
    with pytest.raises(SanityError, match=r"the bcast congestors delivered [\d.]+ MB/s in 0 "
                       r"burst\(s\) while the victims measured: no congestion was measured"):
        case.sanity()
