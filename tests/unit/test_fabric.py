"""The fabric benchmark's outputs and the decisions taken on them (captured runs).

The outputs in ``tests/data/fabric`` are job outputs of FabricCheck on the
four namespaced test nodes (``README.md`` there says how each was made).
"""

from __future__ import annotations

import pytest

from sentinel.analysis import fabric
from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import parse
from tests.conftest import DATA

FABRIC = DATA / "fabric"


def _out(name: str):
    return parse((FABRIC / name).read_text(), "fabric")


def _judge(name: str):
    pairs = fabric.pairs_of(_out(name), name)
    return pairs, fabric.judge(pairs, True, 2.0, 3.5), fabric.judge(pairs, False, 3.0, 3.5)


def test_a_healthy_sweep_names_nothing():
    pairs, bw, latency = _judge("pairs-clean.out")
    assert len(pairs) == 12  # 4 nodes: 3 rounds of 4 pairs
    assert {(p.src, p.dst) for p in pairs} == {(a, b) for a in ("m1", "m2", "m3", "m4")
                                               for b in ("m1", "m2", "m3", "m4") if a != b}
    assert bw.nodes == bw.links == latency.nodes == latency.links == {}
    values = fabric.values(pairs, bw, latency)
    assert values["outlier_nodes"] == (0.0, "1") and values["pair_bw_median"][0] > 500


def test_a_slow_node_is_named_alone_not_its_links():
    pairs, bw, latency = _judge("pairs-m2-slow.out")
    assert list(bw.nodes) == ["m2"]
    assert bw.nodes["m2"].startswith("node m2: bandwidth ")
    assert bw.nodes["m2"].endswith("x below the partition median in 6 of 6 pairs")
    assert bw.links == {}  # m2's pairs are m2's, not six bad cables
    assert not (latency.nodes.keys() - {"m2"}) and latency.links == {}
    # the level is that of the healthy nodes: half the pairs are m2's
    assert bw.level > 3 * min(p.bw_mbs for p in pairs)


def test_one_slow_pair_among_fine_nodes_is_a_slow_link():
    pairs, _, _ = _judge("pairs-clean.out")
    slow = [fabric.Pair(p.src, p.dst, p.bw_mbs / 10 if (p.src, p.dst) == ("m1", "m3")
                        else p.bw_mbs, p.latency_us) for p in pairs]
    bw = fabric.judge(slow, True, 2.0, 3.5)
    assert bw.nodes == {} and list(bw.links) == [("m1", "m3")]
    assert bw.links[("m1", "m3")].startswith("link m1 -> m3: bandwidth 10.")


def test_a_sweep_with_two_ranks_on_one_node_is_refused():
    text = (FABRIC / "pairs-clean.out").read_text().replace("rank=1 host=m2", "rank=1 host=m1")
    with pytest.raises(SentinelError, match=r"x: the pairs sweep needs one rank per node; "
                                            r"4 ranks ran on 3 node\(s\)"):
        fabric.pairs_of(parse(text, "fabric"), "x")


def test_aggregate_loaded_and_pattern_values():
    agg = fabric.aggregate_values(_out("aggregate.out"), "x")
    assert set(agg) == {"aggregate_bw_P1", "aggregate_bw_P2", "aggregate_bw_half"}
    loaded = fabric.loaded_values(_out("loaded.out"), "x")
    assert loaded["loaded_latency_ratio"][0] == pytest.approx(
        loaded["latency_loaded"][0] / loaded["latency_idle"][0])
    patterns = fabric.pattern_values(_out("patterns.out"), "x")
    # one rank per node: every rank that moves data moves it off its node
    assert {k.split("_")[1] for k in patterns} == {"offnode"}
    assert "complement_offnode_bw" in patterns
    with pytest.raises(SentinelError, match=r"x: latency reported for \['idle'\] state"):
        text = (FABRIC / "loaded.out").read_text()
        fabric.loaded_values(parse(text.replace("state=loaded", "state=gone"), "fabric"), "x")
