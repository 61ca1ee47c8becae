"""A CUDA toolkit laid out from PyPI's wheels, for building the GPU benchmark here.

``nvidia-cuda-runtime-cu12`` holds the runtime's headers and
``libcudart.so.12``; the ``crt/`` headers that ``cuda_runtime_api.h``
includes come with ``nvidia-cuda-nvcc-cu12``. :func:`wheel_toolkit` joins
them under one directory the way a toolkit is laid out (``include/``,
``lib64/libcudart.so``), so ``make pt2pt GPU=cuda CUDA_HOME=<it>`` and an
environment's ``extras['gpu_home']`` take it as they take a site's.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Where the tests find the runtime wheel's directory (make test sets it).
CUDA_HOME_VAR = "SENTINEL_CUDA_HOME"
WHEEL_HINT = (f"set {CUDA_HOME_VAR} to a CUDA toolkit or to the runtime of the PyPI wheel "
              "nvidia-cuda-runtime-cu12 (pip install nvidia-cuda-runtime-cu12 "
              "nvidia-cuda-nvcc-cu12; then <site-packages>/nvidia/cuda_runtime, which has "
              "include/cuda_runtime_api.h and lib/libcudart.so.12; the crt/ headers it "
              "includes come from nvidia-cuda-nvcc-cu12)")


class NoToolkit(RuntimeError):
    """No usable CUDA runtime: the message says what is missing and how to get it."""


def wheel_toolkit(dest: Path) -> Path:
    """``$SENTINEL_CUDA_HOME`` as a toolkit: itself if it is one, else one joined at ``dest``."""
    value = os.environ.get(CUDA_HOME_VAR, "")
    if not value:
        raise NoToolkit(f"{CUDA_HOME_VAR} is not set: {WHEEL_HINT} (make test sets it)")
    home = Path(value)
    include = home / "include"
    if not (include / "cuda_runtime_api.h").is_file():
        raise NoToolkit(f"{CUDA_HOME_VAR}={home} has no include/cuda_runtime_api.h: "
                        f"{WHEEL_HINT}")
    libs = sorted(p for d in ("lib64", "lib") for p in (home / d).glob("libcudart.so*"))
    if not libs:
        raise NoToolkit(f"{CUDA_HOME_VAR}={home} has no lib64/ or lib/libcudart.so*: "
                        f"{WHEEL_HINT}")
    crt = include / "crt" / "host_defines.h"
    if crt.is_file() and any(p.name == "libcudart.so" for p in libs):
        return home
    nvcc = home.parent / "cuda_nvcc" / "include"
    if not crt.is_file() and not (nvcc / "crt" / "host_defines.h").is_file():
        raise NoToolkit(f"{include} has no crt/host_defines.h, nor has {nvcc}: pip install "
                        f"nvidia-cuda-nvcc-cu12 beside the runtime ({WHEEL_HINT})")
    (dest / "include").mkdir(parents=True, exist_ok=True)
    (dest / "lib64").mkdir(exist_ok=True)
    for source in (include, nvcc):
        for entry in source.iterdir() if source.is_dir() else ():
            link = dest / "include" / entry.name
            if not link.exists():
                link.symlink_to(entry)
    for lib in libs:
        (dest / "lib64" / lib.name).symlink_to(lib)
    if not (dest / "lib64" / "libcudart.so").exists():
        (dest / "lib64" / "libcudart.so").symlink_to(libs[0])
    return dest
