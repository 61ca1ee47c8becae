"""A Slurm whose nodes each have a network of their own (tests/cluster/slurm.py --net).

Four nodes ``m1`` ... ``m4`` in partition ``net``, each slurmd in its own
network namespace with its own veth link into a bridge and its own address
(``tests/cluster/netns.py``). These tests run the ring over the whole
partition, every rank's placement proven, and prove that MPI traffic
between two nodes really crosses their links: slowing one node's link slows
the runs that use that node, and only those.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from sentinel.analysis.host import ONE_CPU
from sentinel.results.vet import actions
from tests.cluster import netns
from tests.conftest import ROOT
from tests.integration.conftest import (
    FINALIZE_TIMEOUT,
    NO_NETWORK,
    OMPI_TCP_CRASH,
    QUICK,
    RETRY_CRASH,
    namespaced_slurm,
    need_stack,
    reframe,
)

pytestmark = pytest.mark.integration

NODES = 4
#: About 5 % of the TCP bandwidth between two of these nodes on this host
#: (2800-3800 MB/s): a degradation no noise of a shared host explains.
RATE = "1gbit"
PT2PT = [*QUICK, "-S", "Pt2ptCheck.max_size=65536", "-S", "Pt2ptCheck.modes=standard",
         "-n", "Pt2ptCheck.*transport=ob1-tcp.*mapping=node", "-p", "openmpi$"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Slurm with the namespaced partition; its slurm.conf. Stopped by PID at the end."""
    yield from namespaced_slurm(tmp_path_factory, "slurm-net", NODES, "tc")
    assert not any(n.namespace in _namespaces() for n in netns.nodes(NODES))


def _nodes(tc: dict) -> list[str]:
    """The nodes the ranks of a test case reported (SENTINEL_AFFINITY).

    Not the report's ``job_nodelist``: the squeue backend leaves it unknown
    for a job that ended before its first poll.
    """
    text = (Path(tc["outputdir"]) / "rfm_job.out").read_text()
    return sorted(set(re.findall(r"^SENTINEL_AFFINITY rank=\d+ host=(\S+)", text, re.M)))


def _on_net(conf: Path, out: Path, args: list[str], checks: tuple[str, ...]):
    """reframe over the namespaced partition, its output under ``out``."""
    out.mkdir()
    run = reframe([*args, "--system", "local:slurm-net", "-r"], out,
                  env={"SLURM_CONF": str(conf)}, checks=checks)
    run.assert_retries(OMPI_TCP_CRASH)
    return run


def _namespaces() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


#: Open MPI 4.1.4's TCP BTL segfaulted twice in about ten runs on these nodes,
#: right after connecting (tests/data/joberr/openmpi-series-segfault.txt): the
#: Open MPI runs here get one retry, as the nightly allows.
RING = [*QUICK, RETRY_CRASH, "-S", "RingCheck.laps=50", "-S", "RingCheck.repetitions=3",
        "-n", "RingCheck.*transport=ob1-tcp.*mapping=node", "-p", "openmpi$"]


def _ring(conf: Path, out: Path, *args: str) -> dict:
    run = _on_net(conf, out, [*RING, *args], ("ring.py",))
    tc = run.case("RingCheck", transport="ob1-tcp", mapping="node")
    assert tc["result"] == "pass", tc.get("fail_reason") or run.output[-3000:]
    return {k.split(":")[-1]: v[0] for k, v in tc["perfvalues"].items()}


def _bw_peak(conf: Path, out: Path, nodes: str) -> float:
    run = _on_net(conf, out, [*PT2PT, f"-J=--nodelist={nodes}"], ("pt2pt.py",))
    tc = run.case("Pt2ptCheck", transport="ob1-tcp", mapping="node")
    assert tc["result"] == "pass", tc.get("fail_reason") or run.output[-3000:]
    assert _nodes(tc) == nodes.split(",")  # nodes as Slurm assigned them
    return tc["perfvalues"]["local:slurm-net:bw_peak"][0]


def test_each_node_runs_in_its_own_namespace_with_its_own_address(cluster):
    env = {"SLURM_CONF": str(cluster), "PATH": "/usr/bin:/bin:/usr/sbin:/sbin"}
    proc = subprocess.run(["srun", "-p", "net", "-N", str(NODES), "-n", str(NODES), "bash",
                           "-c", "echo $SLURMD_NODENAME $(ip -br -4 addr show eth0)"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    seen = {line.split()[0]: line.split()[3] for line in proc.stdout.splitlines()}
    assert seen == {f"m{k}": f"10.99.0.{k}/24" for k in range(1, NODES + 1)}


#: Host contention only ever slows a run, and on the CI host it came in
#: bursts of minutes that doubled one allreduce of the unaffected pair (485 ->
#: 1016 us); the unaffected pair is measured again, up to this many times in
#: all, while it looks slowed, and its best value per variable is kept.
ELSEWHERE_TRIES = 3

T = TypeVar("T")


def _unaffected(measure: Callable[[int], T], looks_slowed: Callable[[T], bool],
                best: Callable[[T, T], T]) -> T:
    """The best of up to ELSEWHERE_TRIES measurements of a pair off the slow link."""
    value = measure(0)
    for attempt in range(1, ELSEWHERE_TRIES):
        if not looks_slowed(value):
            break
        print(f"off the slow link, {value} looks slowed: measured again")
        value = best(value, measure(attempt))
    return value


def test_a_slow_link_slows_the_runs_through_its_node_and_only_those(cluster, tmp_path):
    need_stack("openmpi")
    before = _bw_peak(cluster, tmp_path / "m1-m2", "m1,m2")
    node = netns.Node(2)
    netns.degrade(node, RATE)
    try:
        slowed = _bw_peak(cluster, tmp_path / "m1-m2-slow", "m1,m2")
        elsewhere = _unaffected(
            lambda k: _bw_peak(cluster, tmp_path / f"m3-m4-{k}", "m3,m4"),
            lambda bw: bw <= 0.5 * before, max)
    finally:
        netns.restore(node)
    assert slowed < 0.2 * before, (before, slowed)
    assert slowed < 140  # 1 Gbit/s is 125 MB/s
    assert elsewhere > 0.5 * before, (before, elsewhere)


def test_the_ring_spans_every_node_with_every_rank_placed(cluster, tmp_path):
    need_stack("openmpi")
    # N = 1, 2, 4: one rank per node; sanity proved every rank of every launch
    # on a node of its own, as Slurm assigned them
    perf = _ring(cluster, tmp_path / "ring")
    assert {"lap_N1", "lap_N2", "lap_N4", "hop"} <= set(perf)
    assert perf["lap_N4"] > perf["lap_N2"] > 0
    # the line through N = 2 and 4 is exact; its fixed part 2 t(2) - t(4) is a
    # value only where it is a time (positive), else unresolved, never negative
    assert ("lap_offset" in perf) == (2 * perf["lap_N2"] - perf["lap_N4"] > 0)


#: Intel MPI's IMB collectives on the namespaced nodes. Two of the four nodes
#: share each of this host's CPUs: ranks that busy-poll there slow each other
#: by two orders of magnitude (tests/data/collectives/README.md), so they wait
#: in the kernel (I_MPI_WAIT_MODE), as oversubscribed ranks should.
COLLECTIVES = ["-S", "CollectivesCheck.transports=intelmpi/ofi-tcp",
               "-S", "CollectivesCheck.iterations=200", "-S", "CollectivesCheck.time_per_size=2",
               "-S", "env_vars=I_MPI_WAIT_MODE:1", "-S", "time_limit=5m",
               "-n", "^CollectivesCheck.*mapping=node", "-p", "intelmpi$"]


#: The operations the collectives test asserts, of the eight the check runs.
ASSERTED = "Barrier,Bcast,Allreduce,Alltoall"


def _collectives(conf: Path, out: Path, *args: str) -> dict:
    run = _on_net(conf, out, [*COLLECTIVES, "-S", f"CollectivesCheck.operations={ASSERTED}",
                              *args], ("collectives.py",))
    tc = run.case("CollectivesCheck", transport="ofi-tcp", mapping="node")
    assert tc["result"] == "pass", tc.get("fail_reason") or run.output[-3000:]
    return tc


def test_collectives_at_two_three_and_four_ranks_over_one_to_four_nodes(cluster, tmp_path):
    need_stack("intelmpi")
    four = _collectives(cluster, tmp_path / "four")
    three = _collectives(cluster, tmp_path / "three", "-S", "CollectivesCheck.max_nodes=3")
    # one rank per node: P ranks span P nodes; sanity proved every rank's node
    # and that IMB's first P ranks are on P distinct nodes
    assert _nodes(four) == ["m1", "m2", "m3", "m4"]
    assert len(_nodes(three)) == 3
    for tc, counts in ((four, (1, 2, 4)), (three, (1, 2, 3))):
        perf = {k.split(":")[-1]: v[0] for k, v in tc["perfvalues"].items()}
        unresolved = tc.get("unresolved") or {}
        for p in counts:
            assert {f"barrier_latency_P{p}", f"bcast_latency_8B_P{p}",
                    f"allreduce_latency_8B_P{p}",
                    f"alltoall_latency_65536B_P{p}"} <= set(perf) | set(unresolved)
        # only a barrier of one rank (no message) may print IMB's 0.00 us: never
        # a value then, unresolved with why; one CPU a rank leaves the host
        # probe its copy alone
        assert set(unresolved) <= {"barrier_latency_P1", "host_roundtrip"}, unresolved
        if "barrier_latency_P1" in unresolved:
            assert "0 us is not positive" in unresolved["barrier_latency_P1"]
        assert unresolved.get("host_roundtrip", ONE_CPU) == ONE_CPU
        assert perf["host_copy_bw"] > 0
        # (an unresolved one-rank barrier is below IMB's printed 0.01 us)
        assert perf[f"barrier_latency_P{counts[-1]}"] > perf.get("barrier_latency_P1", 0.0)


#: The ring (Open MPI, TCP) and the allreduce (Intel MPI, OFI tcp) of one run
#: with 64 KiB and 1 MiB messages, between two nodes; a retry for Open MPI's
#: segfault (above: in one CI run task 0 of the ring crashed on m1).
THROUGH_LINKS = [RETRY_CRASH,
                 "-S", "RingCheck.transports=openmpi/ob1-tcp", "-S", "RingCheck.laps=50",
                 "-S", "RingCheck.repetitions=3", "-S", "RingCheck.size=65536",
                 "-S", "RingCheck.max_nodes=2", *COLLECTIVES[:-4],
                 "-S", "CollectivesCheck.operations=Allreduce",
                 "-S", "CollectivesCheck.sizes=1048576", "-S", "CollectivesCheck.max_nodes=2",
                 "-S", "CollectivesCheck.iterations=50",
                 "-n", "^(RingCheck|CollectivesCheck).*mapping=node"]


def _ring_and_allreduce(conf: Path, out: Path, nodes: str) -> tuple[float, float]:
    run = _on_net(conf, out, [*THROUGH_LINKS, f"-J=--nodelist={nodes}"],
                  ("ring.py", "collectives.py"))
    ring = run.case("RingCheck", transport="ob1-tcp", mapping="node")
    coll = run.case("CollectivesCheck", transport="ofi-tcp", mapping="node")
    for tc in (ring, coll):
        assert tc["result"] == "pass", tc.get("fail_reason") or run.output[-3000:]
    return (ring["perfvalues"]["local:slurm-net:lap_N2"][0],
            coll["perfvalues"]["local:slurm-net:allreduce_latency_1048576B_P2"][0])


def test_a_slow_link_slows_the_ring_and_allreduce_through_its_node_only(cluster, tmp_path):
    need_stack("openmpi")
    need_stack("intelmpi")
    before = _ring_and_allreduce(cluster, tmp_path / "m1-m2", "m1,m2")
    node = netns.Node(2)
    netns.degrade(node, RATE)
    try:
        slowed = _ring_and_allreduce(cluster, tmp_path / "m1-m2-slow", "m1,m2")
        elsewhere = _unaffected(
            lambda k: _ring_and_allreduce(cluster, tmp_path / f"m3-m4-{k}", "m3,m4"),
            lambda times: any(e >= 2 * b for b, e in zip(before, times)),
            lambda a, b: (min(a[0], b[0]), min(a[1], b[1])))
    finally:
        netns.restore(node)
    for what, b, s, e in zip(("ring lap", "allreduce 1 MiB"), before, slowed, elsewhere):
        assert s > 3 * b, (what, b, s)
        assert e < 2 * b, (what, b, e)


def test_the_jacobi_series_spans_the_nodes_on_a_grid_given(cluster, tmp_path):
    need_stack("openmpi")
    out = tmp_path / "jacobi"
    # weak scaling: the model takes B and T_L from the pt2pt of the same transport and mapping
    run = _on_net(cluster, out, [
        *QUICK, RETRY_CRASH, "-S", "Pt2ptCheck.max_size=65536",
        "-S", "Pt2ptCheck.modes=standard",
        "-S", "JacobiCheck.transports=openmpi/ob1-tcp", "-S", "JacobiCheck.dims=2,2,1",
        "-n", "Pt2ptCheck.*transport=ob1-tcp.*mapping=node|"
              "JacobiCheck.*transport=ob1-tcp.*mapping=node.*mode=pure.*threads=one",
        "-p", "openmpi$"], ("pt2pt.py", "jacobi.py"))
    tc = run.case("JacobiCheck", transport="ob1-tcp", mapping="node")
    assert tc["result"] == "pass", tc.get("fail_reason") or run.output[-3000:]
    # N = 1, 2, 4 ranks on 1, 2, 4 nodes, each rank's node proven in each launch
    assert _nodes(tc) == ["m1", "m2", "m3", "m4"]
    perf = {k.split(":")[-1]: v[0] for k, v in tc["perfvalues"].items()}
    assert {"mlups_N4", "model_ratio_N4", "scaling_ratio_N4", "t_halo_N4"} <= set(perf)
    assert perf["scaling_ratio_N1"] == pytest.approx(1.0)
    script = next(out.rglob("JacobiCheck_*/rfm_job.sh")).read_text()
    assert script.count("--dims 2,2,1") == 1  # the grid of the 4-rank launch only


def test_mixed_mode_collectives_across_the_nodes(cluster, tmp_path):
    need_stack("intelmpi")
    # one rank per node on four nodes, each mode; ranks sharing a CPU wait in
    # the kernel. Intel MPI: Open MPI's TCP BTL segfaulted here once
    # (tests/data/joberr/README.md).
    run = _on_net(cluster, tmp_path / "hybrid", [
        "-S", "HybridCollectivesCheck.transports=intelmpi/ofi-tcp",
        "-S", "HybridCollectivesCheck.max_collective=64",
        "-S", "HybridCollectivesCheck.target_time=0.02",
        "-S", "env_vars=I_MPI_WAIT_MODE:1", "-S", "time_limit=2m",
        "-n", "HybridCollectivesCheck.*mapping=node.*threads=one"], ("hybrid.py",))
    cases = run.cases("HybridCollectivesCheck", transport="ofi-tcp", mapping="node")
    assert {tc["mode"] for tc in cases} == {"serial", "funnelled", "multiple"}, run.output[-3000:]
    for tc in cases:
        assert tc["result"] == "pass", tc.get("fail_reason") or run.output[-3000:]
        assert _nodes(tc) == ["m1", "m2", "m3", "m4"]
        perf = {k.split(":")[-1] for k in tc["perfvalues"]}
        assert {f"{c}_{b}B" for c in ("reduce", "allreduce", "bcast", "scatter", "gather",
                                      "alltoall") for b in (4, 256)} <= perf


@pytest.mark.skipif(not os.environ.get("SENTINEL_OSU_OPENMPI"),
                    reason="no OSU build for Open MPI: set SENTINEL_OSU_OPENMPI to its install "
                    "prefix or build tree (OSU sources are not in any registry CI can reach)")
def test_osu_collectives_one_launch_per_node_count(cluster, tmp_path):
    need_stack("openmpi")
    run = _on_net(cluster, tmp_path / "osu", [
        "-S", "OsuCollectivesCheck.transports=openmpi/ob1-tcp",
        "-S", "OsuCollectivesCheck.iterations=100", "-S", "OsuCollectivesCheck.warmup=10",
        "-S", "env_vars=OMPI_MCA_mpi_yield_when_idle:1", "-S", "time_limit=5m",
        "-n", r"OsuCollectivesCheck.*mapping=node"
              r".*benchmark=osu_(barrier|allreduce|alltoall)\b"], ("collectives.py",))
    cases = run.cases("OsuCollectivesCheck", transport="ob1-tcp", mapping="node")
    assert len(cases) == 3, run.output[-3000:]
    for tc in cases:
        assert tc["result"] == "pass", tc.get("fail_reason") or run.output[-3000:]
        perf = {k.split(":")[-1] for k in tc["perfvalues"]}
        assert any(v.endswith("_P4") for v in perf) and any(v.endswith("_P2") for v in perf)



#: The fabric checks over Intel MPI, whose waits sleep in the kernel
#: (I_MPI_WAIT_MODE) on these CPU-sharing nodes; Open MPI's TCP BTL can
#: segfault here (above), and a sweep of ten runs should not need retries.
#: 300 ping-pongs a latency, not 1000: on these nodes a pair's 8-byte one-way
#: time is 10-40 us, and 1000 made the ping-pongs a third of each sweep.
FABRIC = ["-S", "FabricCheck.transports=intelmpi/ofi-tcp", "-S", "FabricCheck.iterations=10",
          "-S", "FabricCheck.latency_iterations=300",
          "-S", "FabricCheck.repetitions=5", "-S", "env_vars=I_MPI_WAIT_MODE:1",
          "-S", "time_limit=5m", "-p", "intelmpi$"]


#: The latency verdict's factor on these nodes. Their 8-byte latency is the
#: kernel waking a sleeping rank on a CPU two nodes share, not the link: in
#: 5 of 40 clean sweeps (here and in CI) one step's pairs measured from 2.1x
#: to over 3x the partition median (CI named ``link m4 -> m2`` at the default
#: 3.0), and in a sweep with m2 slowed one other pair 5.9x. The faults
#: injected here are bandwidth faults; the latency verdict is tested on
#: captured sweeps (tests/unit/test_fabric.py).
RIG_LATENCY_FACTOR = "10"


#: Sweeps per condition (clean, a slow node, a slow link). Ten each until
#: 2026-11-26 (10 of 10 in every run); five since, for the suite's time: the
#: six-node test of several culprits keeps ten (test_fabric_culprits_local.py).
SWEEPS = 5


def _session(conf: Path, out: Path):
    """:data:`SWEEPS` pairs sweeps over the four nodes, in one session: the sweeps, the run."""
    run = _on_net(conf, out, [*FABRIC, "-n", "^FabricCheck.*mapping=node.*mode=pairs",
                              "-S", f"FabricCheck.latency_factor={RIG_LATENCY_FACTOR}",
                              "--repeat", str(SWEEPS)], ("fabric.py",))
    cases = run.cases("FabricCheck", transport="ofi-tcp", mapping="node")
    assert len(cases) == SWEEPS, run.output[-3000:]
    return cases, run


def _sweeps(conf: Path, out: Path) -> list[dict]:
    """:data:`SWEEPS` pairs sweeps over the four nodes, in one session."""
    return _session(conf, out)[0]


@pytest.fixture(scope="module")
def m2_slowed(cluster, tmp_path_factory):
    """The sweeps with m2's link rate-limited (then restored): judged by two tests."""
    need_stack("intelmpi")
    m2 = netns.Node(2)
    netns.degrade(m2, RATE)
    try:
        return _session(cluster, tmp_path_factory.mktemp("m2-slowed") / "node")
    finally:
        netns.restore(m2)


def _named(tc: dict) -> set[tuple[str, str]]:
    """What a sweep named: ``(node, m2)``, ``(link, m1 <-> m3)``."""
    return set(re.findall(r"(node|link) (\S+(?: <?-> \S+)?):", tc.get("fail_reason") or ""))


def test_the_pairs_sweep_names_the_slow_node_or_link_and_only_it(cluster, m2_slowed,
                                                                  tmp_path):
    need_stack("intelmpi")
    clean = _sweeps(cluster, tmp_path / "clean")
    assert [tc["result"] for tc in clean] == ["pass"] * SWEEPS, [_named(tc) for tc in clean]
    assert all(tc["perfvalues"]["local:slurm-net:outlier_nodes"][0] == 0 for tc in clean)
    m1, m3 = netns.Node(1), netns.Node(3)
    slowed = m2_slowed[0]
    assert [_named(tc) for tc in slowed] == [{("node", "m2")}] * SWEEPS
    assert all(tc["result"] == "fail" for tc in slowed)
    netns.degrade_pair(m1, m3, RATE)
    try:
        linked = _sweeps(cluster, tmp_path / "link")
    finally:
        netns.restore(m1)
        netns.restore(m3)
    assert [_named(tc) for tc in linked] == [{("link", "m1 <-> m3")}] * SWEEPS


def _verified(conf: Path, out: Path, *extra: str) -> dict:
    """One neighbours sweep, 3 verified messages a directed pair."""
    run = _on_net(conf, out, [*FABRIC, "-n", "^FabricCheck.*mapping=node.*mode=pairs",
                              "-S", f"FabricCheck.latency_factor={RIG_LATENCY_FACTOR}",
                              "-S", "FabricCheck.rounds=neighbours",
                              "-S", "FabricCheck.verify=3", *extra], ("fabric.py",))
    return run.case("FabricCheck", transport="ofi-tcp", mapping="node")


def test_a_link_that_corrupts_a_byte_is_named_and_intact_links_pass(cluster, tmp_path):
    need_stack("intelmpi")
    clean = _verified(cluster, tmp_path / "intact")
    assert clean["result"] == "pass", clean.get("fail_reason")
    bad = _verified(cluster, tmp_path / "corrupt", "-S", "FabricCheck.corrupt_link=1:2")
    reason = bad.get("fail_reason") or ""
    assert bad["result"] == "fail"
    # ranks 1 and 2 on two nodes of their own: the link named by both, and the byte
    found = re.search(r"data corrupted over intelmpi/ofi-tcp: a 1048576-byte message from "
                      r"rank 1 on (m\d) to rank 2 on (m\d) arrived with byte 524288 = ", reason)
    assert found and found.group(1) != found.group(2), reason
    assert "(message 0; 1 of the 3 verified messages" in reason, reason


def test_aggregate_loaded_and_patterns_run_over_the_four_nodes(cluster, tmp_path):
    need_stack("intelmpi")
    run = _on_net(cluster, tmp_path / "modes", [
        *FABRIC, "-n", "^FabricCheck.*mapping=node.*mode=(aggregate|loaded|patterns)"],
        ("fabric.py",))
    perf = {}
    for tc in run.cases("FabricCheck", transport="ofi-tcp", mapping="node"):
        assert tc["result"] == "pass", tc.get("fail_reason") or run.output[-3000:]
        assert len(_nodes(tc)) == NODES
        perf.update({k.split(":")[-1]: v[0] for k, v in tc["perfvalues"].items()})
    # Two pairs stream at once. The four test nodes share this host's 2
    # CPUs (m1 and m3 on one, m2 and m4 on the other), so two pairs' four
    # ranks need not move more than one pair's two: 4836 and 5911 MB/s
    # against 5760 and 7444 in two runs. A partition of real nodes does.
    assert perf["aggregate_bw_P2"] > 0 and perf["aggregate_bw_P1"] > 0
    assert perf["aggregate_bw_half"] == perf["aggregate_bw_P2"]
    assert perf["loaded_latency_ratio"] == pytest.approx(
        perf["latency_loaded"] / perf["latency_idle"], rel=1e-6)
    # one rank a node: every pattern's traffic is off-node (neighbour: 1 <-> 2 ...)
    assert {k for k in perf if k.endswith("_bw") and "aggregate" not in k
            and not k.startswith("host_")} == {
        f"{p}_offnode_bw" for p in ("bitrev", "butterfly", "complement", "transpose",
                                    "shuffle", "neighbour", "cube", "baseline", "random")}


#: The concurrent-pairs test's link rate: low enough that two pairs' four
#: ranks on this host's two CPUs fill two links even in a slow spell (at
#: 1 Gbit/s a CI run measured one pair at 71.6 and two at 148.2 MB/s with the
#: host's memcpy at 7.5 GB/s: the CPUs, not the links, were the bottleneck).
AGGREGATE_RATE = "400mbit"
#: What one such link moves at most, in MB/s: 50, and tbf's burst on top.
LINK_MBS = 1.15 * 50


def test_concurrent_pairs_sum_when_each_has_a_link_of_its_own(cluster, tmp_path):
    """With every node's link at 400 Mbit/s the links, not this host's CPUs, are
    the bottleneck: two pairs streaming at once move twice what one pair does. A
    sweep that ran its pairs one after the other would measure 1x, and fail."""
    need_stack("intelmpi")
    nodes = netns.nodes(NODES)
    for node in nodes:
        netns.degrade(node, AGGREGATE_RATE)
    try:
        run = _on_net(cluster, tmp_path / "aggregate", [
            *FABRIC, "-n", "^FabricCheck.*mapping=node.*mode=aggregate"], ("fabric.py",))
    finally:
        for node in nodes:
            netns.restore(node)
    tc = run.case("FabricCheck", transport="ofi-tcp", mapping="node")
    assert tc["result"] == "pass", tc.get("fail_reason") or run.output[-3000:]
    perf = {k.split(":")[-1]: v[0] for k, v in tc["perfvalues"].items()}
    print(f"aggregate at {AGGREGATE_RATE} a link:", perf)
    # one link: 50 MB/s, and tbf's 32 kB burst on top
    assert perf["aggregate_bw_P1"] < LINK_MBS
    # Pairs run one after the other cannot move more than one link carries,
    # burst included; two at once must, by a fifth (docs/detection.md).
    # Against the link's rate, not the one pair's figure, which this host's
    # CPUs can pull below its link (a ratio no measurement of concurrency
    # should depend on).
    assert 1.2 * LINK_MBS < perf["aggregate_bw_P2"] < 2 * LINK_MBS


def _vet(conf: Path, out: Path, *args: str) -> subprocess.CompletedProcess:
    """``sentinel vet`` over the namespaced partition: a fabric sweep of the four nodes."""
    env = {**os.environ, "SLURM_CONF": str(conf), "SENTINEL_OUTPUT": str(out), **NO_NETWORK,
           "SENTINEL_FINALIZE_TIMEOUT": FINALIZE_TIMEOUT}
    proc = subprocess.run([sys.executable, "-m", "sentinel.results.cli", "vet",
                           "--system", "local:slurm-net", "--measure", "fabric",
                           "--checks", str(ROOT / "checks" / "fabric.py"), *args, "--",
                           *FABRIC, "-S", f"FabricCheck.latency_factor={RIG_LATENCY_FACTOR}"],
                          capture_output=True, text=True, env=env, timeout=600)
    print(proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _state(conf: Path, node: str) -> tuple[str, str]:
    """A node's Slurm state and reason."""
    line = subprocess.run(["scontrol", "-o", "show", "node", node], capture_output=True,
                          text=True, env={**os.environ, "SLURM_CONF": str(conf)},
                          check=True).stdout
    state = re.search(r"\bState=(\S+)", line).group(1)
    reason = line.split(" Reason=", 1)[1].strip() if " Reason=" in line else ""
    return state, reason


def _reports(out: Path, label: str) -> list[Path]:
    return sorted((out / "reports" / "vet").glob(f"*-{label}-fabric.json"))


def test_vet_drains_a_slow_node_only_when_it_repeats_and_resumes_it_once_it_passes(
        cluster, m2_slowed, tmp_path):
    """The first measurement is the session of sweeps that named m2 (a nightly's, say)."""
    need_stack("intelmpi")
    m2, out = netns.Node(2), tmp_path / "vet"
    first = [m2_slowed[1].report_path]
    capped = _vet(cluster, out, "--drain", "--max-drain", "0", "--from", str(first[0]))
    assert capped.returncode == 1, capped.stderr
    assert "first measurement: 4 nodes measured, named: m2 " in capped.stdout
    assert "more than the cap of 0 (--max-drain)" in capped.stdout
    assert _state(cluster, "m2")[0] == "IDLE" and not _reports(out, "second")
    try:
        # the repeat rule: the link was mended before the second measurement
        once = _vet(cluster, out, "--drain", "--from", str(first[0]))
        assert "second measurement: 4 nodes measured, named: none " in once.stdout
        assert "m2: named once, not again by session" in once.stdout
        assert _state(cluster, "m2")[0] == "IDLE"
        netns.degrade(m2, RATE)
        twice = _vet(cluster, out, "--drain", "--from", str(first[0]))
        state, reason = _state(cluster, "m2")
        assert "DRAIN" in state and reason.startswith("sentinel: FabricCheck: bandwidth"), (
            state, reason)
        assert [n for n in ("m1", "m3", "m4") if "DRAIN" in _state(cluster, n)[0]] == []
        assert f"drained m2: {reason.split(' [')[0]}" in twice.stdout
        # re-checked while still slow: drained again, not resumed
        failed = _vet(cluster, out, "--recheck", "--resume")
        assert failed.returncode == 1 and "drained m2 again: sentinel: FabricCheck" in failed.stdout
        assert "DRAIN" in _state(cluster, "m2")[0]
    finally:
        netns.restore(m2)
    passed = _vet(cluster, out, "--recheck", "--resume")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "resumed m2: passed the recheck" in passed.stdout
    assert _state(cluster, "m2")[0] == "IDLE"
    assert "ReservationName" not in subprocess.run(
        ["scontrol", "show", "reservation"], capture_output=True, text=True,
        env={**os.environ, "SLURM_CONF": str(cluster)}).stdout
    # the recheck's sweep, clean: judged again, nothing is named nor drained
    clean = _vet(cluster, out, "--drain", "--from", str(_reports(out, "recheck")[-1]))
    assert clean.returncode == 0 and "named: none" in clean.stdout
    done = [(a.node, a.action) for a in actions.recorded(out / "var" / "results.db")]
    assert done == [("m2", "drain"), ("m2", "redrain"), ("m2", "resume")]
