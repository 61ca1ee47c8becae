"""Test configuration: the local system as a site that judges Pt2ptCheck's 1 MiB bandwidth too.

The partition's ``judged`` extra widens the check's judged set (its headline
variables, the 8 B latency and the peak bandwidth) by the 1 MiB point: what a
site writes in its configuration to be paged for a large message's bandwidth.
The host test uses it: a node shared with a busy loop halves that point,
while a peak, a maximum over sizes whose samples fit in a time slice, need
not move.
"""

import runpy
from pathlib import Path

_local_copy = runpy.run_path(str(Path(__file__).resolve().with_name("local_copy.py")))
_configuration, _envs, _partition = _local_copy["local_copy"]()
site_configuration = _configuration  # ReFrame looks for this assignment
_partition.setdefault("extras", {})["judged"] = {
    "Pt2ptCheck": ["latency_8B", "bw_peak", "bw_1048576B"]}
