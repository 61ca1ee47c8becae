"""A partition's node count and node memory from its extras: read, or a clear error naming them."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from sentinel.errors import SentinelError
from sentinel.rfm.placing import partition_nodes
from sentinel.rfm.scaling import node_memory_bytes


def _partition(scheduler: str = "slurm", **extras) -> SimpleNamespace:
    return SimpleNamespace(fullname="site:cpu", extras=extras,
                           scheduler=SimpleNamespace(registered_name=scheduler))


def test_node_count_and_memory_are_read_from_the_extras():
    assert partition_nodes(_partition(num_nodes=64)) == 64
    assert partition_nodes(_partition(num_nodes="8")) == 8
    assert partition_nodes(_partition("local", num_nodes="junk")) == 1  # one node, always
    assert node_memory_bytes(_partition(memory_per_node_gib=256)) == 256 * 2**30
    assert node_memory_bytes(_partition(memory_per_node_gib="0.5")) == 2**29
    assert node_memory_bytes(_partition()) is None


@pytest.mark.parametrize("value", ["four", 2.5, 0, -3, True, None])
def test_a_node_count_that_is_not_one_is_named(value):
    with pytest.raises(SentinelError, match=r"^partition site:cpu: extras\['num_nodes'\] is "
                                            rf"{re.escape(repr(value))}; expected a whole number"):
        partition_nodes(_partition(num_nodes=value))


def test_a_missing_node_count_is_named():
    with pytest.raises(SentinelError, match=r"extras\['num_nodes'\] is not set"):
        partition_nodes(_partition())


@pytest.mark.parametrize("value", ["lots", 0, -1, False, [256]])
def test_a_node_memory_that_is_not_one_is_named(value):
    with pytest.raises(SentinelError, match=r"^partition site:cpu: extras\['memory_per_node_gib'\]"
                                            rf" is {re.escape(repr(value))}; expected"):
        node_memory_bytes(_partition(memory_per_node_gib=value))
