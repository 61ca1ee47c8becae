"""Test configuration: the real one plus ``gpu_site``, the Orfeo site with a CUDA-aware Open MPI.

Orfeo's GPU partition (two V100 a node) with its Open MPI declared CUDA-aware
(feature ``cuda``, the toolkit in ``extras['gpu_home']``): what a site with
GPU partitions writes, read by ``--dry-run`` tests (this machine has no GPU).
"""

import runpy
from pathlib import Path

_copy = runpy.run_path(str(Path(__file__).resolve().with_name("orfeo_copy.py")))["orfeo_copy"]
_configuration, _system, _envs = _copy("gpu_site")
site_configuration = _configuration  # ReFrame looks for this assignment
for _env in _envs:
    if _env["name"] == "openmpi":
        _env["features"].append("cuda")
        _env["extras"] = {"gpu_home": "/opt/nvidia/cuda-11.4"}
