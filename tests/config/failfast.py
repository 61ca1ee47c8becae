"""Test configuration: the real one plus an environment whose ranks share CPU 0.

* ``openmpi-cpu0``: Open MPI (``ob1-vader``) whose site launcher options
  unbind the ranks and start each through ``taskset -c 0``, as a wrapper or
  a ``--cpu-set 0`` would: both ranks busy-poll one core. The suite's own
  benchmarks must stop before measuring (``--distinct-cpus``), naming the
  shared CPU, instead of running into the time limit.
"""

import copy
import runpy
from pathlib import Path

_local_copy = runpy.run_path(str(Path(__file__).resolve().with_name("local_copy.py")))
_configuration, _envs, _partition = _local_copy["local_copy"]()
site_configuration = _configuration  # ReFrame looks for this assignment

if "openmpi" in _envs:
    _env = copy.deepcopy(_envs["openmpi"])
    _env.update(name="openmpi-cpu0", features=["mpi", "openmpi", "ob1-vader"])
    _env["extras"] = {**_env.get("extras", {}),
                      "launcher_options": ["--bind-to", "none", "taskset", "-c", "0"]}
    site_configuration["environments"].append(_env)
    _partition["environs"].append("openmpi-cpu0")
