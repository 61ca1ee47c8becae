import pytest

from sentinel.errors import SentinelError
from sentinel.mpi.placement import (
    RankPlacement,
    ThreadPlacement,
    Topology,
    parse_cpu_list,
    placement_problems,
    prefix_span_problems,
    series_placement_problems,
    thread_problems,
)

# Two sockets of 2 cores with 2 hardware threads each: cpus 0-3 socket 0.
TWO_SOCKETS = Topology.from_masks(["0x3", "0xc", "0x30", "0xc0"], ["0xf", "0xf0"])


def rank(r, cpus, host="n1"):
    return RankPlacement(r, host, parse_cpu_list(cpus))


def test_cpu_list_parsing():
    assert parse_cpu_list("0-2,5") == {0, 1, 2, 5}
    with pytest.raises(SentinelError, match="malformed CPU list 'x'"):
        parse_cpu_list("x")


def test_topology_from_masks():
    assert TWO_SOCKETS.num_sockets == 2
    assert TWO_SOCKETS.core_of[5] == 2 and TWO_SOCKETS.socket_of[5] == 1


@pytest.mark.parametrize("mapping,ranks", [
    ("core", [rank(0, "0-1"), rank(1, "2-3")]),
    ("socket", [rank(0, "0"), rank(1, "4")]),
    ("node", [rank(0, "0", "n1"), rank(1, "0", "n2")]),
])
def test_good_placements(mapping, ranks):
    assert placement_problems(mapping, ranks, TWO_SOCKETS) == []


@pytest.mark.parametrize("mapping,ranks,expected", [
    ("core", [rank(0, "0-3"), rank(1, "4")], "rank 0 is not bound to one core"),
    ("core", [rank(0, "0"), rank(1, "1")], "ranks 0 and 1 share core 0"),
    ("core", [rank(0, "0"), rank(1, "4")],
     "mapping core: rank 0 on socket 0, rank 1 on socket 1; both belong on one"),
    ("socket", [rank(0, "0"), rank(1, "2")],
     "mapping socket: ranks 0 and 1 both on socket 0, not on two different"),
    ("node", [rank(0, "0"), rank(1, "4")], "mapping node: ranks 0 and 1 both ran on n1"),
    ("core", [rank(0, "0")], "affinity reported for 1 rank(s)"),
    ("core", [rank(0, "0", "a"), rank(1, "2", "b")], "ranks ran on a and b"),
])
def test_bad_placements_are_named(mapping, ranks, expected):
    msgs = placement_problems(mapping, ranks, TWO_SOCKETS)
    assert any(expected in m for m in msgs), msgs


def test_unknown_topology_is_reported_not_assumed():
    assert placement_problems("core", [rank(0, "0"), rank(1, "1")], None) == [
        "processor topology unknown: cannot validate binding"]


def thread(r, t, cpu, cpus):
    return ThreadPlacement(r, t, cpu, parse_cpu_list(cpus))


def test_threads_one_per_core_pass():
    ranks = [rank(0, "0"), rank(1, "4")]
    threads = [thread(0, 0, 0, "0-1"), thread(0, 1, 2, "2-3"),
               thread(1, 0, 4, "4-5"), thread(1, 1, 7, "6-7")]
    assert thread_problems(ranks, threads, 2, TWO_SOCKETS) == []


def test_thread_problems_are_named():
    ranks = [rank(0, "0"), rank(1, "2")]
    threads = [thread(0, 0, 0, "0-3"), thread(0, 1, 5, "2"),
               thread(1, 0, 2, "2-3")]
    assert thread_problems(ranks, threads, 2, TWO_SOCKETS) == [
        "rank 1 reported 1 thread(s), expected 2",
        "rank 0 thread 0 is not bound to one core (cpus [0, 1, 2, 3])",
        "rank 0 thread 1 ran on CPU 5 outside its binding [2]",
        "rank 1 thread 0 shares core 1 with rank 0 thread 1",
    ]


def test_thread_binding_without_topology_is_reported():
    problems = thread_problems([rank(0, "0")], [thread(0, 0, 0, "0")], 1, None)
    assert problems == ["processor topology unknown: cannot validate thread binding"]


def _ranks(*placements: tuple[str, str]) -> list[RankPlacement]:
    return [RankPlacement(i, host, parse_cpu_list(cpus)) for i, (host, cpus) in
            enumerate(placements)]


ONE_SOCKET = Topology.from_masks(["0x1", "0x2", "0x4", "0x8"], ["0xf"])


def test_every_rank_of_a_series_launch_is_checked():
    full = _ranks(("a", "0"), ("a", "1"), ("b", "0"), ("b", "1"))
    assert series_placement_problems("core", full, 2, ONE_SOCKET) == []
    assert series_placement_problems("node", _ranks(("a", "0"), ("b", "0"), ("c", "1")), 1,
                                     ONE_SOCKET) == []
    # rank 3 (not 0 or 1) shares a core with rank 2
    shared = _ranks(("a", "0"), ("a", "1"), ("b", "2"), ("b", "2"))
    assert series_placement_problems("core", shared, 2, ONE_SOCKET) == [
        "ranks 2 and 3 share CPU(s) 2 on b"]
    assert series_placement_problems("core", shared, 2, ONE_SOCKET, shared_ok=True) == []


def test_ranks_per_node_and_binding_of_a_series_launch():
    crowded = _ranks(("a", "0"), ("b", "0"), ("b", "1"))
    assert series_placement_problems("node", crowded, 1, ONE_SOCKET) == [
        "mapping node: 2 ranks (1, 2) on b, at most 1 per node"]
    sparse = _ranks(("a", "0"), ("b", "0"), ("c", "0"), ("c", "1"))
    assert series_placement_problems("core", sparse, 2, ONE_SOCKET) == [
        "mapping core: 2 nodes hold fewer than 2 ranks (a, b); only one may"]
    loose = _ranks(("a", "0-1"), ("a", "2-3"))
    assert series_placement_problems("core", loose, 2, ONE_SOCKET) == [
        "rank 0 on a is not bound to one core (cpus [0, 1])",
        "rank 1 on a is not bound to one core (cpus [2, 3])"]
    assert series_placement_problems("core", loose, 2, ONE_SOCKET, cores_per_rank=2) == []
    assert series_placement_problems("core", _ranks(("a", "0"), ("a", "1"))[1:], 2,
                                     ONE_SOCKET) == ["affinity reported for ranks [1], not 0..0"]


def test_each_prefix_of_the_world_spans_its_node_count():
    block = _ranks(("a", "0"), ("a", "1"), ("b", "0"), ("b", "1"), ("c", "0"), ("c", "1"))
    assert prefix_span_problems(block, 2, [2, 4, 6]) == []
    assert prefix_span_problems(block, 2, [3]) == []  # 3 ranks: 2 nodes, one of them full
    cyclic = _ranks(("a", "0"), ("b", "0"), ("c", "0"), ("a", "1"), ("b", "1"), ("c", "1"))
    # with ranks dealt round-robin, "2 ranks" is not "one node"
    assert prefix_span_problems(cyclic, 2, [2, 4, 6]) == [
        "the first 2 ranks span 2 node(s) (a, b), not 1 at 2 per node",
        "the first 4 ranks span 3 node(s) (a, b, c), not 2 at 2 per node"]


def test_a_node_splits_into_ranks_times_threads_that_fill_it():
    from sentinel.rfm.threads import node_splits

    assert node_splits(2) == [(1, 2), (2, 1)]
    assert node_splits(32) == [(1, 32), (2, 16), (4, 8), (8, 4), (16, 2), (32, 1)]  # EPCC's
    assert node_splits(96) == [(1, 96), (2, 48), (4, 24), (8, 12), (16, 6), (32, 3), (96, 1)]
    assert node_splits(1) == [(1, 1)]
