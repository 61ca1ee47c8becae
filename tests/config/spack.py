"""Test configuration: the real one plus ``openmpi-spack``, this host's Open MPI
declared as building through Spack (``+spack``, ``spack-env/debian``), for
dry-runs that generate the Spack build scripts without Spack installed."""

import copy
import importlib.util
from pathlib import Path

_root = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("sentinel_real_settings",
                                               _root / "config" / "settings.py")
_real = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_real)

site_configuration = copy.deepcopy(_real.site_configuration)
_local = next(s for s in site_configuration["systems"] if s["name"] == "local")
for _env in [e for e in site_configuration["environments"]
             if e["name"] == "openmpi" and "local" in e.get("target_systems", [])]:
    _spack = copy.deepcopy(_env)
    _spack["name"] = "openmpi-spack"
    _spack["features"] = [f for f in _env["features"] if f != "spack"] + ["spack"]
    _spack["extras"] = {**_env.get("extras", {}),
                        "spack_env": str(_root / "spack-env" / "debian"),
                        "spack_external": {"spec": f"openmpi@{_env['extras']['mpi_version']}",
                                           "prefix": "/usr"}}
    site_configuration["environments"].append(_spack)
    _local["partitions"][0]["environs"].append("openmpi-spack")
