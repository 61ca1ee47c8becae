"""Building through a real Spack, where ``spack`` is on PATH (CI has none).

Installs go to ``$SENTINEL_SPACK_INSTALL_TREE`` when set (reused across
sessions, as a site's nightly run does), else into the test's own directory
(a cold build each time).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from sentinel.site.spack import externals_yaml
from tests.conftest import ROOT, load_settings
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


def _unfetchable_suites(out: Path) -> str | None:
    """Why Spack cannot provide OSU and IMB here, or None when it can.

    ``spack fetch --missing`` is a no-op for installed specs and otherwise
    needs the release tarballs (network, a Spack mirror or Spack's source cache).
    """
    # What the first Spack build writes: the MPIs the configuration declares.
    externals = out / "var" / "spack-externals.yaml"
    externals.parent.mkdir(parents=True, exist_ok=True)
    settings = load_settings()
    externals.write_text(externals_yaml(
        SimpleNamespace(extras=e.get("extras", {})) for e in settings["environments"]
        if "local" in e.get("target_systems", [])))
    env = {**os.environ, "SENTINEL_ROOT": str(ROOT), "SENTINEL_SPACK_EXTERNALS": str(externals)}
    env.setdefault("SENTINEL_SPACK_INSTALL_TREE", str(out / "var" / "spack-install"))
    # With spec arguments `spack fetch` concretizes them afresh (the newest
    # IMB); without, it fetches what the environment lists and lacks.
    proc = subprocess.run([SPACK, "-e", str(ROOT / "spack-env" / "debian"), "fetch",
                           "--missing"], capture_output=True, text=True, env=env, timeout=900)
    if proc.returncode == 0:
        return None
    last = (proc.stderr or proc.stdout).strip().splitlines()[-1:]
    return ("Spack cannot fetch the OSU and IMB releases (no network and no Spack mirror "
            f"holding them): {' '.join(last)}")


@pytest.mark.skipif(SPACK is None, reason="no 'spack' on PATH: the Spack build path needs a "
                    "Spack installation (not in any registry CI can reach)")
def test_osu_and_imb_come_from_the_spack_environment(tmp_path):
    need_stack("openmpi")
    need_stack("mpich")
    why = _unfetchable_suites(tmp_path)
    if why:
        pytest.skip(why)
    run = reframe(["-n", "(OsuSpackCheck.*osu_latency|ImbSpackCheck)", "-E",
                   "transport in ('openmpi/ob1-vader', 'mpich/ucx-sm') and mapping == 'core'",
                   "-S", "max_size=65536", "-S", "iterations=200", "-S", "msglog=10",
                   "-r"], tmp_path, checks=("osu.py", "imb.py"))
    builds = run.cases("SpackOsuBuild") + run.cases("SpackImbBuild")
    assert len(builds) == 4  # each suite once per environment
    for build in builds:
        assert build["result"] == "pass", build.get("fail_reason")
    checks = run.cases("OsuSpackCheck") + run.cases("ImbSpackCheck")
    assert {(tc["name"].split()[0], tc["environ"]) for tc in checks} == {
        (c, e) for c in ("OsuSpackCheck", "ImbSpackCheck") for e in ("openmpi", "mpich")}
    for tc in checks:
        assert tc["result"] == "pass", tc.get("fail_reason")
        program = tc["program_path"]
        prefixes = [b["install_prefix"] for b in builds if b["environ"] == tc["environ"]]
        assert any(program.startswith(p + "/") for p in prefixes), (program, prefixes)
        assert f"({tc['environ']}, version string)" in tc["mpi_linkage"]
