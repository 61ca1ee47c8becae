"""Test configuration: the local system with one environment, Open MPI over ob1-tcp and ob1-vader.

For tests of how ReFrame selects variants (the rotation): ReFrame instantiates
every variant of a loaded check before it selects, so the cost of such a
listing grows with the transports offered, while what is selected does not
depend on how many there are.
"""

import copy
import runpy
from pathlib import Path

_local_copy = runpy.run_path(str(Path(__file__).resolve().with_name("local_copy.py")))
_configuration, _envs, _partition = _local_copy["local_copy"]()
site_configuration = _configuration  # ReFrame looks for this assignment

if "openmpi" in _envs:
    _env = copy.deepcopy(_envs["openmpi"])
    _env.update(name="openmpi-two", features=["mpi", "openmpi", "ob1-tcp", "ob1-vader"])
    site_configuration["environments"].append(_env)
    for _system in site_configuration["systems"]:
        if _system["name"] == "local":
            for _part in _system["partitions"]:
                _part["environs"] = ["openmpi-two"]
