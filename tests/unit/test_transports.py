import re

import pytest

from sentinel.errors import SentinelError
from sentinel.mpi.placement import Levels, RankPlacement
from sentinel.mpi.transports import (
    CATALOGUE,
    FAMILIES,
    declared,
    lookup,
    names,
    with_device_memory,
)
from sentinel.mpi.verify import observe, problems
from tests.conftest import DATA

FEATURE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_-]*$")
#: A pair's name joins its levels with "+": a test-name component, not a feature.
NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_-]*(\+[a-zA-Z0-9_-]+)?$")


def test_names_are_valid_reframe_features_and_unique_per_family():
    for t in CATALOGUE.values():
        assert NAME.match(t.name), t.name
        assert all(FEATURE.match(f) for f in t.features), t.features
        assert ("+" in t.name) == bool(t.halves), t.name
        assert t.family in FAMILIES
    for fam in FAMILIES:
        assert len(names(fam)) == len(set(names(fam)))


def test_shared_memory_transports_are_intra_node_only():
    intra = {t.key for t in CATALOGUE.values() if t.intra_node}
    assert {"openmpi/ob1-vader", "openmpi/ob1-sm", "openmpi/ucx-sm", "mpich/ucx-sm",
            "intelmpi/shm", "intelmpi/ofi-shm"} == intra


def test_no_btl_settings_under_ucx():
    for t in CATALOGUE.values():
        if t.env.get("OMPI_MCA_pml") in ("ucx", "cm"):
            assert "OMPI_MCA_btl" not in t.env, t.key


def test_a_pair_carries_shared_memory_on_the_node_and_the_network_off_it():
    pairs = {t.key: (t.on_node, t.off_node) for t in CATALOGUE.values() if t.is_pair}
    assert pairs["openmpi/ob1-vader+tcp"] == ("vader", "tcp")
    assert pairs["intelmpi/shm-ofi-tcp"] == ("shm", "ofi:tcp")
    assert {k for k in pairs if k.startswith("mpich/")} == {
        "mpich/ucx-sm+tcp", "mpich/ucx-sm+rc", "mpich/ucx-sm+dc", "mpich/ucx-sm+ud"}
    for t in CATALOGUE.values():
        if t.halves:
            on, off = (lookup(t.family, h) for h in t.halves)
            assert on.intra_node and not off.intra_node, t.key
            assert (t.on_node, t.off_node) == (on.on_node, off.off_node), t.key
    assert lookup("openmpi", "ucx-sm+tcp").env["UCX_TLS"] == "sm,tcp,self"
    assert lookup("openmpi", "ob1-vader+tcp").env["OMPI_MCA_btl"] == "self,vader,tcp"


def test_every_transport_has_a_verification_rule_and_a_probe():
    for t in CATALOGUE.values():
        assert t.expect and t.probe_env, t.key


def test_lookup_errors_name_the_choices():
    with pytest.raises(SentinelError, match="unknown transport 'ob1-ib' for openmpi"):
        lookup("openmpi", "ob1-ib")
    with pytest.raises(SentinelError, match="unknown MPI family 'lam'"):
        lookup("lam", "tcp")
    assert lookup("intelmpi", "shm-ofi-tcp").env["I_MPI_FABRICS"] == "shm:ofi"


# Real logs captured on a Debian 12 machine (tests/data/logs/<family>_<name>.txt).
CAPTURED = sorted(p.stem for p in (DATA / "logs").glob("*.txt"))


#: Ranks that shared a node and spanned two: where a pair must show both its paths.
BOTH_LEVELS = Levels("ranks 0, 1 on n1", "n1, n2")


def read_log(path) -> tuple:
    """A log's selection and, where it holds the ranks' affinity lines, their levels."""
    text = path.read_text()
    ranks = [RankPlacement(int(r), h, frozenset())
             for r, h in re.findall(r"^SENTINEL_AFFINITY rank=(\d+) host=(\S+)", text, re.M)]
    return observe(text), (Levels.of([ranks]) if ranks else None)


def fails_every_other(family: str, name: str, sel, levels) -> None:
    """``sel`` passes as no other transport of ``family``.

    A log of one level passes as a pair it is a half of where the pair's
    ranks kept to that level; where they crossed both, it fails the pair.
    """
    t = lookup(family, name)
    # a log of ob1-tcp over lo is a log of ob1-tcp too
    base = t.name[: -len(t.interface) - 1] if t.interface else t.name
    for other in names(family):
        o = lookup(family, other)
        if other in (name, base):
            continue
        if base in o.halves:
            assert problems(o, sel, BOTH_LEVELS), f"{name}'s log passed as {other}"
        else:
            assert problems(o, sel, levels), f"{name}'s log passed as {other}"


@pytest.mark.parametrize("stem", CAPTURED)
def test_captured_log_verifies_its_own_transport(stem):
    family, name = stem.split("_", 1)
    sel, levels = read_log(DATA / "logs" / f"{stem}.txt")
    assert problems(lookup(family, name), sel, levels) == []


@pytest.mark.parametrize("stem", CAPTURED)
def test_captured_log_fails_every_other_transport_of_its_family(stem):
    family, name = stem.split("_", 1)
    fails_every_other(family, name, *read_log(DATA / "logs" / f"{stem}.txt"))


def test_an_interface_is_a_suffix_of_the_transport_name():
    t = lookup("openmpi", "ob1-tcp-ib0")
    assert (t.name, t.interface, t.key) == ("ob1-tcp-ib0", "ib0", "openmpi/ob1-tcp-ib0")
    assert t.env["OMPI_MCA_btl_tcp_if_include"] == "ib0" and t.expect["interface"] == "ib0"
    assert lookup("intelmpi", "shm-ofi-sockets-br0").env == {
        "I_MPI_FABRICS": "shm:ofi", "I_MPI_OFI_PROVIDER": "sockets", "FI_SOCKETS_IFACE": "br0"}
    assert lookup("mpich", "ucx-tcp-ib0").env["UCX_NET_DEVICES"] == "ib0"
    # libfabric's tcp provider under Open MPI and MPICH does not log its interface
    assert "interface" not in lookup("openmpi", "ofi-tcp-hsn0").expect
    assert lookup("mpich", "ofi-tcp-hsn0").env["FI_TCP_IFACE"] == "hsn0"


@pytest.mark.parametrize("family, name, message", [
    ("openmpi", "ob1-vader-ib0", "unknown transport 'ob1-vader-ib0' for openmpi"),
    ("openmpi", "ucx-rc-mlx5_0",
     "over an interface: <name>-<interface> for ob1-sm+tcp, ob1-tcp, ob1-vader+tcp, ofi-"),
    ("intelmpi", "ofi-mlx-ib0", "unknown transport 'ofi-mlx-ib0' for intelmpi"),
])
def test_an_interface_on_a_transport_without_one_is_an_error(family, name, message):
    with pytest.raises(SentinelError, match=re.escape(message)):
        lookup(family, name)


def test_an_environment_declares_its_transports_by_feature():
    features = {"mpi", "openmpi", "ob1-tcp-ib0", "ob1-tcp-br0", "ob1-vader", "ucx-rc", "gpu"}
    assert [t.key for t in declared(features)] == [
        "openmpi/ob1-tcp-br0", "openmpi/ob1-tcp-ib0", "openmpi/ob1-vader",
        "openmpi/ob1-vader+tcp-br0", "openmpi/ob1-vader+tcp-ib0", "openmpi/ucx-rc"]
    assert declared({"ob1-vader"}) == []  # no family, no transport
    # a pair where both halves are offered, and only there
    assert [t.name for t in declared({"mpich", "ucx-sm", "ucx-tcp", "ucx-rc"})] == [
        "ucx-rc", "ucx-sm", "ucx-sm+rc", "ucx-sm+tcp", "ucx-tcp"]
    assert [t.name for t in declared({"openmpi", "ucx-tcp", "ob1-tcp"})] == ["ob1-tcp", "ucx-tcp"]
    pinned = lookup("openmpi", "ob1-vader+tcp-ib0")
    assert pinned.features == ("ob1-vader", "ob1-tcp-ib0")
    assert pinned.env["OMPI_MCA_btl_tcp_if_include"] == "ib0"


def test_the_wrong_interface_is_named():
    sel = observe((DATA / "logs" / "openmpi_ob1-tcp-lo.txt").read_text())
    assert problems(lookup("openmpi", "ob1-tcp-ib0"), sel) == [
        "requested interface=ib0, the run selected interface=lo"]
    sel = observe((DATA / "logs" / "intelmpi_ofi-tcp-lo.txt").read_text())
    assert problems(lookup("intelmpi", "ofi-tcp-br0"), sel) == [
        "requested interface=br0, the run selected interface=lo"]


# Lines the libraries' documentation and published logs give, for the
# transports this machine cannot run (tests/data/logs/documented/README.md).
DOCUMENTED = sorted(p.stem for p in (DATA / "logs" / "documented").glob("*.txt"))


@pytest.mark.parametrize("stem", DOCUMENTED)
def test_documented_log_verifies_its_own_transport_and_no_other(stem):
    family, name = stem.split("_", 1)
    sel, levels = read_log(DATA / "logs" / "documented" / f"{stem}.txt")
    assert problems(lookup(family, name), sel, levels) == []
    fails_every_other(family, name, sel, levels)


def test_every_catalogue_entry_is_checked_on_a_real_or_a_documented_log():
    checked = set(CAPTURED) | set(DOCUMENTED)
    assert not set(CAPTURED) & set(DOCUMENTED)
    missing = [t.key for t in CATALOGUE.values() if t.key.replace("/", "_") not in checked]
    assert missing == []


def test_the_transports_page_marks_which_entries_were_verified_on_a_real_log():
    readme = (DATA.parents[1] / "docs" / "transports.md").read_text()
    rows = dict(re.findall(r"^\| `(\w+/[\w+-]+)` \|.*\| (real log|documented lines) \|$", readme,
                           re.MULTILINE))
    assert set(rows) == set(CATALOGUE)
    for key, how in rows.items():
        real = key.replace("/", "_") in CAPTURED
        assert how == ("real log" if real else "documented lines"), key


def test_newer_library_formats_are_read():
    # UCX 1.15+ names an endpoint "inter-node cfg#N"; Open MPI 5 names the
    # provider "mtl:ofi:provider:" (4.1 used that label for the domain)
    sel = observe("[1] [h:1:0] ucp_worker.c:1903 UCX  INFO    ucp_context_0 inter-node cfg#1 "
                  "tag(dc_mlx5/mlx5_2:1)\n")
    assert sel.ucx == {"dc_mlx5"}
    four = observe("[h:1] mtl_ofi_component.c:346: mtl:ofi:prov: psm3\n"
                   "[h:1] mtl_ofi_component.c:365: mtl:ofi:provider: mlx5_0\n")
    assert four.ofi == {"psm3"}
    five = observe("[h:1] common_ofi.c:1: mtl:ofi:provider: cxi\n"
                   "[h:1] common_ofi.c:2: mtl:ofi:provider:domain: cxi0\n")
    assert five.ofi == {"cxi"}
    # MPICH lists every candidate provider; only the capability dump names the one used
    mpich = observe("provider: verbs;ofi_rxm, score = 5, pref = 0, FI_SOCKADDR_IB [48]\n"
                    "provider: tcp;ofi_rxm, score = 4, pref = 0, FI_SOCKADDR_IN [16] 10.0.0.1\n"
                    "==== Capability set configuration ====\n"
                    "libfabric provider: tcp;ofi_rxm - 10.0.0.0/24\n")
    assert (mpich.netmod, mpich.ofi) == ({"ofi"}, {"tcp"})
    # Intel MPI 2021.12's NIC table has no thread column
    nic = observe("[0] MPI startup(): ===== NIC pinning on h =====\n"
                  "[0] MPI startup(): Rank    Pin nic\n[0] MPI startup(): 0       ib0\n"
                  "[0] MPI startup(): Rank    Pid      Node name  Pin cpu\n"
                  "[0] MPI startup(): 0       212192   h  {0,1}\n")
    assert nic.interface == {"ib0"}


def test_mismatch_message_names_requested_and_selected():
    sel = observe((DATA / "logs" / "openmpi_ob1-vader.txt").read_text())
    msgs = problems(lookup("openmpi", "ucx-sm"), sel)
    assert "requested pml=ucx, the run selected pml=ob1" in msgs
    msgs = problems(lookup("openmpi", "ob1-tcp"), sel)
    assert msgs == ["requested btl=tcp, the run selected btl=vader"]


def test_silent_log_is_not_a_pass():
    assert problems(lookup("mpich", "ucx-sm"), observe("")) == [
        "requested netmod=ucx, the library logged no netmod selection",
        "UCX logged no endpoint to a peer (no 'ep_cfg' line)",
    ]


def test_detection_leaves_out_development_providers_and_says_so():
    from sentinel.site.detect import production_providers

    notes: list[str] = []
    assert production_providers(["tcp", "udp", "verbs"], notes) == ["tcp", "verbs"]
    assert notes == ["OFI provider udp present, not declared: a development provider "
                     "(declare ofi-udp in a site configuration to test it)"]


def test_slurm_partitions_take_the_cpus_a_job_gets_on_their_smallest_node():
    from sentinel.site.slurm import SlurmPartition, parse_partitions

    # Real `scontrol -o show nodes` lines (Slurm 22.05, shortened): n1 reserves
    # one of its two CPUs (CpuSpecList=1); b1 is an older Slurm without CPUEfctv;
    # x9 says no CPU count, and a line that is no node is ignored.
    text = (
        "NodeName=c1 Arch=x86_64 CoresPerSocket=2  CPUAlloc=0 CPUEfctv=2 CPUTot=2 "
        "Partitions=one\n"
        "NodeName=n1 Arch=x86_64 CoresPerSocket=2  CPUAlloc=0 CPUEfctv=1 CPUTot=2 "
        "CoreSpecCount=1 CPUSpecList=1 Partitions=two\n"
        "NodeName=n2 Arch=x86_64 CoresPerSocket=2  CPUAlloc=0 CPUEfctv=1 CPUTot=2 "
        "Partitions=two\n"
        "NodeName=b1 Arch=x86_64 CoresPerSocket=24 CPUAlloc=0 CPUTot=48 Partitions=big\n"
        "NodeName=b2 Arch=x86_64 CoresPerSocket=16 CPUAlloc=0 CPUTot=32 Partitions=big\n"
        "NodeName=x9 Arch=x86_64 Partitions=lost\n"
        "garbage\n")
    assert parse_partitions(text) == [SlurmPartition("one", 1, 2),
                                      SlurmPartition("two", 2, 1),
                                      SlurmPartition("big", 2, 32)]


def test_slurm_pmi2_library_is_read_from_the_linker_cache():
    from sentinel.site.slurm import parse_pmi2_library

    # Real `ldconfig -p` lines (Debian 12 with libpmi2-0 and libpmix2).
    text = ("\tlibpmix.so.2 (libc6,x86-64) => /lib/x86_64-linux-gnu/libpmix.so.2\n"
            "\tlibpmi2.so.0 (libc6,x86-64) => /lib/x86_64-linux-gnu/libpmi2.so.0\n")
    assert parse_pmi2_library(text) == "/lib/x86_64-linux-gnu/libpmi2.so.0"
    assert parse_pmi2_library(text.splitlines()[0]) is None


# The production pairs' levels, on the real logs of a series over four
# namespaced nodes of two sockets each (tests/data/logs/<family>_<pair>.txt).
PAIR_LOGS = ["openmpi_ob1-vader+tcp", "openmpi_ucx-sm+tcp", "mpich_ucx-sm+tcp"]


def edited_log(stem: str, edit) -> tuple:
    path = DATA / "logs" / f"{stem}.txt"
    text = edit(path.read_text())
    ranks = [RankPlacement(int(r), h, frozenset())
             for r, h in re.findall(r"^SENTINEL_AFFINITY rank=(\d+) host=(\S+)", text, re.M)]
    return observe(text), Levels.of([ranks])


@pytest.mark.parametrize("stem", PAIR_LOGS)
def test_a_pair_is_proven_on_both_levels_of_its_own_log(stem):
    family, name = stem.split("_", 1)
    sel, levels = read_log(DATA / "logs" / f"{stem}.txt")
    assert levels.shares and levels.spans == "m1, m2, m3, m4"
    assert problems(lookup(family, name), sel, levels) == []


def test_on_node_traffic_over_the_network_fails_the_pair_naming_the_level():
    # a wrapper that drops vader from the BTLs: every peer over tcp
    sel, levels = edited_log("openmpi_ob1-vader+tcp",
                             lambda t: t.replace("Using vader btl", "Using tcp btl"))
    assert problems(lookup("openmpi", "ob1-vader+tcp"), sel, levels) == [
        "requested on-node traffic over btl=vader, the run used btl=tcp",
        "ranks shared a node (ranks 0, 1 on m1), but no on-node traffic went over vader"]


def test_off_node_traffic_over_shared_memory_fails_the_pair():
    # what UCX does where two "nodes" share one kernel: no tcp endpoint at all
    sel, levels = edited_log("mpich_ucx-sm+tcp", lambda t: "\n".join(
        line for line in t.splitlines() if "tcp/" not in line))
    assert problems(lookup("mpich", "ucx-sm+tcp"), sel, levels) == [
        "the ranks ran on m1, m2, m3, m4, but no traffic between them went over tcp"]


def test_off_node_traffic_over_another_network_fails_the_pair():
    sel, levels = edited_log("openmpi_ucx-sm+tcp",
                             lambda t: t.replace("tag(tcp/eth0)", "tag(ud_verbs/mlx5_0:1)"))
    assert problems(lookup("openmpi", "ucx-sm+tcp"), sel, levels) == [
        "requested UCX sm on the node and tcp off it (cma, knem, posix, sysv, tcp, xpmem), "
        "UCX used ud_verbs",
        "the ranks ran on m1, m2, m3, m4, but no traffic between them went over tcp"]


def test_a_shared_memory_transport_whose_ranks_spanned_nodes_fails_naming_them():
    sel = observe((DATA / "logs" / "openmpi_ob1-vader.txt").read_text())
    t = lookup("openmpi", "ob1-vader")
    assert problems(t, sel, Levels("ranks 0, 1 on m1", "")) == []
    assert problems(t, sel, Levels("", "m1, m2")) == [
        "ob1-vader carries traffic within a node only (shared memory), but the ranks ran on "
        "m1, m2"]


def test_a_pair_on_one_level_only_is_not_asked_for_the_other():
    sel, levels = read_log(DATA / "logs" / "openmpi_ob1-vader.txt")
    assert problems(lookup("openmpi", "ob1-vader+tcp"), sel, Levels("ranks 0, 1 on n1", "")) \
        == []
    assert problems(lookup("openmpi", "ob1-vader+tcp"), sel, Levels("", "n1, n2")) == [
        "the ranks ran on n1, n2, but no traffic between them went over tcp"]


def test_device_buffers_add_the_gpu_memory_transports_to_ucx_only():
    ucx = lookup("mpich", "ucx-sm+tcp").run_env()
    assert with_device_memory(ucx, "cuda")["UCX_TLS"] == "sm,tcp,self,cuda_copy,cuda_ipc"
    assert with_device_memory(ucx, "rocm")["UCX_TLS"] == "sm,tcp,self,rocm_copy,rocm_ipc"
    ob1 = lookup("openmpi", "ob1-tcp").run_env()
    assert with_device_memory(ob1, "cuda") == ob1
    with pytest.raises(SentinelError, match="unknown GPU runtime 'opencl'"):
        with_device_memory(ucx, "opencl")


def test_gpu_memory_lanes_prove_no_path_between_ranks():
    # a device-buffer endpoint: the network lane and UCX's CUDA copy lanes
    line = ("[1] [n1:7:0] ucp_worker.c:1763 UCX  INFO    ep_cfg[2]: "
            "tag(rc_mlx5/mlx5_0:1 cuda_copy/cuda cuda_ipc/cuda)\n")
    sel = observe("[n1:7] selected ucx best priority 51\n" + line)
    assert (sel.ucx, sel.ucx_device) == ({"rc_mlx5"}, {"cuda_copy", "cuda_ipc"})
    assert problems(lookup("openmpi", "ucx-rc"), sel) == []
    only_gpu = observe("[1] [n1:7:0] ucp_worker.c:1763 UCX  INFO    ep_cfg[2]: "
                       "tag(cuda_copy/cuda)\n")
    assert problems(lookup("mpich", "ucx-rc"), only_gpu)[-1] == (
        "UCX logged no endpoint to a peer (no 'ep_cfg' line)")


def test_pairs_over_a_shared_memory_transport_are_those_on_its_path():
    from sentinel.mpi.transports import pairs_over

    offered = declared({"openmpi", "ob1-vader", "ob1-tcp", "ucx-sm", "ucx-rc"})
    vader, ucx_sm = lookup("openmpi", "ob1-vader"), lookup("openmpi", "ucx-sm")
    assert [p.name for p in pairs_over(vader, offered)] == ["ob1-vader+tcp"]
    assert [p.name for p in pairs_over(ucx_sm, offered)] == ["ucx-sm+rc"]
    assert pairs_over(lookup("openmpi", "ob1-tcp"), offered) == []  # not shared memory
    intel = declared({"intelmpi", "shm", "ofi-shm", "shm-ofi-tcp"})
    assert [p.name for p in pairs_over(lookup("intelmpi", "shm"), intel)] == ["shm-ofi-tcp"]
    assert pairs_over(lookup("intelmpi", "ofi-shm"), intel) == []
