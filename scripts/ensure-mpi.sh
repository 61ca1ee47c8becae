#!/bin/sh
# Make sure an MPI is there. As root on Debian/Ubuntu: install the missing apt
# packages given as arguments. Otherwise: say what to load and stop.
set -eu
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    exec "$(dirname "$0")/ensure-apt.sh" "$@"
fi
missing=$("$(dirname "$0")/missing-apt.sh" "$@")
[ -z "$missing" ] && exit 0
if command -v mpicc >/dev/null 2>&1; then
    echo "ensure-mpi: not installing$missing (not root or not Debian); using the MPI on PATH"
    exit 0
fi
cat >&2 <<MSG
ensure-mpi: no MPI found and I cannot install one (not root, or no apt-get).
Load your site's MPI before 'make run', for example:
    module load openmpi        # or: module load mpich / intel-oneapi-mpi
    spack load openmpi         # or: spack env activate <env>
then describe it in config/systems/<your_system>.py (see example_cluster.py).
Missing Debian packages were:$missing
MSG
exit 1
