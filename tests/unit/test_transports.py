import re

import pytest

from sentinel.errors import SentinelError
from sentinel.mpi.transports import CATALOGUE, FAMILIES, lookup, names
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
    for other in names(family):
        if other != name:
            assert problems(lookup(family, other), sel), f"{stem} passed as {other}"


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
