"""A fixed test system for the offline check tests (tests/unit/test_checks_offline.py).

Shaped like the machine the captured outputs in ``tests/data/checks`` came
from (one socket of two cores, Open MPI 4.1, MPICH 4.0 and Intel MPI 2021
with the transports detected there), but detecting nothing: loading it runs
no command and needs no MPI, so the real check classes can be set up, their
job scripts generated and their sanity and performance run on canned
outputs anywhere. ``SENTINEL_OFFLINE_PREFIX`` is where stage directories go.
"""

import os

_PROCESSOR = {
    "arch": "x86_64", "num_cpus": 2, "num_cpus_per_core": 1, "num_cpus_per_socket": 2,
    "num_sockets": 1, "topology": {"sockets": ["0x3"], "cores": ["0x1", "0x2"],
                                  "numa_nodes": ["0x3"]},
}


#: A node of the two-socket test nodes (tests/cluster/topology.py on this
#: project's 2-CPU machine): a socket and a NUMA domain for each CPU.
_RIG_PROCESSOR = {
    "arch": "x86_64", "num_cpus": 2, "num_cpus_per_core": 1, "num_cpus_per_socket": 1,
    "num_sockets": 2, "topology": {"sockets": ["0x1", "0x2"], "cores": ["0x1", "0x2"],
                                  "numa_nodes": ["0x1", "0x2"]},
}


#: A site's node: two sockets of 16 cores, a NUMA domain each (what the
#: plans of the threaded checks are tested on; no output is captured on it).
_SITE_PROCESSOR = {
    "arch": "x86_64", "num_cpus": 32, "num_cpus_per_core": 1, "num_cpus_per_socket": 16,
    "num_sockets": 2, "topology": {"sockets": ["0xffff", "0xffff0000"],
                                  "cores": [hex(1 << c) for c in range(32)],
                                  "numa_nodes": ["0xffff", "0xffff0000"]},
}


#: Environments whose ranks their own launcher starts (extras ``launcher``).
OWN_LAUNCHERS = {"openmpi-5_0": (["ob1-sm", "ob1-tcp"], "mpirun"),
                 "mpich-5_0": (["ucx-sm", "ucx-tcp"], "mpiexec"),
                 "openmpi-misspelt": (["ob1-sm", "ob1-tcp"], "mpirn")}


def _env(name: str, transports: list[str], cc: str, family: str = "", **extras) -> dict:
    return {"name": name, "target_systems": ["offline"], "cc": cc, "cxx": cc,
            "features": ["mpi", family or name, *transports], "extras": extras}


site_configuration = {
    "systems": [{
        "name": "offline",
        "descr": "fixed two-core test system (no detection)",
        "hostnames": [".*"],
        "modules_system": "nomod",
        "prefix": os.environ.get("SENTINEL_OFFLINE_PREFIX", "/tmp/sentinel-offline"),
        "partitions": [
            {"name": "cpu", "scheduler": "local", "launcher": "mpirun",
             "environs": ["openmpi", "mpich", "intelmpi"], "features": ["mpi"],
             "processor": _PROCESSOR, "max_jobs": 1},
            {"name": "cluster", "scheduler": "squeue", "launcher": "srun",
             "environs": ["openmpi", "intelmpi"], "features": ["mpi", "slurm"],
             "extras": {"num_nodes": 4}, "processor": _PROCESSOR},
            # the four namespaced nodes of two sockets (tests/config/rig.py)
            {"name": "rig", "scheduler": "squeue", "launcher": "srun",
             "environs": ["openmpi", "mpich", "intelmpi", *OWN_LAUNCHERS],
             "features": ["mpi", "slurm"],
             "extras": {"num_nodes": 4}, "processor": _RIG_PROCESSOR},
            # four nodes of a site's shape
            {"name": "site", "scheduler": "squeue", "launcher": "srun",
             "environs": ["openmpi", "mpich", "intelmpi"], "features": ["mpi", "slurm"],
             "extras": {"num_nodes": 4}, "processor": _SITE_PROCESSOR},
            # this machine declared a GPU partition (tests/config/cuda_build.py)
            {"name": "gpu", "scheduler": "local", "launcher": "mpirun",
             "environs": ["openmpi-cuda"], "features": ["mpi", "gpu"],
             "processor": _PROCESSOR, "max_jobs": 1},
        ],
    }],
    "environments": [
        _env("openmpi", ["ob1-tcp", "ob1-vader", "ucx-sm", "ucx-tcp", "ofi-tcp"],
             "mpicc.openmpi"),
        _env("mpich", ["ucx-sm", "ucx-tcp"], "mpicc.mpich"),
        _env("openmpi-cuda", ["ob1-tcp", "ob1-vader", "cuda"], "mpicc.openmpi", "openmpi",
             gpu_home="/opt/cuda-wheels"),
        _env("intelmpi", ["shm", "ofi-tcp", "shm-ofi-tcp", "ofi-shm"], "mpicc",
             benchmark_dirs={"imb": "/opt/intel/mpi/bin"}),
        # today's MPIs, each with its own launcher in the allocation (and a misspelt one)
        *(_env(name, transports, "mpicc", name.split("-")[0], launcher=launcher)
          for name, (transports, launcher) in OWN_LAUNCHERS.items()),
    ],
    "logging": [{"level": "debug", "handlers": [], "handlers_perflog": []}],
}
