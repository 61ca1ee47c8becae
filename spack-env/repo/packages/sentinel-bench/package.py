# MPI Sentinel's own benchmarks (src/bench of the checkout), built with the MPI
# the spec depends on. One package, one variant per benchmark: a check asks
# for the benchmark it runs (sentinel-bench bench=pt2pt ^openmpi).
from spack.package import *


class SentinelBench(MakefilePackage):
    """MPI Sentinel benchmarks: message matching, point-to-point
    characterisation, hybrid MPI+OpenMP Jacobi and mixed-mode micro-benchmarks,
    and the rank/thread placement probe."""

    homepage = "https://github.com/mpi-sentinel/mpi-sentinel"

    # The sources are the checkout's src/bench: `spack develop` points the
    # environment at them (spack-env/README.md), so what is built is exactly
    # what the checkout holds, and a changed source rebuilds.
    version("develop")

    variant(
        "bench",
        default="pt2pt",
        values=("matching", "pt2pt", "jacobi", "hybrid", "affinity"),
        multi=False,
        description="The benchmark to build (a make target of src/bench)",
    )

    depends_on("mpi")

    def build(self, spec, prefix):
        bench = spec.variants["bench"].value
        make(f"CC={spec['mpi'].mpicc}", bench)

    def install(self, spec, prefix):
        bench = spec.variants["bench"].value
        mkdirp(prefix.bin)
        install(join_path(bench, bench), prefix.bin)
