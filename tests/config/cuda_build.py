"""Test configuration: this host's partition as a GPU partition, its Open MPI as CUDA-aware.

What a site with GPU nodes declares (partition feature ``gpu``, environment
feature ``cuda``, ``extras['gpu_home']`` its toolkit), on a host without a
GPU: the device-buffer pt2pt is built for real with CUDA
(``$SENTINEL_TEST_GPU_HOME``: a toolkit, e.g. the one
:mod:`tests.cuda_toolkit` joins from PyPI's wheels) and run for real, its
host buffers measured and its device buffers refused, naming the missing
device.
"""

import os
import runpy
from pathlib import Path

_local_copy = runpy.run_path(str(Path(__file__).resolve().with_name("local_copy.py")))
_configuration, _envs, _partition = _local_copy["local_copy"]()
site_configuration = _configuration  # ReFrame looks for this assignment

_partition["features"] = [*_partition.get("features", []), "gpu"]
if "openmpi" in _envs:
    _envs["openmpi"]["features"].append("cuda")
    _envs["openmpi"]["extras"]["gpu_home"] = os.environ.get("SENTINEL_TEST_GPU_HOME", "")
