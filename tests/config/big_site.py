"""A site at scale, for measuring the suite's cost (issue: a nightly that fits a night).

Ten Slurm partitions of 64 nodes, each node 2 sockets x 64 cores (4 NUMA
domains), and three MPI environments: Open MPI with 8 transports, MPICH with
3, Intel MPI with 4. Built from ``config/systems/example_cluster.py``; it is
added to the suite's configuration, never replaces it::

    reframe -C config/settings.py -C tests/config/big_site.py --system big_site ...

Nothing here runs: it lists, dry-runs and plans anywhere.
"""

_SOCKETS, _CORES, _NUMA = 2, 64, 4


def _processor() -> dict:
    ncpus = _SOCKETS * _CORES
    per_numa = ncpus // _NUMA
    return {
        "arch": "zen3", "num_cpus": ncpus, "num_cpus_per_core": 1,
        "num_cpus_per_socket": _CORES, "num_sockets": _SOCKETS,
        "topology": {
            "numa_nodes": [hex(((1 << per_numa) - 1) << (n * per_numa)) for n in range(_NUMA)],
            "sockets": [hex(((1 << _CORES) - 1) << (s * _CORES)) for s in range(_SOCKETS)],
            "cores": [hex(1 << c) for c in range(ncpus)],
        },
    }


def _partition(n: int) -> dict:
    return {
        "name": f"p{n:02d}",
        "descr": f"partition {n}: 64 nodes of 2 x 64 cores",
        "scheduler": "slurm",
        "launcher": "srun",
        "access": [f"--partition=p{n:02d}", "--exclusive"],
        "environs": ["openmpi", "mpich", "intelmpi"],
        "features": ["mpi"],
        "extras": {"num_nodes": 64, "nightly_budget": {"jobs": 100, "node_hours": 50}},
        "processor": _processor(),
        "max_jobs": 16,
    }


def _env(name: str, transports: list[str], launcher_options: list[str]) -> dict:
    return {"name": name, "target_systems": ["big_site"], "cc": "mpicc", "cxx": "mpicxx",
            "features": ["mpi", name, *transports],
            "extras": {"launcher_options": launcher_options,
                       "benchmark_dirs": {"osu": f"/apps/osu/7.3/{name}",
                                          "imb": f"/apps/imb/2021.7/{name}/bin"}}}


site_configuration = {
    "systems": [{
        "name": "big_site",
        "descr": "10 partitions x 64 nodes x 2 x 64 cores (a cost fixture)",
        "hostnames": [r"^bigsite-login\d+$"],
        "modules_system": "nomod",
        "partitions": [_partition(n) for n in range(10)],
    }],
    "environments": [
        _env("openmpi", ["ob1-tcp", "ob1-vader", "ucx-sm", "ucx-tcp", "ofi-tcp", "ofi-verbs",
                         "ofi-psm3", "ofi-cxi"], ["--mpi=pmix"]),
        _env("mpich", ["ucx-sm", "ucx-tcp", "ofi-tcp"], ["--mpi=pmi2"]),
        _env("intelmpi", ["shm", "ofi-tcp", "ofi-verbs", "shm-ofi-verbs"], ["--mpi=pmi2"]),
    ],
}
