from sentinel.mpi.thread_levels import (
    THREAD_LEVELS,
    missing_keys,
    processor_gaps,
    same_as_larger,
    thread_counts,
    topology_gaps,
)


def test_thread_levels_come_from_the_node_topology():
    # 2 sockets x 64 cores, 4 NUMA domains (the big_site fixture's nodes)
    counts = thread_counts(128, 2, 4)
    assert counts == {"one": 1, "numa": 32, "socket": 64, "node": 128}
    assert [same_as_larger(level, counts) for level in THREAD_LEVELS] == [None] * 4
    # one socket, one NUMA domain: both are the whole node
    small = thread_counts(2, 1, 1)
    assert same_as_larger("numa", small) == same_as_larger("socket", small) == "node"
    # one NUMA domain per socket
    assert same_as_larger("numa", thread_counts(24, 2, 2)) == "socket"
    assert missing_keys(128, 2, 4) == {} and topology_gaps("big_site:p00", 128, 2, 4) == ""


def test_an_unknown_topology_key_leaves_only_its_levels_out_and_is_said_once():
    counts = thread_counts(24, 2, None)
    assert counts == {"one": 1, "numa": None, "socket": 12, "node": 24}
    assert same_as_larger("socket", counts) is None
    assert missing_keys(24, 2, None) == {"numa": "topology.numa_nodes"}
    assert topology_gaps("cluster:thin", 24, 2, None) == (
        "partition cluster:thin: processor topology.numa_nodes is not set: the threads=numa "
        "test cases are skipped (reframe --detect-host-topology on a compute node, or "
        "sentinel init, writes it)")
    assert set(missing_keys(None, None, None)) == {"numa", "socket", "node"}


def test_the_example_sites_processors_leave_no_level_out():
    import runpy

    from tests.conftest import ROOT

    for site in ("example_cluster", "orfeo"):
        system = runpy.run_path(str(ROOT / "config" / "systems" / f"{site}.py"))["system"]
        for part in system["partitions"]:
            assert processor_gaps(f"{site}:{part['name']}", part["processor"]) == ""
