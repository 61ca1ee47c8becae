"""The Orfeo cluster as Banerjee (2022) measured it: a complete worked site.

Orfeo (Area Science Park, Trieste) ran PBS Pro; the study submitted
everything with ``qsub`` to the ``dssc`` queue, with Open MPI 4.1.1 and
Intel MPI 2020 (Parallel Studio 2020, update 4), over HDR InfiniBand (IPoIB
``ib0``) and Ethernet (``br0``). Its references, ``config/references/orfeo.yaml``,
are the study's published IMB PingPong and Jacobi tables, so that a site
sees what a calibrated reference file for a real machine looks like, and
Orfeo could check itself against the study.

What is the study's and what is this file's:

* the scheduler, the queue, the node names (``ct1pt-tnode009``), the MPI
  versions, the transports (``--mca pml ob1|ucx``, ``--mca btl self,tcp|vader``,
  ``btl_tcp_if_include ib0|br0``; ``I_MPI_FABRICS`` shm, ofi, shm:ofi x
  ``I_MPI_OFI_PROVIDER`` tcp, sockets, shm, mlx) are the study's;
* the node topologies: THIN 2 x Intel Xeon Gold 6126 (12 cores each, one
  hardware thread per core), GPU 2 x Intel Xeon Gold 6226 (12 cores each,
  hyper-threading on, which the study blames for its GPU-node scaling), 2
  NVIDIA V100 per GPU node. The CPU numbering alternates between the
  sockets (CPU 0 on socket 0, CPU 1 on socket 1): the study's Intel MPI
  rows pinned to CPUs 0,1 ("contiguous") have the latency of its Open MPI
  ``--map-by socket`` rows (0.43 against 0.40 us over shared memory) and
  those pinned to 0,2 ("socket") the latency of ``--map-by core`` (0.22
  against 0.20 us), so 0,1 are on two sockets and 0,2 on one;
* the queue of the GPU nodes and the node counts are this file's
  assumptions: set your own.

The modules are the builds the study names (OpenMPI-4.1.1+GNU-9.3.0,
Intel-20.4): spell them as your module system does. Off the cluster (a
laptop, CI) there is no module system and the loads are left out of the
generated scripts. List and script the matrix anywhere:
``reframe -C config/settings.py --system orfeo -c checks -l`` (or
``--dry-run``; ``--mode acceptance`` for what the study ran).
"""

import os

_MODULES_SYSTEM = "tmod4" if os.environ.get("MODULESHOME") else "nomod"

#: Open MPI's transports in the study: ob1 over TCP on either network, ob1
#: over shared memory, and UCX (whatever btl the study named: UCX ignores
#: it, and its rows agree within 5 %). Between nodes UCX took the HDR
#: fabric (0.99 us, 12.2 GB/s): its RC transport for a pair of ranks.
OPENMPI_TRANSPORTS = ["ob1-tcp-ib0", "ob1-tcp-br0", "ob1-vader", "ucx-sm", "ucx-rc"]

#: Intel MPI's: every I_MPI_FABRICS x I_MPI_OFI_PROVIDER the study ran
#: (shm:ofi with the shm provider is shm: not a transport of its own here).
INTELMPI_TRANSPORTS = ["shm", "ofi-tcp", "ofi-sockets", "ofi-shm", "ofi-mlx",
                       "shm-ofi-tcp", "shm-ofi-sockets", "shm-ofi-mlx"]


def _topology(cores_per_socket: int, threads_per_core: int) -> dict:
    """Two sockets, CPUs alternating between them; hardware threads numbered after the cores."""
    cores = 2 * cores_per_socket

    def mask(cpus: list[int]) -> str:
        return hex(sum(1 << c for c in cpus))

    def threads(core: int) -> list[int]:
        return [core + t * cores for t in range(threads_per_core)]

    return {
        "num_cpus": cores * threads_per_core, "num_cpus_per_core": threads_per_core,
        "num_cpus_per_socket": cores_per_socket * threads_per_core, "num_sockets": 2,
        "topology": {
            "sockets": [mask([c for k in range(s, cores, 2) for c in threads(k)])
                        for s in (0, 1)],
            "numa_nodes": [mask([c for k in range(s, cores, 2) for c in threads(k)])
                           for s in (0, 1)],
            "cores": [mask(threads(k)) for k in range(cores)],
        },
    }


def _partition(name: str, descr: str, queue: str, nodes: int, arch: str,
               threads_per_core: int, extra_features: tuple[str, ...] = (),
               devices: tuple[dict, ...] = ()) -> dict:
    return {
        "name": name,
        "descr": descr,
        "scheduler": "pbspro",
        # Open MPI's mpirun (built with PBS's tm) and Intel MPI's (Hydra
        # reading $PBS_NODEFILE) both take -np
        "launcher": "mpirun",
        "access": [f"-q {queue}"],
        "environs": ["openmpi", "intelmpi"],
        "features": ["mpi", *extra_features],
        "extras": {"num_nodes": nodes},
        "processor": {"arch": arch, **_topology(12, threads_per_core)},
        "devices": list(devices),
        "max_jobs": 8,
    }


system = {
    "name": "orfeo",
    "descr": "Orfeo (Area Science Park) as Banerjee (2022) measured it: PBS Pro, THIN and GPU",
    # the compute nodes' names in the study; add your login nodes' pattern
    "hostnames": [r"^ct1pt-[tg]node\d+"],
    "modules_system": _MODULES_SYSTEM,
    "partitions": [
        _partition("thin", "2 x Intel Xeon Gold 6126 (2 x 12 cores), HDR InfiniBand",
                   "dssc", 10, "skylake_avx512", 1),
        _partition("gpu", "2 x Intel Xeon Gold 6226 (2 x 12 cores, 2 threads each), "
                   "2 x NVIDIA V100, HDR InfiniBand", "dssc_gpu", 2, "cascadelake", 2,
                   ("gpu",), ({"type": "gpu", "arch": "sm_70", "num_devices": 2},)),
    ],
}

environments = [
    {
        "name": "openmpi",
        "target_systems": ["orfeo"],
        "modules": ["openmpi-4.1.1+gnu-9.3.0"],
        "cc": "mpicc",
        "features": ["mpi", "openmpi", *OPENMPI_TRANSPORTS],
    },
    {
        "name": "intelmpi",
        "target_systems": ["orfeo"],
        "modules": ["intel-20.4"],
        "cc": "mpiicc",
        "features": ["mpi", "intelmpi", *INTELMPI_TRANSPORTS],
    },
]

#: The study's own sizes where they differ from the suite's acceptance (they
#: are added to the options of the mode of that name in ``common.py``):
#: IMB at its default sizes with Intel MPI, Jacobi with L = 1200 (2 x 1202^3
#: doubles, 27.8 GB a rank) up to N = 12.
modes = [
    {"name": "acceptance", "target_systems": ["orfeo"], "options": [
        "-S", "ImbCheck.msglog_by_environ=intelmpi:22",
        "-S", "JacobiCheck.local_size=1200", "-S", "JacobiCheck.max_ranks=12",
    ]},
]
