"""Test configuration: the real one, its namespaced Slurm nodes declared as a site's node.

``tests/cluster/slurm.py up DIR --net N --sockets 2`` lays each namespaced
node out as two sockets of this host's CPUs, a NUMA domain each
(:class:`tests.cluster.topology.NodeShape`); here partition ``slurm-net``
gets that processor, as a site declares its nodes' (``reframe
--detect-host-topology`` on a compute node writes it), so placement is
proven per socket and the thread levels come from it.
"""

import runpy
from pathlib import Path

from tests.cluster.topology import NodeShape

_here = Path(__file__).resolve()
site_configuration = runpy.run_path(str(_here.parents[2] / "config" / "settings.py"))[
    "site_configuration"]
for _system in site_configuration["systems"]:
    for _part in _system["partitions"]:
        if _part["name"] == "slurm-net":
            _part["processor"] = NodeShape.on_host(2).processor()
            _part["descr"] += " (each node two sockets of the host's CPUs)"
