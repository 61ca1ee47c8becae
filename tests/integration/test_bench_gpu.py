"""pt2pt's message buffers in GPU memory (``--buffers device``), built with each MPI's wrapper.

A host build refuses ``--buffers device`` before measuring, naming the
rebuild. A CUDA build (``make pt2pt GPU=cuda CUDA_HOME=...``) needs the CUDA
runtime's headers and ``libcudart``: ``SENTINEL_CUDA_HOME`` names them (a
CUDA toolkit, or the PyPI wheel ``nvidia-cuda-runtime-cu12``'s
``site-packages/nvidia/cuda_runtime``, joined into a toolkit by
:mod:`tests.cuda_toolkit`). Without a GPU that build names the missing
device; with one (and a CUDA-aware MPI) it measures.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from sentinel.parsers.sentinel_output import parse
from tests.conftest import ROOT
from tests.cuda_toolkit import NoToolkit, wheel_toolkit
from tests.integration.conftest import BENCH_STACKS, REQUIRED, mpi_env, need_stack

pytestmark = pytest.mark.integration

SMALL = ["--max-size", "1024", "--iterations", "10", "--repetitions", "2", "--warmup", "2"]
def make_pt2pt(family: str, where: Path, *make_args: str) -> tuple[list[str], str]:
    """pt2pt built under ``where`` with ``family``'s wrapper; the launcher and its path."""
    need_stack(family)
    cc, launcher = BENCH_STACKS[family]
    src = where / "bench"
    shutil.copytree(ROOT / "src" / "bench", src, ignore=shutil.ignore_patterns("build-*"))
    build = subprocess.run(["make", "-C", str(src), f"CC={cc}", *make_args, "pt2pt"],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stdout + build.stderr
    return launcher, str(src / "pt2pt" / "pt2pt")


def run(bench: tuple[list[str], str], *args: str) -> subprocess.CompletedProcess:
    launcher, exe = bench
    return subprocess.run([*launcher, "-np", "2", exe, *SMALL, *args], capture_output=True,
                          text=True, env=mpi_env(), timeout=120)


def no_cuda(why: str) -> None:
    """Skip, or fail where CI requires the CUDA build (SENTINEL_REQUIRE_STACKS has cuda)."""
    if "cuda" in REQUIRED:
        pytest.fail(f"SENTINEL_REQUIRE_STACKS includes cuda, but {why}")
    pytest.skip(why)


def cuda_make_args(scratch: Path) -> list[str]:
    """The make variables of a CUDA build (:func:`tests.cuda_toolkit.wheel_toolkit`)."""
    try:
        return ["GPU=cuda", f"CUDA_HOME={wheel_toolkit(scratch / 'cuda')}"]
    except NoToolkit as err:
        no_cuda(str(err))
        raise


def has_nvidia_gpu() -> bool:
    return shutil.which("nvidia-smi") is not None or Path("/dev/nvidia0").exists()


def is_cuda_aware(family: str) -> bool:
    """Whether the MPI says it was built with CUDA support (device buffers handed to MPI)."""
    if family == "openmpi":
        info = subprocess.run(["ompi_info", "--parsable", "--all"], capture_output=True,
                              text=True) if shutil.which("ompi_info") else None
        return info is not None and "mpi_built_with_cuda_support:value:true" in info.stdout
    version = shutil.which("mpichversion")
    return version is not None and "--with-cuda" in subprocess.run(
        [version], capture_output=True, text=True).stdout


@pytest.fixture(scope="module", params=sorted(BENCH_STACKS))
def host_build(request, tmp_path_factory):
    return make_pt2pt(request.param, tmp_path_factory.mktemp(f"host-{request.param}"))


@pytest.fixture(scope="module", params=sorted(BENCH_STACKS))
def cuda_build(request, tmp_path_factory):
    where = tmp_path_factory.mktemp(f"cuda-{request.param}")
    args = cuda_make_args(where)
    return request.param, make_pt2pt(request.param, where, *args)


def test_host_build_refuses_device_buffers_naming_the_rebuild(host_build):
    p = run(host_build, "--buffers", "device")
    assert p.returncode != 0
    assert ("pt2pt: error: --buffers device needs GPU support, but this pt2pt was built "
            "without it: rebuild it with 'make pt2pt GPU=cuda") in p.stderr
    assert p.stderr.count("pt2pt: error:") == 1
    out = parse(p.stdout, "pt2pt")
    assert [r.fields for r in out.of("ERROR")] == [{"bench": "pt2pt", "what": "gpu_not_built"}]
    assert not out.of("CONFIG") and not out.of("PT2PT") and not out.done  # before measuring


def test_host_buffers_are_the_default_and_recorded(host_build):
    p = run(host_build, "--buffers", "host", "--metrics", "latency", "--modes", "standard")
    assert p.returncode == 0, p.stderr
    out = parse(p.stdout, "pt2pt")
    config = out.of("CONFIG")[0].fields
    assert config["buffers"] == "host" and "gpu_name" not in config
    assert out.of("PT2PT") and out.done


def test_unknown_buffers_value_names_the_allowed_ones(host_build):
    p = run(host_build, "--buffers", "nonsense")
    assert p.returncode != 0
    assert "pt2pt: error: --buffers: unknown value 'nonsense' (allowed: host device)" in p.stderr


def test_unknown_gpu_runtime_stops_make():
    p = subprocess.run(["make", "-n", "-C", str(ROOT / "src" / "bench"), "GPU=opencl", "pt2pt"],
                       capture_output=True, text=True)
    assert p.returncode != 0
    assert "GPU=opencl is not supported: use GPU=cuda" in p.stderr


def test_cuda_build_measures_on_a_gpu_or_names_the_missing_device(cuda_build):
    family, bench = cuda_build
    if not has_nvidia_gpu():
        p = run(bench, "--buffers", "device")
        assert p.returncode != 0
        assert "pt2pt: error: --buffers device: no CUDA device visible to rank" in p.stderr
        assert "(cudaGetDeviceCount: " in p.stderr
        errors = parse(p.stdout, "pt2pt").of("ERROR")
        assert errors and errors[0].fields["what"] == "no_gpu_device"
        assert errors[0].fields["runtime"] == "cuda"
        return
    if not is_cuda_aware(family):
        pytest.skip(f"a GPU is here, but {family} is not built with CUDA support: device "
                    "buffers handed to it would crash (a CUDA-aware MPI is needed)")
    p = run(bench, "--buffers", "device", "--metrics", "latency,bw")
    assert p.returncode == 0, p.stderr
    out = parse(p.stdout, "pt2pt")
    config = out.of("CONFIG")[0].fields
    assert config["buffers"] == "device" and config["gpu_runtime"] == "cuda"
    assert config["gpu_name"] and int(config["gpu_count"]) >= 1
    assert [r for r in out.of("PT2PT") if r.fields["metric"] == "latency"] and out.done
