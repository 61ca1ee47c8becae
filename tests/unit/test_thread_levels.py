import pytest

from sentinel.errors import SentinelError
from sentinel.mpi.thread_levels import THREAD_LEVELS, same_as_larger, thread_counts


def test_thread_levels_come_from_the_node_topology():
    # 2 sockets x 64 cores, 4 NUMA domains (the big_site fixture's nodes)
    counts = thread_counts(128, 2, 4, "partition big_site:p00")
    assert counts == {"one": 1, "numa": 32, "socket": 64, "node": 128}
    assert [same_as_larger(level, counts) for level in THREAD_LEVELS] == [None] * 4
    # one socket, one NUMA domain: both are the whole node
    small = thread_counts(2, 1, 1, "partition local:cpu")
    assert same_as_larger("numa", small) == same_as_larger("socket", small) == "node"
    # one NUMA domain per socket
    assert same_as_larger("numa", thread_counts(24, 2, 2, "p")) == "socket"


def test_unknown_topology_is_an_error_naming_the_key():
    with pytest.raises(SentinelError, match=r"partition cluster:thin: the processor's "
                                            r"topology.numa_nodes unknown; thread counts"):
        thread_counts(24, 2, None, "partition cluster:thin")
