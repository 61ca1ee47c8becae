import re

import pytest

from sentinel.errors import SentinelError
from sentinel.mpi.transports import CATALOGUE, FAMILIES, declared, lookup, names
from sentinel.mpi.verify import observe, problems
from tests.conftest import DATA

FEATURE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_-]*$")


def test_names_are_valid_reframe_features_and_unique_per_family():
    for t in CATALOGUE.values():
        assert FEATURE.match(t.name), t.name
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


@pytest.mark.parametrize("stem", CAPTURED)
def test_captured_log_verifies_its_own_transport(stem):
    family, name = stem.split("_", 1)
    sel = observe((DATA / "logs" / f"{stem}.txt").read_text())
    assert problems(lookup(family, name), sel) == []


@pytest.mark.parametrize("stem", CAPTURED)
def test_captured_log_fails_every_other_transport_of_its_family(stem):
    family, name = stem.split("_", 1)
    sel = observe((DATA / "logs" / f"{stem}.txt").read_text())
    t = lookup(family, name)
    # a log of ob1-tcp over lo is a log of ob1-tcp too
    base = t.name[: -len(t.interface) - 1] if t.interface else t.name
    for other in names(family):
        if other not in (name, base):
            assert problems(lookup(family, other), sel), f"{stem} passed as {other}"


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
    ("openmpi", "ucx-rc-mlx5_0", "over an interface: <name>-<interface> for ob1-tcp, ofi-"),
    ("intelmpi", "ofi-mlx-ib0", "unknown transport 'ofi-mlx-ib0' for intelmpi"),
])
def test_an_interface_on_a_transport_without_one_is_an_error(family, name, message):
    with pytest.raises(SentinelError, match=re.escape(message)):
        lookup(family, name)


def test_an_environment_declares_its_transports_by_feature():
    features = {"mpi", "openmpi", "ob1-tcp-ib0", "ob1-tcp-br0", "ob1-vader", "ucx-rc", "gpu"}
    assert [t.key for t in declared(features)] == [
        "openmpi/ob1-tcp-br0", "openmpi/ob1-tcp-ib0", "openmpi/ob1-vader", "openmpi/ucx-rc"]
    assert declared({"ob1-vader"}) == []  # no family, no transport


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
    sel = observe((DATA / "logs" / "documented" / f"{stem}.txt").read_text())
    assert problems(lookup(family, name), sel) == []
    for other in names(family):
        if other != name:
            assert problems(lookup(family, other), sel), f"{stem} passed as {other}"


def test_every_catalogue_entry_is_checked_on_a_real_or_a_documented_log():
    checked = set(CAPTURED) | set(DOCUMENTED)
    assert not set(CAPTURED) & set(DOCUMENTED)
    missing = [t.key for t in CATALOGUE.values() if t.key.replace("/", "_") not in checked]
    assert missing == []


def test_the_readme_marks_which_entries_were_verified_on_a_real_log():
    readme = (DATA.parents[1] / "README.md").read_text()
    rows = dict(re.findall(r"^\| `(\w+/[\w-]+)` \|.*\| (real log|documented lines) \|$", readme,
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
    from sentinel.site.detect import SlurmPartition, parse_node_cpus, parse_sinfo

    # Real `scontrol -o show nodes` lines (Slurm 22.05, shortened): n1 reserves
    # one of its two CPUs (CpuSpecList=1); b1 is an older Slurm without CPUEfctv.
    nodes = parse_node_cpus(
        "NodeName=c1 Arch=x86_64 CoresPerSocket=2  CPUAlloc=0 CPUEfctv=2 CPUTot=2\n"
        "NodeName=n1 Arch=x86_64 CoresPerSocket=2  CPUAlloc=0 CPUEfctv=1 CPUTot=2 "
        "CoreSpecCount=1 CPUSpecList=1\n"
        "NodeName=n2 Arch=x86_64 CoresPerSocket=2  CPUAlloc=0 CPUEfctv=1 CPUTot=2\n"
        "NodeName=b1 Arch=x86_64 CoresPerSocket=24 CPUAlloc=0 CPUTot=48\n"
        "NodeName=b2 Arch=x86_64 CoresPerSocket=16 CPUAlloc=0 CPUTot=32\n")
    assert nodes == {"c1": 2, "n1": 1, "n2": 1, "b1": 48, "b2": 32}
    text = "one c1\ntwo n1\ntwo n2\nbig b1\nbig b2\nlost x9\ngarbage\n"
    assert parse_sinfo(text, nodes) == [SlurmPartition("one", 1, 2),
                                        SlurmPartition("two", 2, 1),
                                        SlurmPartition("big", 2, 32)]


def test_slurm_pmi2_library_is_read_from_the_linker_cache():
    from sentinel.site.detect import parse_pmi2_library

    # Real `ldconfig -p` lines (Debian 12 with libpmi2-0 and libpmix2).
    text = ("\tlibpmix.so.2 (libc6,x86-64) => /lib/x86_64-linux-gnu/libpmix.so.2\n"
            "\tlibpmi2.so.0 (libc6,x86-64) => /lib/x86_64-linux-gnu/libpmi2.so.0\n")
    assert parse_pmi2_library(text) == "/lib/x86_64-linux-gnu/libpmi2.so.0"
    assert parse_pmi2_library(text.splitlines()[0]) is None
