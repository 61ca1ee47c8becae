"""The Spack build path as ReFrame generates it (dry-run: no Spack needed)."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.conftest import ROOT
from tests.integration.conftest import need_stack, reframe

pytestmark = pytest.mark.integration


def _dry_run(tmp_path, environ: str, name: str = "Pt2ptCheck.*transport=ob1-vader",
             checks: tuple[str, ...] = ("pt2pt.py",)) -> None:
    need_stack("openmpi")
    run = reframe(["-n", name, "-p", environ, "--dry-run"],
                  tmp_path, config=ROOT / "tests" / "config" / "spack.py", checks=checks)
    assert run.returncode == 0, run.output[-3000:]


def test_spack_environment_builds_each_benchmark_through_spack(tmp_path):
    _dry_run(tmp_path, "openmpi-spack")
    scripts = list((tmp_path / "var" / "stage").rglob("openmpi-spack/*/rfm_build.sh"))
    assert len(scripts) == 1, scripts  # pt2pt's build, once for the environment
    build = scripts[0].read_text()
    env = ROOT / "spack-env" / "debian"
    assert f"spack -e {env} install 'sentinel-bench bench=pt2pt ^openmpi'" in build
    assert " add " not in build and "make " not in build  # the template lists the spec
    # The externals are written by the build, not when the configuration loads.
    assert "    - spec: openmpi@" in build and "      prefix: /usr" in build
    assert 'mv "$SENTINEL_SPACK_EXTERNALS.$$" "$SENTINEL_SPACK_EXTERNALS"' in build
    assert not (tmp_path / "var" / "spack-externals.yaml").exists()


def test_spack_spec_is_overridden_from_the_command_line(tmp_path):
    need_stack("openmpi")
    spec = "sentinel-bench@develop bench=pt2pt ^openmpi"
    run = reframe(["-n", "Pt2ptCheck.*transport=ob1-vader", "-p", "openmpi-spack", "--dry-run",
                   "-S", f"BenchBuild.spack_spec={spec}"],
                  tmp_path, config=ROOT / "tests" / "config" / "spack.py", checks=("pt2pt.py",))
    assert run.returncode == 0, run.output[-3000:]
    build = next((tmp_path / "var" / "stage").rglob("openmpi-spack/*/rfm_build.sh")).read_text()
    assert build.splitlines()[-1] == f"spack -e {ROOT / 'spack-env' / 'debian'} install '{spec}'"


def test_wrapper_environment_still_builds_with_make(tmp_path):
    _dry_run(tmp_path, "^openmpi$")
    script = next((tmp_path / "var" / "stage").rglob("rfm_build.sh"))
    build = script.read_text()
    make = [line for line in build.splitlines() if line.startswith("make -j")]
    assert "spack -e" not in build and len(make) == 1 and "pt2pt" in make[0]
    assert make[0].startswith("make -j 1 CC=")
    # then the compiler's name and version, for the provenance of the results
    assert "--version" in build.splitlines()[-1] and "rfm_compiler.txt" in build
    # Only the benchmark's own sources (and the host probe's) are copied,
    # never the whole src/bench:
    # Spack's dev builds leave links to their stages there.
    bench = ROOT / "src" / "bench"
    assert f"cp -R {bench}/Makefile {bench}/common {bench}/host {bench}/pt2pt ." in build
    assert "make clean" in build
    assert not [p for p in script.parent.iterdir() if p.is_dir()]


@pytest.mark.parametrize("suite,package,check,name", [
    ("osu", "osu-micro-benchmarks", "OsuSpackCheck", "ob1-vader.*mapping=core.*osu_latency"),
    ("imb", "intel-mpi-benchmarks", "ImbSpackCheck", "ob1-vader.*mapping=core"),
])
def test_spack_environment_takes_osu_and_imb_from_spack(tmp_path, suite, package, check,
                                                        name):
    _dry_run(tmp_path, "openmpi-spack", f"{check}.*transport={name}", (f"{suite}.py",))
    stage = tmp_path / "var" / "stage"
    builds = [p.read_text() for p in stage.rglob("openmpi-spack/Spack*Build*/rfm_build.sh")]
    env = ROOT / "spack-env" / "debian"
    assert [b.splitlines()[-1] for b in builds] == [
        f"spack -e {env} install '{package} ^openmpi'"]
    job = next(stage.rglob(f"openmpi-spack/{check}_*/rfm_job.sh")).read_text()
    assert f"$(spack location -i {package} ^openmpi)" in job


def test_spack_environment_has_one_osu_check_per_benchmark(tmp_path):
    need_stack("openmpi")
    run = reframe(["-n", "Osu.*transport=ob1-vader.*mapping=core.*osu_latency", "-lC"],
                  tmp_path, config=ROOT / "tests" / "config" / "spack.py",
                  checks=("osu.py",))
    assert run.returncode == 0, run.output[-3000:]
    listed = [line for line in run.output.splitlines() if line.startswith("- Osu")]
    by_environ = {}
    for line in listed:
        environ = line.rsplit("+", 1)[-1]
        by_environ.setdefault(environ, []).append(line.split()[1])
    assert by_environ["openmpi-spack"] == ["OsuSpackCheck"]
    assert sorted(by_environ["openmpi"]) == ["OsuCheck", "OsuSourceCheck"]


def test_mpich_prefix_holds_every_wrapper_spack_calls(tmp_path):
    need_stack("mpich")
    script = ROOT / "scripts" / "spack-mpich-prefix.sh"
    out = subprocess.run([str(script), str(tmp_path / "p")], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == str(tmp_path / "p")
    bin_dir = tmp_path / "p" / "bin"
    # Spack's mpich package sets MPICC/MPICXX/MPIF77/MPIFC to these names.
    for name, target in (("mpicc", "mpicc.mpich"), ("mpic++", "mpicxx.mpich"),
                         ("mpif77", "mpif77.mpich"), ("mpif90", "mpif90.mpich")):
        assert os.readlink(bin_dir / name) == f"/usr/bin/{target}"
        assert os.access(bin_dir / name, os.X_OK)
