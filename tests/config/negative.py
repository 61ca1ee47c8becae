"""Test configuration: the real one plus environments that lie about transports.

* ``openmpi-forced``: Open MPI whose site launcher options force ``--mca pml
  ob1`` while it declares ``ucx-sm``; verification must catch the override.
* ``mpich-claims-ofi``: this MPICH (ch4:ucx only) declared with ``ofi-tcp``;
  the run must fail naming the netmod MPICH really used.
* ``mpich-wrong-cc``: MPICH whose C compiler is Open MPI's wrapper; the
  linkage check must name the Open MPI library the binary runs with.
"""

import copy
import importlib.util
from pathlib import Path

_settings = Path(__file__).resolve().parents[2] / "config" / "settings.py"
_spec = importlib.util.spec_from_file_location("sentinel_real_settings", _settings)
_real = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_real)

site_configuration = copy.deepcopy(_real.site_configuration)
_envs = {e["name"]: e for e in site_configuration["environments"]
         if "local" in e.get("target_systems", [])}
_local = next(s for s in site_configuration["systems"] if s["name"] == "local")
_partition = _local["partitions"][0]


def _liar(base: str, name: str, features: list[str], extras: dict, **fields) -> None:
    if base not in _envs:
        return
    env = copy.deepcopy(_envs[base])
    env.update(fields)
    env.update(name=name, features=["mpi", base, *features])
    env["extras"] = {**env.get("extras", {}), **extras}
    site_configuration["environments"].append(env)
    _partition["environs"].append(name)


_liar("openmpi", "openmpi-forced", ["ucx-sm"],
      {"launcher_options": ["--mca", "pml", "ob1", "--mca", "btl", "self,vader"]})
_liar("mpich", "mpich-claims-ofi", ["ofi-tcp"], {})
_liar("mpich", "mpich-wrong-cc", ["ucx-sm"], {}, cc="mpicc.openmpi")
