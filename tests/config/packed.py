"""Test configuration: the real one plus an Open MPI environment with a failing transport.

* ``openmpi-packed``: Open MPI offering ``ob1-tcp``, ``ob1-vader`` and
  ``ofi-udp``: libfabric's development provider over UDP, which this host's
  Open MPI 4.1.4 with libfabric 1.17 cannot carry a synchronous send over
  (detection leaves it out for that reason). In a packed job (one job for
  the transports of an environment) its launch fails and the others' do not:
  each transport must keep its own verdict.
"""

import copy
import runpy
from pathlib import Path

_local_copy = runpy.run_path(str(Path(__file__).resolve().with_name("local_copy.py")))
_configuration, _envs, _partition = _local_copy["local_copy"]()
site_configuration = _configuration  # ReFrame looks for this assignment

if "openmpi" in _envs:
    _env = copy.deepcopy(_envs["openmpi"])
    _env.update(name="openmpi-packed",
                features=["mpi", "openmpi", "ob1-tcp", "ob1-vader", "ofi-udp"])
    site_configuration["environments"].append(_env)
    _partition["environs"].append("openmpi-packed")
