"""Pt2ptGpuCheck: the device-buffer pt2pt where a partition has GPUs, and where not, why not.

Build and listing are checked here with ``--dry-run`` on ``gpu_site`` (Orfeo's
GPU partition with a CUDA-aware Open MPI, ``tests/config/gpu_site.py``); the
run itself needs a GPU and a CUDA-aware MPI on this machine.
"""

import pytest

from sentinel.site import detect
from tests.integration.conftest import QUICK, ROOT, Run, need_stack, reframe

pytestmark = pytest.mark.integration

GPU_SITE = ROOT / "tests" / "config" / "gpu_site.py"


def _stage_file(case: dict, name: str) -> str:
    from pathlib import Path

    return (Path(case["stagedir"]) / name).read_text()


def _launch(job: list[str]) -> str:
    """The job script's last launch: the benchmark's (the host probe runs before and after)."""
    return [line for line in job if line.startswith("mpirun ")][-1]


@pytest.fixture(scope="module")
def gpu_site(tmp_path_factory) -> Run:
    out = tmp_path_factory.mktemp("gpu_site")
    run = reframe(["--system", "gpu_site", "--dry-run",
                   "-n", "^Pt2ptGpuCheck.*%transport=ucx-rc.*%mapping=node"], out,
                  config=GPU_SITE, checks=("pt2pt.py",))
    assert run.returncode == 0, run.output[-3000:]
    return run


def test_device_buffers_are_built_with_cuda_and_asked_for_on_the_gpu_partition(gpu_site):
    cases = {tc["buffers"]: tc for tc in gpu_site.cases("Pt2ptGpuCheck")}
    assert set(cases) == {"host", "device"}
    assert {tc["partition"] for tc in cases.values()} == {"gpu"}  # THIN has no +gpu
    job = _stage_file(cases["device"], "rfm_job.sh").splitlines()
    assert "#PBS -q dssc_gpu" in job
    assert _launch(job).endswith(" --buffers device")
    assert _launch(_stage_file(cases["host"], "rfm_job.sh").splitlines()).endswith(
        " --buffers host")
    # UCX gets its CUDA memory transports where the buffers are on the device, only there
    assert "export UCX_TLS=rc,self,cuda_copy,cuda_ipc" in job
    assert "export UCX_TLS=rc,self\n" in _stage_file(cases["host"], "rfm_job.sh")
    build = [tc for tc in gpu_site.cases("BenchBuild")]
    assert len(build) == 1
    script = _stage_file(build[0], "rfm_build.sh")
    assert " pt2pt GPU=cuda CUDA_HOME=/opt/nvidia/cuda-11.4\n" in script
    # references are indexed by the buffers too
    assert cases["device"]["reference_index_names"].endswith("/mapping/buffers")
    assert cases["device"]["reference_index_values"] == "gpu_site:gpu/openmpi/ucx-rc/node/device"


def test_an_mpi_that_is_not_gpu_aware_is_skipped_with_the_reason(tmp_path):
    run = reframe(["--system", "orfeo", "--dry-run", "-n",
                   "^Pt2ptGpuCheck.*%transport=ucx-rc.*%mapping=node.*%buffers=device"],
                  tmp_path, checks=("pt2pt.py",))
    assert run.returncode == 0, run.output[-3000:]
    assert ("environment openmpi declares no GPU-aware MPI (feature cuda or rocm): device "
            "buffers need one") in run.output


def test_the_device_buffer_pt2pt_runs_on_this_machines_gpu(tmp_path):
    if detect.gpus() == 0:
        pytest.skip("no GPU on this machine (nvidia-smi lists none): the local partition has "
                    "no 'gpu' feature, so Pt2ptGpuCheck is not generated; the dry runs above "
                    "check its build and job scripts")
    need_stack("openmpi")
    stacks = {s.family: s for s in detect.local_stacks() if s.name == s.family}
    why = detect.cuda_awareness(stacks["openmpi"])
    if why:
        pytest.skip(f"this machine's Open MPI takes no CUDA buffers ({why}): the local "
                    "configuration declares no 'cuda' feature for it")
    run = reframe([*QUICK, "-n", "^Pt2ptGpuCheck.*%transport=ucx-sm.*%mapping=core",
                   "-p", "openmpi$", "-r"], tmp_path, checks=("pt2pt.py",))
    cases = {tc["buffers"]: tc for tc in run.cases("Pt2ptGpuCheck")}
    assert cases["device"]["result"] == "pass", cases["device"].get("fail_reason")
    assert cases["device"]["perfvalues"]


def test_osu_runs_with_device_buffers_on_either_side(tmp_path):
    run = reframe(["--system", "gpu_site", "--dry-run",
                   "-S", "OsuGpuCheck.suite_dir=/apps/osu-cuda",
                   "-n", "^OsuGpuCheck.*%transport=(ucx-rc|ofi-mlx).*%mapping=node.*osu_latency"],
                  tmp_path, config=GPU_SITE, checks=("osu.py",))
    assert run.returncode == 0, run.output[-3000:]
    cases = {tc["buffers"]: tc for tc in run.cases("OsuGpuCheck") if tc["environ"] == "openmpi"}
    assert set(cases) == {"device", "host-device", "device-host"}
    for buffers, (rank0, rank1) in {"device": "DD", "host-device": "HD",
                                    "device-host": "DH"}.items():
        launch = _launch(_stage_file(cases[buffers], "rfm_job.sh").splitlines())
        assert launch.endswith(f"/apps/osu-cuda/osu_latency -d cuda {rank0} {rank1}"), launch
        assert cases[buffers]["reference_index_values"] == \
            f"gpu_site:gpu/openmpi/ucx-rc/node/osu_latency/{buffers}"
    ucx = run.cases("OsuGpuCheck", transport="ucx-rc")
    assert ucx and all("export UCX_TLS=rc,self,cuda_copy,cuda_ipc" in
                       _stage_file(tc, "rfm_job.sh") for tc in ucx)
    # this site's Intel MPI is not declared GPU-aware: skipped, saying so
    intel = [tc for tc in run.cases("OsuGpuCheck") if tc["environ"] == "intelmpi"]
    assert intel and {tc["result"] for tc in intel} == {"skip"}
    assert ("environment intelmpi declares no GPU-aware MPI (feature cuda or rocm): device "
            "buffers need one") in run.output
