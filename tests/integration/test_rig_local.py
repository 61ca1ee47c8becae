"""A site's node in miniature: four namespaced Slurm nodes of two sockets each.

``tests/cluster/slurm.py up DIR --net 4 --sockets 2``: each node ``m1`` ...
``m4`` has its own network (a namespace, a link, an address), its own host
name and boot ID (so no library takes two of them for one machine), and
this host's CPUs laid out as two sockets with a NUMA domain each
(:class:`tests.cluster.topology.NodeShape`), declared to Slurm and read by
slurmd and by every MPI of its tasks from hwloc XML. ReFrame gets the same
processor (``tests/config/rig.py``). The nodes share this host's CPUs:
what the rig proves is function and placement, not speed.
"""

from __future__ import annotations

import os
import re
import runpy
import shutil
import subprocess
from pathlib import Path

import pytest

from sentinel.analysis import congestion
from sentinel.parsers.jobend import FINALIZE_HANG
from sentinel.rfm.base import MPICH_FINALIZE_NOTE
from sentinel.site import detect
from tests.cluster import netns, slurm
from tests.cluster.topology import NodeShape
from tests.conftest import MPI_PREFIXES, ROOT
from tests.integration.conftest import (
    MPICH_FINALIZE_HANG,
    OMPI_TCP_CRASH,
    QUICK,
    RETRY_CRASH,
    SLURM_PMI_REJECT,
    Started,
    build_bench,
    job_file,
    mpi_env,
    namespaced_slurm,
    need_capability,
    need_environ,
    need_stack,
    start_reframe,
)

pytestmark = pytest.mark.integration

NODES = 4
SHAPE = NodeShape.on_host(2)
CONFIG = ROOT / "tests" / "config" / "rig.py"


@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    """Slurm with the four nodes of two sockets; its slurm.conf. Stopped by PID at the end."""
    yield from namespaced_slurm(tmp_path_factory, "rig", NODES, "netns", SHAPE, "the rig")


def _srun(conf: Path, *args: str) -> str:
    env = {**mpi_env(), "SLURM_CONF": str(conf)}
    proc = subprocess.run(["srun", "-p", "net", *args], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _on_rig(conf: Path, out: Path, args: list[str], checks: tuple[str, ...] = (),
            env: dict[str, str] | None = None):
    return _start_on_rig(conf, out, args, checks, env).wait()


def _start_on_rig(conf: Path, out: Path, args: list[str], checks: tuple[str, ...] = (),
                  env: dict[str, str] | None = None) -> Started:
    out.mkdir(parents=True)
    return start_reframe([*args, "--system", "local:slurm-net", "-r"], out, config=CONFIG,
                         env={"SLURM_CONF": str(conf), **(env or {})}, checks=checks)


def _affinity(tc: dict) -> dict[int, tuple[str, str]]:
    """Rank -> (host, CPUs) from the last launch's affinity lines of a test case.

    (A passed case's output directory has its job's stdout, a failed one's
    stage directory.)
    """
    return {int(r): (h, c) for r, h, c in
            re.findall(r"^SENTINEL_AFFINITY rank=(\d+) host=(\S+) cpus=(\S+)",
                       job_file(tc, "rfm_job.out"), re.M)}


def _cpus(cpus) -> str:
    """A CPU list as the affinity lines write it (``0``, ``2-3``)."""
    cpus = list(cpus)
    return str(cpus[0]) if len(cpus) == 1 else f"{cpus[0]}-{cpus[-1]}"


def test_every_node_is_two_sockets_to_slurm_and_hwloc_with_a_name_and_boot_of_its_own(rig):
    node = subprocess.run(["scontrol", "show", "node", "m1"], capture_output=True, text=True,
                          env={**mpi_env(), "SLURM_CONF": str(rig)}).stdout
    assert "Sockets=2" in node and f"CoresPerSocket={SHAPE.cores_per_socket}" in node
    lines = _srun(rig, "-N", str(NODES), "-n", str(NODES), "sh", "-c",
                  "echo $(hostname) $(cat /proc/sys/kernel/random/boot_id) "
                  "$(hwloc-calc --number-of package machine:0) "
                  "$(hwloc-calc --number-of numanode machine:0) "
                  "$(getent hosts m1 | cut -d' ' -f1)").splitlines()
    seen = sorted(line.split() for line in lines)
    assert [s[0] for s in seen] == [f"m{k}" for k in range(1, NODES + 1)]
    assert {s[4] for s in seen} == {netns.nodes(1)[0].address}  # m1 resolves on every node
    assert len({s[1] for s in seen}) == NODES  # four machines to UCX, not one
    assert {(s[2], s[3]) for s in seen} == {("2", "2")}
    # Slurm binds by the declared sockets: one rank on each with block:cyclic
    tasks = _srun(rig, "-N", "1", "-n", "2", "--cpu-bind=cores", "--distribution=block:cyclic",
                  "sh", "-c", "echo $SLURM_PROCID $(grep Cpus_allowed_list /proc/self/status)")
    bound = dict(line.split()[0::2] for line in tasks.splitlines())
    assert bound == {"0": str(SHAPE.socket_cpus(0)[0]), "1": str(SHAPE.socket_cpus(1)[0])}


#: Each MPI binding two ranks to whole sockets on its own (no Slurm): what it
#: binds to is what it read of the node's topology.
SOCKET_BINDING = {
    "openmpi": ["--map-by", "socket", "--bind-to", "socket"],
    "mpich": ["-map-by", "socket", "-bind-to", "socket"],
}


@pytest.mark.parametrize("family", ["openmpi", "mpich", "intelmpi"])
def test_every_mpi_reads_the_nodes_topology(rig, tmp_path, family):
    xml = slurm.topology_file(rig.parents[1])
    env = {**mpi_env(), **NodeShape.hwloc_env(xml)}
    if family == "intelmpi":
        need_stack("intelmpi")
        root = detect.intel_root()
        env.update(detect.intel_mpi_env(root), I_MPI_PIN_DOMAIN="socket")
        src = tmp_path / "bench"
        shutil.copytree(ROOT / "src" / "bench", src, ignore=shutil.ignore_patterns("build-*"))
        subprocess.run(["make", "-C", str(src), f"CC={root / 'bin' / 'mpicc'}", "affinity"],
                       check=True, capture_output=True, env=env)
        cmd = [str(root / "bin" / "mpiexec.hydra"), "-np", "2", str(src / "affinity/affinity")]
    else:
        launcher, exe = build_bench(family, "affinity", tmp_path)
        cmd = [*launcher, *SOCKET_BINDING[family], "-np", "2", exe]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    cpus = dict(re.findall(r"^SENTINEL_AFFINITY rank=(\d) host=\S+ cpus=(\S+)", proc.stdout,
                           re.M))
    # this host has one socket: only the XML's two make each rank's socket a half
    assert cpus == {"0": _cpus(SHAPE.socket_cpus(0)), "1": _cpus(SHAPE.socket_cpus(1))}


#: Each MPI's shared-memory transport, two ranks.
SHM = "^Pt2ptCheck.*transport=(ob1-vader|ucx-sm|shm)[^+a-z-].*mapping=socket"
PT2PT = [*QUICK, "-S", "Pt2ptCheck.max_size=65536", "-S", "Pt2ptCheck.modes=standard",
         "-n", SHM]


def test_socket_mapping_puts_a_rank_on_each_socket_and_a_crowded_socket_fails(rig, tmp_path):
    run = _on_rig(rig, tmp_path / "socket", PT2PT, ("pt2pt.py",))
    cases = run.cases("Pt2ptCheck")
    assert {tc["environ"] for tc in cases} == {"openmpi", "mpich", "intelmpi"} & {
        s.family for s in detect.local_stacks()}
    for tc in cases:
        assert tc["result"] == "pass", tc.get("fail_reason") or run.output[-3000:]
        ranks = _affinity(tc)
        socket = {rank: next(s for s in range(SHAPE.sockets)
                             if int(cpus.split("-")[0]) in SHAPE.socket_cpus(s))
                  for rank, (_, cpus) in ranks.items()}
        assert socket == {0: 0, 1: 1}, (tc["display_name"], ranks)
    # a launcher option of the site moves both ranks onto socket 0
    crowd = ",".join(str(c) for c in (list(SHAPE.socket_cpus(0)) * 2)[:2])
    bad = _on_rig(rig, tmp_path / "crowded", PT2PT, ("pt2pt.py",),
                  env={"SENTINEL_RIG_LAUNCHER_OPTIONS": f"--cpu-bind=map_cpu:{crowd}"})
    for tc in bad.cases("Pt2ptCheck"):
        assert tc["result"] == "fail"
        reason = tc["fail_reason"]
        if SHAPE.cores_per_socket > 1:  # two cores of socket 0: the placement names them
            assert "mapping socket: ranks 0 and 1 both on socket 0" in reason, reason
        else:  # one core a socket: the ranks share it, and the benchmark names them first
            assert "ranks 0 and 1 share CPU(s) 0 on host m" in reason, reason


def test_shared_memory_forced_across_nodes_is_named(rig, tmp_path):
    # a site's launcher option spreads the two ranks over two nodes
    run = _on_rig(rig, tmp_path / "spread", [*PT2PT, "-J=--nodes=2"], ("pt2pt.py",),
                  env={"SENTINEL_RIG_LAUNCHER_OPTIONS": "--ntasks-per-node=1"})
    cases = run.cases("Pt2ptCheck")
    assert cases
    for tc in cases:
        assert tc["result"] == "fail"
        assert re.search(r"(ob1-vader|ucx-sm|shm) carries traffic within a node only \(shared "
                         r"memory\), but (its ranks ran on|its launch failed with ranks on) "
                         r"m\d, m\d: a launcher option or wrapper spread the ranks over nodes",
                         tc["fail_reason"]), tc["fail_reason"]


#: The production pair and the shared-memory transport of each MPI.
PAIRS = {"openmpi": ("ob1-vader+tcp", "ob1-vader"), "mpich": ("ucx-sm+tcp", "ucx-sm"),
         "intelmpi": ("shm-ofi-tcp", "shm")}
SERIES_TRANSPORTS = ",".join(f"{family}/{t}" for family, pair in PAIRS.items() for t in pair)
#: Today's MPIs (PyPI's Open MPI 5.0 and MPICH 5.0, each environment by its
#: name) and theirs: Open MPI 5 calls its shared-memory BTL ``sm``.
CURRENT = {"openmpi-5_0": ("ob1-sm+tcp", "ob1-sm"), "mpich-5_0": ("ucx-sm+tcp", "ucx-sm")}
CURRENT_TRANSPORTS = ",".join(f"{env.split('-')[0]}/{t}" for env, pair in CURRENT.items()
                              for t in pair)
#: What each pair's transport_selected must show: both levels.
BOTH_LEVELS = {"ob1-vader+tcp": ("btl_on_node=vader", "btl_off_node=tcp"),
               "ob1-sm+tcp": ("btl_on_node=sm", "btl_off_node=tcp"),
               "ucx-sm+tcp": ("sysv", "tcp"), "shm-ofi-tcp": ("fabrics=shm:ofi", "ofi=tcp")}


#: How today's MPIs start their ranks in the allocation: their own launcher
#: (``slurm.OWN_LAUNCHER``; under srun they failed, docs/slurm.md).
OWN_LAUNCH = {"openmpi-5_0": "mpirun -np ", "mpich-5_0": "mpiexec -n "}


#: MPICH's production pair, whose every launch between nodes hangs in
#: MPI_Finalize here: its session runs without retries, as a retry hangs the
#: same way (44 of the series' 133 s when it was retried).
HANGS = "mpich/ucx-sm+tcp"


def _series(conf: Path, out: Path) -> list:
    """Ring (core), Jacobi (socket, pure) and the IMB collectives (core) over the 4 nodes.

    The series holds 1, 2 and 4 nodes (N = 1, 2 | 4 | 8 at two ranks a node).
    The Jacobi in strong scaling: its weak-scaling model needs each level's
    pt2pt, and the off-node one (mapping node) puts a rank on the first core
    of each node, one CPU of this host for all of them, where MPICH takes
    minutes; the model of a pair is judged offline (test_checks_offline.py).
    A shutdown that hangs (MPICH's) is stopped after 8 s, not 60
    (conftest's FINALIZE_TIMEOUT). Three sessions side by side, Slurm sharing
    the nodes between their jobs as between one session's: :data:`HANGS`
    without retries; every other transport of the distribution's MPIs and
    Intel MPI; today's MPIs (:data:`CURRENT`, in the PyPI prefixes, each
    with its own launcher in the allocation: :data:`OWN_LAUNCH`). The last
    two retry the known failures of a launch, and only those (Open MPI 4's
    TCP BTL; under srun, Open MPI 5's race in MPI_Init and Slurm's PMI-2
    server splitting MPICH 5's request: docs/slurm.md).
    """
    others = ",".join(t for t in SERIES_TRANSPORTS.split(",") if t != HANGS)
    current = [x for env in CURRENT for x in ("-p", f"{env}$")]
    started = [_start_on_rig(conf, out / name, [
        *QUICK, *extra,
        *(x for check in ("RingCheck", "JacobiCheck", "CollectivesCheck")
          for x in ("-S", f"{check}.transports={transports}",
                    "-S", f"{check}.max_nodes={NODES}")),
        "-S", "RingCheck.laps=50", "-S", "RingCheck.repetitions=3",
        # the collectives asserted (their spans: the barrier's), and one reduction
        "-S", "CollectivesCheck.operations=Barrier,Allreduce",
        "-S", "JacobiCheck.scaling=strong", "-S", "JacobiCheck.global_size=32",
        "-S", "time_limit=3m",
        "-n", "^(RingCheck|CollectivesCheck).*mapping=core|"
              "^JacobiCheck.*mapping=socket.*mode=pure"],
        ("ring.py", "jacobi.py", "collectives.py"), env)
        for name, transports, extra, env in (
            ("hangs", HANGS, ["-p", "mpich$", "--max-retries=0"], None),
            ("series", others, [RETRY_CRASH], None),
            ("current", CURRENT_TRANSPORTS, [*current, RETRY_CRASH],
             {"SENTINEL_MPI_PREFIXES": MPI_PREFIXES}))]
    runs = [session.wait() for session in started]
    for run in runs:
        run.assert_retries(f"{OMPI_TCP_CRASH}|{SLURM_PMI_REJECT}")
    return runs


#: Per check, the series' counts at 2 ranks a node and which nodes each spans.
SPANS = {"RingCheck": "lap_N{n}", "JacobiCheck": "efficiency_N{n}",
         "CollectivesCheck": "barrier_latency_P{n}"}


def test_the_series_cross_nodes_on_production_pairs_and_hold_shared_memory_to_one(rig, tmp_path):
    runs = _series(rig, tmp_path)
    per_node = SHAPE.cpus
    ran, passed = set(), set()
    for check, variable in SPANS.items():
        for tc, output in ((tc, r.output) for r in runs for tc in r.cases(check)):
            if tc["result"] == "skip":
                # IMB-MPI1 ships with Intel MPI only; elsewhere its source build is needed
                assert check == "CollectivesCheck" and "IMB-MPI1 not found" in (
                    tc.get("skip_reason") or ""), (tc["display_name"], tc.get("skip_reason"))
                continue
            ran.add((check, tc["environ"]))
            if tc["environ"] in OWN_LAUNCH:  # each step of the series, no srun
                script = job_file(tc, "rfm_job.sh")
                assert OWN_LAUNCH[tc["environ"]] in script and "srun" not in script
            if tc["transport"] in BOTH_LEVELS and tc["result"] == "pass":
                passed.add(tc["environ"])
            hosts = {h for h, _ in _affinity(tc).values()}
            values = {k.split(":")[-1] for k in tc["perfvalues"]}
            if tc["transport"] in BOTH_LEVELS:  # a pair: 1, 2 and 4 nodes, both paths proven
                assert hosts == {f"m{k}" for k in range(1, NODES + 1)}, \
                    (tc["display_name"], tc.get("fail_reason"))
                assert all(s in tc["transport_selected"] for s in BOTH_LEVELS[tc["transport"]])
                if tc["environ"] == "mpich" and tc["result"] == "fail":
                    # MPICH 4.0.2 over UCX deadlocks in MPI_Finalize (fixed in 4.2): the
                    # results are out and verified, the shutdown is what fails
                    assert FINALIZE_HANG in tc["fail_reason"], tc["fail_reason"]
                    assert MPICH_FINALIZE_NOTE in tc["fail_reason"]
                    continue
                assert {variable.format(n=n) for n in (per_node, 2 * per_node,
                                                       NODES * per_node)} <= values
            else:  # shared memory: one node, saying why
                assert len(hosts) == 1, tc["display_name"]
                assert "carries traffic within a node only (shared memory): held to one " \
                       f"node of the {NODES} asked" in tc["span_note"]
                assert variable.format(n=2 * per_node) not in values
            assert tc["result"] == "pass", tc.get("fail_reason") or output[-3000:]
    assert {(check, e) for check in ("RingCheck", "JacobiCheck")
            for e in (*PAIRS, *CURRENT)} <= ran
    assert ("CollectivesCheck", "intelmpi") in ran
    assert set(CURRENT) <= passed, passed


#: Each environment's transport between nodes.
NETWORK = {"openmpi": "ob1-tcp", "mpich": "ucx-tcp", "intelmpi": "ofi-tcp",
           "openmpi-5_0": "ob1-tcp", "mpich-5_0": "ucx-tcp"}
#: Verified messages a directed pair in the rig's sweeps.
RIG_VERIFY = 3


def _start_verified(conf: Path, out: Path, *extra: str) -> Started:
    """Every MPI's fabric neighbours sweep over the 4 nodes, each pair's payloads verified.

    Its latency verdict at the factor the namespaced nodes need (their
    latency is the kernel waking a rank on a CPU two nodes share:
    test_netcluster_local's RIG_LATENCY_FACTOR); the pairs' bandwidth is
    judged as everywhere.
    """
    environs = [x for e in NETWORK for x in ("-p", f"{e}$")]
    transports = ",".join(sorted({f"{e.split('-')[0]}/{t}" for e, t in NETWORK.items()}))
    return _start_on_rig(conf, out, [
        *QUICK, RETRY_CRASH, *environs, "-n", "^FabricCheck.*mapping=node.*mode=pairs",
        "-S", f"FabricCheck.transports={transports}", "-S", "FabricCheck.rounds=neighbours",
        "-S", "FabricCheck.size=1048576", "-S", "FabricCheck.iterations=10",
        "-S", "FabricCheck.latency_iterations=300", "-S", "FabricCheck.latency_factor=10",
        "-S", f"FabricCheck.verify={RIG_VERIFY}", "-S", "time_limit=5m", *extra],
        ("fabric.py",), {"SENTINEL_MPI_PREFIXES": MPI_PREFIXES})


def _sweep_of(run, environ: str) -> dict:
    need_environ(environ)
    return run.case("FabricCheck", environ=environ, transport=NETWORK[environ], mapping="node")


@pytest.fixture(scope="module")
def verified_sweeps(rig, tmp_path_factory):
    """The intact sweeps and those with link 1 -> 2 corrupting a byte, side by side."""
    out = tmp_path_factory.mktemp("verified")
    started = [_start_verified(rig, out / "intact"),
               _start_verified(rig, out / "corrupt", "-S", "FabricCheck.corrupt_link=1:2")]
    intact, corrupt = (session.wait() for session in started)
    intact.assert_retries(OMPI_TCP_CRASH)
    # a corruption is retried as any failure is, and found again
    corrupt.assert_retries(f"{OMPI_TCP_CRASH}|data corrupted over")
    return intact, corrupt


@pytest.mark.parametrize("environ", sorted(NETWORK))
def test_every_mpi_carries_each_links_verified_payloads_intact_across_the_nodes(
        verified_sweeps, environ):
    tc = _sweep_of(verified_sweeps[0], environ)
    hosts = {h for h, _ in _affinity(tc).values()}
    assert hosts == {f"m{k}" for k in range(1, NODES + 1)}, tc["display_name"]
    # the neighbours sweep's 4 steps (i -> i+1, i -> i-1 at distances 1 and 2 of
    # the ring of 4): 8 directed pairs a step, each pair's messages verified
    verify = re.findall(r"^SENTINEL_VERIFY bytes=(\d+) messages=(\d+) errors=(\d+)",
                        job_file(tc, "rfm_job.out"), re.M)
    assert verify and all(e == "0" and int(m) >= RIG_VERIFY for _, m, e in verify), verify
    if environ == "mpich" and tc["result"] == "fail":
        # MPICH 4.0.2 over UCX deadlocks in MPI_Finalize between nodes (fixed in 4.2)
        assert FINALIZE_HANG in tc["fail_reason"], tc["fail_reason"]
        return
    assert tc["result"] == "pass", tc.get("fail_reason")


@pytest.mark.parametrize("environ", sorted(NETWORK))
def test_every_mpi_names_the_link_that_corrupts_a_byte(verified_sweeps, environ):
    tc = _sweep_of(verified_sweeps[1], environ)
    reason = tc.get("fail_reason") or ""
    assert tc["result"] == "fail", tc["display_name"]
    found = re.search(rf"data corrupted over {environ.split('-')[0]}/{NETWORK[environ]}: a "
                      r"1048576-byte message from rank 1 on (m\d) to rank 2 on (m\d) arrived "
                      r"with byte 524288 = ", reason)
    assert found and found.group(1) != found.group(2), reason
    assert f"(message 0; 1 of the {RIG_VERIFY} verified messages" in reason, reason


#: What each MPI's log shows of its one-sided path between two of the rig's
#: nodes over its network transport (sentinel.mpi.onesided).
ONE_SIDED = {"openmpi": "osc=pt2pt", "openmpi-5_0": "osc=rdma rdma_btls=tcp:rdma",
             "mpich": "ucx_rma_am=tcp", "mpich-5_0": "ucx_rma_am=tcp", "intelmpi": "ofi_rma=0"}


@pytest.fixture(scope="module")
def one_sided_across(rig, tmp_path_factory):
    """Every MPI's RmaCheck over its network transport, a rank on each of two nodes."""
    environs = [x for e in NETWORK for x in ("-p", f"{e}$")]
    transports = ",".join(sorted({f"{e.split('-')[0]}/{t}" for e, t in NETWORK.items()}))
    run = _on_rig(rig, tmp_path_factory.mktemp("rma") / "across", [
        *QUICK, RETRY_CRASH, *environs, "-n", "^RmaCheck.*mapping=node",
        "-S", f"RmaCheck.transports={transports}", "-S", "RmaCheck.max_size=1024",
        "-S", "time_limit=5m"], ("rma.py",), {"SENTINEL_MPI_PREFIXES": MPI_PREFIXES})
    run.assert_retries(OMPI_TCP_CRASH)
    return run


@pytest.mark.parametrize("environ", sorted(NETWORK))
def test_every_mpi_proves_its_one_sided_path_between_two_nodes(one_sided_across, environ):
    need_environ(environ)
    tc = one_sided_across.case("RmaCheck", environ=environ, transport=NETWORK[environ],
                               mapping="node")
    assert len({h for h, _ in _affinity(tc).values()}) == 2, tc["display_name"]
    assert tc["one_sided_selected"].startswith(ONE_SIDED[environ]), tc["one_sided_selected"]
    if environ == "mpich" and tc["result"] == "fail":
        # MPICH 4.0.2 over UCX deadlocks in MPI_Finalize between nodes (fixed in 4.2),
        # after every value and its path were judged
        assert FINALIZE_HANG in tc["fail_reason"], tc["fail_reason"]
        return
    assert tc["result"] == "pass", tc.get("fail_reason")


@pytest.fixture(scope="module")
def thread_rate_across(rig, tmp_path_factory):
    """Every MPI's ThreadRateCheck over its network transport, a rank on each of two nodes."""
    environs = [x for e in NETWORK for x in ("-p", f"{e}$")]
    transports = ",".join(sorted({f"{e.split('-')[0]}/{t}" for e, t in NETWORK.items()}))
    run = _on_rig(rig, tmp_path_factory.mktemp("msgrate") / "across", [
        *QUICK, RETRY_CRASH, *environs, "-n", "^ThreadRateCheck.*mapping=node",
        "-S", f"ThreadRateCheck.transports={transports}", "-S", "time_limit=5m"],
        ("msgrate.py",), {"SENTINEL_MPI_PREFIXES": MPI_PREFIXES})
    run.assert_retries(OMPI_TCP_CRASH)
    return run


@pytest.mark.parametrize("environ", sorted(NETWORK))
def test_every_mpi_reports_its_thread_rate_between_two_nodes(thread_rate_across, environ):
    """A rank on each of two nodes, its threads on a socket of its node, under THREAD_MULTIPLE.

    What the rig can show: that every MPI provides MPI_THREAD_MULTIPLE and
    runs the threaded exchange across the nodes' network, each rank's thread
    proven on a core of its own of its socket, and that the check plans its
    thread counts from the node's declared sockets: the rig's are one CPU
    each, so one thread a rank, the rate at one thread and no scaling. What
    it cannot: the scaling. The rig's nodes share this host's two CPUs, so
    any second thread would be a third busy thread on two CPUs, its rate the
    scheduler's (0.3 % to 60 % of one thread's here, measured by hand, with
    or without a serialising lock). The scaling and its verdict are tested
    offline, on a site's shape (tests/unit/test_checks_offline.py).
    """
    need_environ(environ)
    tc = thread_rate_across.case("ThreadRateCheck", environ=environ,
                                 transport=NETWORK[environ], mapping="node")
    assert len({h for h, _ in _affinity(tc).values()}) == 2, tc["display_name"]
    if environ == "mpich" and tc["result"] == "fail":
        # MPICH 4.0.2 over UCX deadlocks in MPI_Finalize between nodes (fixed in 4.2),
        # after every value was judged
        assert FINALIZE_HANG in tc["fail_reason"], tc["fail_reason"]
        return
    assert tc["result"] == "pass", tc.get("fail_reason")
    assert tc["thread_counts"] == [1], tc["thread_counts"]
    values = {k.split(":")[-1]: v[0] for k, v in tc["perfvalues"].items()}
    assert values["rate_T1"] > 1000, values
    assert not any(name.startswith("scaling_") for name in values), values


#: Bands of the congestion impact on the median latency of each congestor
#: pattern, as a site whose fabric is this rig's would have them: over 20
#: unchanged sessions of the rig (tests/data/nights, group i) Open MPI's TCP
#: path had an impact of 3.3 to 7.9 on the median, 5.5 typically (its nodes'
#: ranks share this host's CPUs); with the spine limited to 200 Mbit/s, 72 to
#: 131 (2026-12-02, the quick mode): up to 15 (5 with +200 %) holds the one,
#: not the other.
CONGESTION_REFERENCES = "CongestionCheck:\n" \
    "  $index: [$partition, $environ, transport_name, mapping]\n" \
    "  local:slurm-net:\n    openmpi:\n      ob1-tcp:\n        node:\n" + "".join(
        f"          {p}_impact_latency_p50: [5.0, -1.0, 2.0, '1']\n"
        for p in ("alltoall", "incast", "bcast"))
#: The spine's limit that congests it: about a twentieth of the TCP bandwidth
#: between two of the rig's nodes, shared by the victims and the congestors.
SPINE_RATE = "200mbit"


def _congestion(conf: Path, out: Path, environs: list[str], retried: str = OMPI_TCP_CRASH):
    refs = out.parent / f"{out.name}-references"
    refs.mkdir(parents=True)
    (refs / "local.yaml").write_text(CONGESTION_REFERENCES)
    transports = ",".join(sorted({f"{e.split('-')[0]}/{t}" for e, t in NETWORK.items()}))
    run = _on_rig(conf, out, [
        *QUICK, RETRY_CRASH, *(x for e in environs for x in ("-p", f"{e}$")),
        "-n", "^CongestionCheck.*mapping=node", "-S", f"CongestionCheck.transports={transports}",
        "-S", "time_limit=5m"], ("congestion.py",),
        {"SENTINEL_MPI_PREFIXES": MPI_PREFIXES, "SENTINEL_REFERENCES": str(refs)})
    # MPICH 4.0.2's shutdown over UCX, after every value was judged, is retried
    # as any failure is, and hangs again
    run.assert_retries(f"{retried}|{MPICH_FINALIZE_HANG}")
    return run


@pytest.fixture(scope="module")
def congestion_across(rig, tmp_path_factory):
    """Every MPI's CongestionCheck over its network transport, the rig's spine as it is."""
    return _congestion(rig, tmp_path_factory.mktemp("congestion") / "quiet", sorted(NETWORK))


def _values(tc: dict) -> dict[str, float]:
    return {k.split(":")[-1]: v[0] for k, v in tc["perfvalues"].items()}


@pytest.mark.parametrize("environ", sorted(NETWORK))
def test_every_mpi_measures_a_victim_beside_congestors_on_the_other_nodes(
        congestion_across, environ):
    """Two victim nodes across the spine, two congestor nodes, each pattern quiet and loaded.

    What the rig can show: that every MPI runs the victims (ranks 0 and 1 on
    m1 and m2, one leaf each, so their traffic crosses the spine) beside
    congestors on the other two nodes running each pattern while the
    victims measure, and that the verdict stays silent on an unchanged
    fabric (Open MPI's impact on the median within the band of the rig's
    levels). What it cannot: a fabric's own impact on an idle network. The
    nodes share this host's two CPUs (every rank on CPU 0 of its node), so a
    congestor's busy rank takes CPU time from a victim's, and the rig's
    impact (over 20 unchanged sessions, 3.3 to 7.9 on the median and 6.4 to
    24 on the 99th percentile for Open MPI, 6.2 to 25 and 20 to 65 for Intel
    MPI) is the scheduler's, not the bridges': a site's quiet fabric gives
    about 1.
    """
    need_environ(environ)
    tc = congestion_across.case("CongestionCheck", environ=environ,
                                transport=NETWORK[environ], mapping="node")
    placed = _affinity(tc)
    assert {r: h for r, (h, _) in placed.items()} == {0: "m1", 1: "m2", 2: "m3", 3: "m4"}
    assert {netns.Node(k).leaf for k in (1, 2)} == set(netns.LEAVES)  # across the spine
    if environ == "mpich" and tc["result"] == "fail":
        # MPICH 4.0.2 over UCX deadlocks in MPI_Finalize between nodes (fixed in 4.2),
        # after every value was judged
        assert FINALIZE_HANG in tc["fail_reason"], tc["fail_reason"]
        return
    assert tc["result"] == "pass", tc.get("fail_reason")
    values = _values(tc)
    assert {n for n in values if not n.startswith("host_")} == set(
        congestion.expected(congestion.PATTERNS))
    assert all(values[f"{p}_congestor_bw"] > 0 for p in congestion.PATTERNS), values
    if environ == "openmpi":  # judged: each pattern's band held
        judged = {k.split(":")[-1] for k, v in tc["perfvalues"].items() if v[3] is not None}
        assert judged == {f"{p}_impact_latency_p50" for p in congestion.PATTERNS}, judged


def test_a_congested_spine_fails_the_impact_naming_the_pattern(rig, tmp_path):
    """The spine limited to a twentieth: the congestors' packets queue ahead of the victims'.

    The same victims, congestors and bands as above; one tbf queue on each
    end of the spine, which the victims' and the congestors' flows share, as
    an oversubscribed uplink without congestion control does.
    """
    need_environ("openmpi")
    try:
        netns.limit_spine(SPINE_RATE)
    except netns.NetworkError as err:  # (netns.unavailable would take the rig's nodes down)
        need_capability("tc", f"cannot limit the rig's spine: {err}")
    try:
        # a value outside its band is measured again before it fails
        run = _congestion(rig, tmp_path / "spine", ["openmpi"],
                          f"{OMPI_TCP_CRASH}|failed to meet reference")
    finally:
        netns.restore_spine()
    tc = run.case("CongestionCheck", environ="openmpi", transport="ob1-tcp", mapping="node")
    assert tc["result"] == "fail", tc["display_name"]
    # every attempt: the impact outside its band, or Open MPI 4.1.4's known TCP crash
    attempts = [*run.retried().get(tc["name"], []), tc.get("fail_reason") or ""]
    judged = [why for why in attempts if "failed to meet reference" in why]
    assert judged and all(why in judged or re.search(OMPI_TCP_CRASH, why)
                          for why in attempts), attempts
    for why in judged:  # the queue, not the CPUs: far beyond the rig's quiet 3.3 to 7.9
        named = dict(re.findall(r"(\w+)_impact_latency_p50=([\d.]+) 1, expected", why))
        assert set(named) <= set(congestion.PATTERNS) and named, why
        assert all(float(v) > 15 for v in named.values()), why


#: The whole nightly over the rig takes about 40 minutes on this 2-CPU host.
NIGHTLY_VAR = "SENTINEL_RIG_NIGHTLY"


def _quick_sizes() -> list[str]:
    """The quick mode's sizes, without its transport selections and time limit."""
    quick = runpy.run_path(str(ROOT / "config" / "common.py"))["QUICK"]
    pairs = list(zip(quick[0::2], quick[1::2]))
    return [x for opt, value in pairs if "transports=" not in value
            and not value.startswith("time_limit") for x in (opt, value)]


def test_the_nightly_over_the_rig_fails_only_where_the_rig_or_mpich_does(rig, tmp_path):
    if os.environ.get(NIGHTLY_VAR) != "1":
        pytest.skip(f"the whole nightly over the rig takes about 40 minutes on 2 CPUs; "
                    f"{NIGHTLY_VAR}=1 runs it (the tests above run its parts)")
    run = _on_rig(rig, tmp_path / "nightly", ["--mode", "nightly", "-S", "night=0",
                                              *_quick_sizes()])
    failed = [tc for tc in run.cases() if tc["result"] == "fail"]
    for tc in failed:
        # MPICH 4.0.2's shutdown deadlock, verified first; nothing else fails
        assert tc["environ"] == "mpich" and FINALIZE_HANG in tc["fail_reason"], \
            (tc["display_name"], tc["fail_reason"])
    ran = [tc for tc in run.cases() if tc["result"] == "pass"]
    assert {tc["environ"] for tc in ran} == {"openmpi", "mpich", "intelmpi"}
    # the packed jobs ran, and no shared memory crossed a node
    assert any(tc["transport"].endswith("-all") for tc in ran)
