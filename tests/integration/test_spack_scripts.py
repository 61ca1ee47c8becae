"""The Spack build path as ReFrame generates it (dry-run: no Spack needed)."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT
from tests.integration.conftest import need_stack, reframe

pytestmark = pytest.mark.integration


def _dry_run(tmp_path, environ: str) -> None:
    need_stack("openmpi")
    run = reframe(["-n", "Pt2ptCheck.*transport=ob1-vader", "-p", environ, "--dry-run"],
                  tmp_path, config=ROOT / "tests" / "config" / "spack.py",
                  checks=("pt2pt.py",))
    assert run.returncode == 0, run.output[-3000:]


def test_spack_environment_builds_each_benchmark_through_spack(tmp_path):
    _dry_run(tmp_path, "openmpi-spack")
    scripts = list((tmp_path / "var" / "stage").rglob("openmpi-spack/*/rfm_build.sh"))
    assert len(scripts) == 1, scripts  # pt2pt's build, once for the environment
    build = scripts[0].read_text()
    env = ROOT / "spack-env" / "debian"
    assert f"spack -e {env} install 'sentinel-bench bench=pt2pt ^openmpi'" in build
    assert " add " not in build and "make " not in build  # the template lists the spec


def test_wrapper_environment_still_builds_with_make(tmp_path):
    _dry_run(tmp_path, "^openmpi$")
    script = next((tmp_path / "var" / "stage").rglob("rfm_build.sh"))
    build = script.read_text()
    assert "spack -e" not in build and "pt2pt" in build.splitlines()[-1]
    assert build.splitlines()[-1].startswith("make -j 1 CC=")
    # Only the benchmark's own sources are copied, never the whole src/bench:
    # Spack's dev builds leave links to their stages there.
    bench = ROOT / "src" / "bench"
    assert f"cp -R {bench}/Makefile {bench}/common {bench}/pt2pt ." in build
    assert "make clean" in build
    assert not [p for p in script.parent.iterdir() if p.is_dir()]
