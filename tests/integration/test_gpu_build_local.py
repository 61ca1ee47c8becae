"""Pt2ptGpuCheck for real on this host, built with CUDA from PyPI's wheels.

``tests/config/cuda_build.py`` declares this host's partition a GPU
partition and its Open MPI CUDA-aware: the benchmark is built through the
check's own fixture with ``make pt2pt GPU=cuda``, host buffers are measured
and verified like any pt2pt, and device buffers, on a host without a GPU,
fail naming the missing device instead of measuring nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.cuda_toolkit import NoToolkit, wheel_toolkit
from tests.integration.conftest import QUICK, need_stack, reframe
from tests.integration.test_bench_gpu import has_nvidia_gpu, no_cuda

pytestmark = pytest.mark.integration

CONFIG = ROOT / "tests" / "config" / "cuda_build.py"


@pytest.fixture(scope="module")
def gpu_run(tmp_path_factory):
    need_stack("openmpi")
    where = tmp_path_factory.mktemp("gpu-build")
    try:
        toolkit = wheel_toolkit(where / "cuda")
    except NoToolkit as err:
        no_cuda(str(err))
    out = where / "out"
    out.mkdir()
    return reframe([*QUICK, "-n", "^Pt2ptGpuCheck.*transport=ob1-vader[^+].*mapping=core",
                    "-p", "openmpi$", "-S", "Pt2ptGpuCheck.modes=standard", "--keep-stage-files",
                    "-r"],
                   out, config=CONFIG, checks=("pt2pt.py",),
                   env={"SENTINEL_TEST_GPU_HOME": str(toolkit)})


def test_the_benchmark_is_built_with_cuda_by_the_checks_own_fixture(gpu_run):
    build = gpu_run.case("BenchBuild")
    assert build["result"] == "pass", build.get("fail_reason")
    script = (Path(build["stagedir"]) / "rfm_build.sh").read_text()
    assert " pt2pt GPU=cuda CUDA_HOME=" in script
    # and the benchmark the job ran is that build, linked to the CUDA runtime
    host = gpu_run.case("Pt2ptGpuCheck", buffers="host")
    assert "libcudart.so.12" in (Path(host["stagedir"]) / "rfm_ldd.txt").read_text()


def test_host_buffers_are_measured_and_verified(gpu_run):
    host = gpu_run.case("Pt2ptGpuCheck", buffers="host")
    assert host["result"] == "pass", host.get("fail_reason") or gpu_run.output[-3000:]
    values = {k.split(":")[-1]: v for k, v in host["perfvalues"].items()}
    assert values["latency_8B"][0] > 0 and values["bw_peak"][0] > 0
    assert host["transport_selected"].startswith("pml=ob1 btl=vader")


def test_device_buffers_without_a_gpu_fail_naming_the_missing_device(gpu_run):
    if has_nvidia_gpu():
        pytest.skip("this host has a GPU: test_gpu_buffers.py measures on it")
    device = gpu_run.case("Pt2ptGpuCheck", buffers="device")
    assert device["result"] == "fail"
    assert "--buffers device: no CUDA device visible to rank" in device["fail_reason"]
