"""Site layer: what this host and the site's tools offer.

MPI stacks and their transports, Slurm, benchmark binaries, Spack, release
tarballs. Imports only :mod:`sentinel.mpi` and the foundation.
"""
