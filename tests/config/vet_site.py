"""A partition of 1,000 nodes to vet, for measuring what ``sentinel vet`` costs there.

One Slurm partition ``big`` of 1,000 nodes of 2 x 64 cores, with Open MPI
over UCX (``ucx-sm`` within a node, ``ucx-rc`` across): the shape of a
site's production partition and MPI. Added to the suite's configuration,
never replacing it::

    sentinel plan -C tests/config/vet_site.py --system vet_site:big --mode vet,sweep

Nothing here runs: it lists, dry-runs and plans anywhere.
"""

_SOCKETS, _CORES = 2, 64


def _processor() -> dict:
    ncpus = _SOCKETS * _CORES
    return {
        "arch": "zen3", "num_cpus": ncpus, "num_cpus_per_core": 1,
        "num_cpus_per_socket": _CORES, "num_sockets": _SOCKETS,
        "topology": {
            "sockets": [hex(((1 << _CORES) - 1) << (s * _CORES)) for s in range(_SOCKETS)],
            "cores": [hex(1 << c) for c in range(ncpus)],
        },
    }


site_configuration = {
    "systems": [{
        "name": "vet_site",
        "descr": "one partition of 1,000 nodes x 2 x 64 cores (a cost fixture)",
        "hostnames": [r"^vetsite-login\d+$"],
        "modules_system": "nomod",
        "partitions": [{
            "name": "big",
            "descr": "1,000 nodes of 2 x 64 cores",
            "scheduler": "slurm",
            "launcher": "srun",
            "access": ["--partition=big", "--exclusive"],
            "environs": ["openmpi"],
            "features": ["mpi"],
            "extras": {"num_nodes": 1000},
            "processor": _processor(),
            "max_jobs": 16,
        }],
    }],
    "environments": [{
        "name": "openmpi", "target_systems": ["vet_site"], "cc": "mpicc", "cxx": "mpicxx",
        "features": ["mpi", "openmpi", "ucx-sm", "ucx-rc"],
        "extras": {"launcher_options": ["--mpi=pmix"]},
    }],
}
