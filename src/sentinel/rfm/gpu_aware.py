"""Which GPU runtime an environment's MPI is aware of, from its features."""

from __future__ import annotations

#: An environment's GPU-aware MPI, by feature: the make variable for each.
GPU_RUNTIMES = {"cuda": "CUDA_HOME", "rocm": "ROCM_PATH"}


def gpu_runtime(environ) -> str | None:
    """``cuda`` or ``rocm``: the GPU runtime the environment's MPI is aware of (its features)."""
    found = [name for name in GPU_RUNTIMES if name in environ.features]
    return found[0] if found else None


def require_gpu_aware(test) -> None:
    """Skip ``test``, with the reason, where its environment's MPI is not GPU-aware."""
    env = test.current_environ
    test.skip_if(gpu_runtime(env) is None,
                 f"environment {env.name} declares no GPU-aware MPI (feature "
                 f"{' or '.join(GPU_RUNTIMES)}): device buffers need one")
