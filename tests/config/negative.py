"""Test configuration: the real one plus environments that lie about transports.

* ``openmpi-forced``: Open MPI whose site launcher options force ``--mca pml
  ob1`` while it declares ``ucx-sm``; verification must catch the override.
* ``mpich-claims-ofi``: this MPICH (ch4:ucx only) declared with ``ofi-tcp``;
  the run must fail naming the netmod MPICH really used.
* ``mpich-wrong-cc``: MPICH whose C compiler is Open MPI's wrapper; the
  linkage check must name the Open MPI library the binary runs with.
* ``mpich5-forced-ofi``: MPICH 5 (ucx and ofi netmods) whose site launcher
  options force the ofi netmod while it declares ``ucx-sm``; the run must
  fail naming the netmod requested and the one MPICH ran.

Environments whose one-sided path a site setting forces onto its fallback
(RmaCheck must fail naming the path each used):

* ``openmpi-osc-pt2pt``: Open MPI 4 over ``ob1-vader`` with ``--mca osc
  pt2pt`` (one-sided emulated over two-sided messages);
* ``openmpi5-osc-rdma``: Open MPI 5 over ``ucx-sm`` with ``--mca osc rdma``
  (osc rdma over the active-message BTLs instead of osc ucx);
* ``mpich5-ofi-rma-off`` and ``intelmpi-ofi-rma-off``: MPICH 5 over
  ``ofi-tcp`` and Intel MPI over ``ofi-shm`` with
  ``MPIR_CVAR_CH4_OFI_ENABLE_RMA=0`` (every put and get an active message).
"""

import copy
import runpy
from pathlib import Path

_local_copy = runpy.run_path(str(Path(__file__).resolve().with_name("local_copy.py")))
_configuration, _envs, _partition = _local_copy["local_copy"]()
site_configuration = _configuration  # ReFrame looks for this assignment


def _liar(base: str, name: str, features: list[str], extras: dict, **fields) -> None:
    if base not in _envs:
        return
    env = copy.deepcopy(_envs[base])
    env.update(fields)
    env.update(name=name, features=["mpi", env["extras"]["mpi_family"], *features])
    env["extras"] = {**env.get("extras", {}), **extras}
    site_configuration["environments"].append(env)
    _partition["environs"].append(name)


_liar("openmpi", "openmpi-forced", ["ucx-sm"],
      {"launcher_options": ["--mca", "pml", "ob1", "--mca", "btl", "self,vader"]})
_liar("mpich", "mpich-claims-ofi", ["ofi-tcp"], {})
_liar("mpich", "mpich-wrong-cc", ["ucx-sm"], {}, cc="mpicc.openmpi")
# with SENTINEL_MPI_PREFIXES naming PyPI's MPICH 5 (both netmods in one library)
_liar("mpich-5_0", "mpich5-forced-ofi", ["ucx-sm"],
      {"launcher_options": ["-genv", "MPIR_CVAR_CH4_NETMOD", "ofi"]})

_liar("openmpi", "openmpi-osc-pt2pt", ["ob1-vader"],
      {"launcher_options": ["--mca", "osc", "pt2pt"]})
_liar("openmpi-5_0", "openmpi5-osc-rdma", ["ucx-sm"],
      {"launcher_options": ["--mca", "osc", "rdma"]})
_liar("mpich-5_0", "mpich5-ofi-rma-off", ["ofi-tcp"],
      {"launcher_options": ["-genv", "MPIR_CVAR_CH4_OFI_ENABLE_RMA", "0"]})
_liar("intelmpi", "intelmpi-ofi-rma-off", ["ofi-shm"],
      {"launcher_options": ["-genv", "MPIR_CVAR_CH4_OFI_ENABLE_RMA", "0"]})
