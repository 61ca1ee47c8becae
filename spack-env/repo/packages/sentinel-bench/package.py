# MPI Sentinel's own benchmarks (src/bench of the checkout), built with the MPI
# the spec depends on. One package, one variant per benchmark: a check asks
# for the benchmark it runs (sentinel-bench bench=pt2pt ^openmpi).
import os
import shutil

from spack.package import *


class SentinelBench(MakefilePackage):
    """MPI Sentinel benchmarks: message matching, point-to-point
    characterisation, hybrid MPI+OpenMP Jacobi and mixed-mode micro-benchmarks,
    the ring, the fabric sweeps, one-sided and multithreaded message rates
    and the rank/thread placement probe."""

    homepage = "https://github.com/mpi-sentinel/mpi-sentinel"

    # The sources are the checkout's src/bench: `spack develop` points the
    # environment at them (spack-env/README.md), so what is built is exactly
    # what the checkout holds, and a changed source rebuilds.
    version("develop")

    variant(
        "bench",
        default="pt2pt",
        # every target of src/bench/Makefile's BENCHES (tests/unit/test_spack_package.py)
        values=("matching", "pt2pt", "jacobi", "hybrid", "affinity", "ring", "fabric", "rma",
                "msgrate", "congestion"),
        multi=False,
        description="The benchmark to build (a make target of src/bench)",
    )

    depends_on("mpi")

    def build(self, spec, prefix):
        # Out of the source tree: every spec of the develop path (each bench,
        # each MPI) shares that tree, and make would take a binary another
        # MPI built there as up to date. Only the sources are copied: Spack
        # links its build stages into the develop path (build-<arch>-<hash>).
        bench = spec.variants["bench"].value
        work = join_path(self.stage.path, "sentinel-build")
        if os.path.isdir(work):
            shutil.rmtree(work)
        mkdirp(work)
        for part in ("common", "host", bench):
            copy_tree(join_path(self.stage.source_path, part), join_path(work, part))
        install(join_path(self.stage.source_path, "Makefile"), work)
        with working_dir(work):
            make("clean")  # a binary built in the checkout is not this MPI's
            make(f"CC={spec['mpi'].mpicc}", bench)

    def install(self, spec, prefix):
        bench = spec.variants["bench"].value
        mkdirp(prefix.bin)
        install(join_path(self.stage.path, "sentinel-build", bench, bench), prefix.bin)
        # the node probe every job runs before its launches
        install(join_path(self.stage.path, "sentinel-build", "host", "host"), prefix.bin)
