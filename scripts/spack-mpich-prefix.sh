#!/bin/sh
# Debian installs MPICH beside Open MPI: its wrappers are /usr/bin/*.mpich and
# /usr/bin/mpicc is Open MPI's. A Spack external needs a prefix whose bin/
# holds MPICH's own wrappers, so make one of symbolic links.
# Usage: scripts/spack-mpich-prefix.sh DIR   (prints DIR when done)
set -eu
dir=${1:?usage: $0 DIR}
for tool in mpicc mpicxx mpif77 mpif90 mpifort mpiexec mpirun; do
    if [ ! -x "/usr/bin/$tool.mpich" ]; then
        echo "spack-mpich-prefix: /usr/bin/$tool.mpich missing (apt install mpich libmpich-dev)" >&2
        exit 2
    fi
done
mkdir -p "$dir/bin"
for tool in mpicc mpicxx mpif77 mpif90 mpifort mpiexec mpirun; do
    ln -sfn "/usr/bin/$tool.mpich" "$dir/bin/$tool"
done
# Spack's mpich package calls the C++ wrapper by MPICH's upstream name.
ln -sfn /usr/bin/mpicxx.mpich "$dir/bin/mpic++"
ln -sfn /usr/bin/mpichversion "$dir/bin/mpichversion"
ln -sfn /usr/include/x86_64-linux-gnu/mpich "$dir/include"
ln -sfn /usr/lib/x86_64-linux-gnu "$dir/lib"
echo "$dir"
