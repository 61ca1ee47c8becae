"""Test configuration: the real one plus ``torque_site``, the Orfeo site under Torque.

Same partitions and environments as ``config/systems/orfeo.py``, scheduled
by ReFrame's ``torque`` backend: the job scripts the suite writes for a
Torque cluster, read by a ``--dry-run`` test (no Torque server runs here).
"""

import runpy
from pathlib import Path

_copy = runpy.run_path(str(Path(__file__).resolve().with_name("orfeo_copy.py")))["orfeo_copy"]
_configuration, _system, _envs = _copy("torque_site")
site_configuration = _configuration  # ReFrame looks for this assignment
for _part in _system["partitions"]:
    _part["scheduler"] = "torque"
