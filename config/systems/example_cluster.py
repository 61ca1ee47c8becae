"""Template for a site: copy to ``systems/<your_system>.py`` and edit.

A Slurm cluster with two partitions (THIN: 2 x 12 cores; GPU: 2 x 24 cores)
and two MPI environments loaded as modules; it has no reference file (a
site calibrates its own: ``sentinel calibrate``). ``orfeo.py`` is a complete
worked site: PBS Pro, the transports and interfaces of Banerjee (2022) and
that study's published tables as its references. What each key means for
the checks:

* partition ``features``: ``mpi`` (runs MPI jobs); checks select by feature;
* partition ``extras['num_nodes']``: nodes available for the ``node``
  mapping (required off the local scheduler);
* partition ``processor``: the node topology (``reframe
  --detect-host-topology`` prints it); the ``socket`` mapping and placement
  validation use it;
* environment ``features``: ``mpi``, the MPI family (``openmpi``, ``mpich``,
  ``intelmpi``) and the transport names it offers (see
  ``sentinel.mpi.transports``); a transport not declared is not generated.
  A transport over IP takes its network interface as a suffix
  (``ob1-tcp-ib0``, ``ofi-tcp-br0``, ``ucx-tcp-ib0``);
* environment ``extras['benchmark_dirs']``: where the OSU (install prefix
  or build tree) and IMB binaries built with that MPI are; Intel MPI's own
  IMB-MPI1 is found on its PATH;
* environment ``extras['launcher_options']``: options appended to every
  launch (e.g. ``--mca btl_tcp_if_include ib0``); they override the
  transport's settings, and transport verification shows it when they do;
* environment ``extras['launcher']``: the MPI's own launcher (``mpirun``,
  ``mpiexec``) inside the allocation instead of the partition's ``srun``
  (``sentinel init`` writes it for Open MPI 5 and MPICH 5; docs/slurm.md).

It lists and dry-runs anywhere: ``reframe -C config/settings.py --system
example_cluster -c checks -l`` (or ``--dry-run``).
"""

import os

from sentinel.rfm.compat.cmdline import pins_jobs_to_nodes

# Lmod sets LMOD_CMD on every login; off the cluster (listing, --dry-run on a
# laptop or in CI) there is no module system, and the module loads are
# left out of the generated scripts.
_MODULES_SYSTEM = "lmod" if os.environ.get("LMOD_CMD") else "nomod"

def _processor(arch: str, sockets: int, cores_per_socket: int) -> dict:
    """A node of ``sockets`` x ``cores_per_socket`` cores, one hardware thread each.

    One NUMA domain per socket (threads=numa then runs as threads=socket).
    """
    ncpus = sockets * cores_per_socket
    socket_mask = (1 << cores_per_socket) - 1
    return {
        "arch": arch, "num_cpus": ncpus, "num_cpus_per_core": 1,
        "num_cpus_per_socket": cores_per_socket, "num_sockets": sockets,
        "topology": {
            "sockets": [hex(socket_mask << (s * cores_per_socket)) for s in range(sockets)],
            "numa_nodes": [hex(socket_mask << (s * cores_per_socket)) for s in range(sockets)],
            "cores": [hex(1 << c) for c in range(ncpus)],
        },
    }


def _partition(name: str, descr: str, nodes: int, processor: dict) -> dict:
    return {
        "name": name,
        "descr": descr,
        "scheduler": "slurm",
        "launcher": "srun",
        "access": [f"--partition={name.upper()}", "--exclusive"],
        "environs": ["openmpi", "intelmpi"],
        "features": ["mpi"],
        # the vet mode pins a job to each node: one busy with another job is
        # ReqNodeNotAvail to Slurm, a wait; otherwise it is a node down, and
        # ReFrame cancels the job naming the node
        "sched_options": {"ignore_reqnodenotavail": pins_jobs_to_nodes()},
        "extras": {"num_nodes": nodes},
        "processor": processor,
        "max_jobs": 8,
    }


system = {
    "name": "example_cluster",
    "descr": "Example site: Slurm, THIN and GPU partitions, MPI from modules",
    "hostnames": [r"^login\d+\.example\.org$"],
    "modules_system": _MODULES_SYSTEM,
    "partitions": [
        _partition("thin", "Intel Xeon Gold 6126, 2 x 12 cores, 100 Gb/s HDR", 10,
                   _processor("skylake_avx512", 2, 12)),
        _partition("gpu", "2 x 24 cores, 100 Gb/s HDR", 4,
                   _processor("cascadelake", 2, 24)),
        # The THIN node that runs it, for `sentinel health` (Slurm's
        # HealthCheckProgram on each node): the local scheduler, the MPIs'
        # own launcher, environments without srun's options (below).
        {"name": "thin-node", "descr": "this THIN node (sentinel health)",
         "scheduler": "local", "launcher": "mpirun", "environs": ["openmpi", "intelmpi"],
         "features": ["mpi"], "processor": _processor("skylake_avx512", 2, 12),
         "max_jobs": 1},
    ],
}

environments = [
    {
        "name": "openmpi",
        "target_systems": ["example_cluster"],
        "modules": ["openmpi/4.1.1"],
        "cc": "mpicc",
        "features": ["mpi", "openmpi", "ob1-tcp", "ob1-vader", "ucx-sm", "ucx-tcp"],
        "extras": {"launcher_options": ["--mpi=pmix", "--kill-on-bad-exit=1"],
                   "benchmark_dirs": {"osu": "/apps/osu-micro-benchmarks/7.3/openmpi-4.1.1",
                                      "imb": "/apps/imb/2021.7/openmpi-4.1.1/bin"}},
    },
    {
        "name": "intelmpi",
        "target_systems": ["example_cluster"],
        "modules": ["intel-oneapi-mpi/2021.4"],
        "cc": "mpicc",
        "features": ["mpi", "intelmpi", "shm", "ofi-tcp", "ofi-mlx", "shm-ofi-mlx"],
        "env_vars": [["I_MPI_PMI_LIBRARY", "/usr/lib64/libpmi2.so"]],
        "extras": {"launcher_options": ["--mpi=pmi2", "--kill-on-bad-exit=1"],
                   "benchmark_dirs": {"osu": "/apps/osu-micro-benchmarks/7.3/intel-mpi-2021.4"}},
    },
]

# The same MPIs on the node itself (partition thin-node): mpirun starts the
# ranks, so neither srun's options nor Slurm's PMI library apply.
environments += [
    {**{k: v for k, v in env.items() if k != "env_vars"},
     "target_systems": ["example_cluster:thin-node"],
     "extras": {k: v for k, v in env["extras"].items() if k != "launcher_options"}}
    for env in environments
]
