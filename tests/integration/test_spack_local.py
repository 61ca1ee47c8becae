"""Building through a real Spack, where ``spack`` is on PATH (CI has none)."""

from __future__ import annotations

import shutil

import pytest

from tests.integration.conftest import QUICK, need_stack, reframe

pytestmark = pytest.mark.integration

SPACK = shutil.which("spack")


@pytest.mark.skipif(SPACK is None, reason="no 'spack' on PATH: the Spack build path needs a "
                    "Spack installation (not in any registry CI can reach)")
def test_benchmarks_build_through_spack_and_run(tmp_path):
    need_stack("openmpi")
    need_stack("mpich")
    run = reframe([*QUICK, "-n", "Pt2ptCheck.*transport=(ob1-vader|ucx-sm)", "-E",
                   "mapping == 'core'", "-r"], tmp_path, checks=("pt2pt.py",))
    builds = run.cases("BenchBuild")
    assert {b["environ"] for b in builds} >= {"openmpi", "mpich"}
    for build in builds:
        assert build["result"] == "pass", build.get("fail_reason")
        assert build["spack_spec"].startswith("sentinel-bench bench=pt2pt ^")
        assert build["install_prefix"]
    for tc in run.cases("Pt2ptCheck"):
        assert tc["result"] == "pass", tc.get("fail_reason")
