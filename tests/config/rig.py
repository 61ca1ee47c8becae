"""Test configuration: the real one, its namespaced Slurm nodes declared as a site's node.

``tests/cluster/slurm.py up DIR --net N --sockets 2`` lays each namespaced
node out as two sockets of this host's CPUs, a NUMA domain each
(:class:`tests.cluster.topology.NodeShape`); here partition ``slurm-net``
gets that processor, as a site declares its nodes' (``reframe
--detect-host-topology`` on a compute node writes it), so placement is
proven per socket and the thread levels come from it.
``SENTINEL_RIG_SOCKETS`` (2) declares another count, for a cluster brought
up with it (``--sockets 1``: one socket of both CPUs, the capture of
``tests/data/checks/msgrate-*-node``).
"""

import importlib.util
import os
import runpy
import sys
from pathlib import Path

_here = Path(__file__).resolve()


def _topology():
    """tests/cluster/topology.py by path (ReFrame loads this file outside any package)."""
    spec = importlib.util.spec_from_file_location(
        "sentinel_rig_topology", _here.parents[1] / "cluster" / "topology.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass looks its module up
    spec.loader.exec_module(module)
    return module


NodeShape = _topology().NodeShape
site_configuration = runpy.run_path(str(_here.parents[2] / "config" / "settings.py"))[
    "site_configuration"]
for _system in site_configuration["systems"]:
    for _part in _system["partitions"]:
        if _part["name"] == "slurm-net":
            _part["processor"] = NodeShape.on_host(
                int(os.environ.get("SENTINEL_RIG_SOCKETS", "2"))).processor()
            _part["descr"] += " (each node the host's CPUs as sockets)"
            # The nodes share this host's CPUs: two jobs at once would share
            # them too, and only slow each other.
            _part["max_jobs"] = 1

#: The nodes' ranks share CPUs (four nodes of two sockets on this host's
#: two): a rank waiting for a message yields its CPU instead of spinning on
#: it, as oversubscribed ranks should. Nothing the suite verifies depends
#: on it (transport, placement, values); only the speed does.
_WAIT_IN_KERNEL = {"openmpi": [["OMPI_MCA_mpi_yield_when_idle", "1"]],
                   "intelmpi": [["I_MPI_WAIT_MODE", "1"]]}
for _env in site_configuration["environments"]:
    if "local:slurm-net" in _env.get("target_systems", []):
        _env["env_vars"] = [*_env.get("env_vars", []),
                            *_WAIT_IN_KERNEL.get(_env["extras"]["mpi_family"], [])]

# A test's extra launcher options on the rig (a wrapper's or a site's
# launcher_options, the traps of tests/integration/test_rig_local.py).
_extra = os.environ.get("SENTINEL_RIG_LAUNCHER_OPTIONS", "").split()
if _extra:
    for _env in site_configuration["environments"]:
        if "local:slurm-net" in _env.get("target_systems", []):
            _extras = _env.setdefault("extras", {})
            _extras["launcher_options"] = [*_extras.get("launcher_options", []), *_extra]
