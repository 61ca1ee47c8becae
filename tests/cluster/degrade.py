"""Degradations injected on purpose, for the regression-detection test.

* :func:`namespace`: a network namespace whose only interface is its own
  loopback, optionally behind a ``tc`` token-bucket filter (``tbf``) rate
  limit. Every TCP transport between ranks on this host then crosses that
  loopback; the host's own loopback is never touched.
* :func:`busy_loop`: a process spinning on one core (``taskset``), the core a
  rank is bound to, so the rank shares its core.
* :func:`host_speed`: the host's own speed, measured without MPI, to tell a
  change of the host (a VM's vCPUs moved, a contending tenant) from one of
  the path under test.

Both need root (namespaces and qdiscs) and clean up on exit, also on error.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sentinel.analysis.host import host_values
from sentinel.analysis.variables import spec_of


def unavailable() -> str | None:
    """Why degradations cannot be injected here, or None when they can."""
    if os.geteuid() != 0:
        return "injecting degradations needs root (ip netns add, tc qdisc add)"
    for tool in ("ip", "tc", "taskset"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt install iproute2 util-linux)"
    try:
        with namespace(f"sentinel-probe-{os.getpid()}", rate="1gbit"):
            return None
    except RuntimeError as err:  # no CAP_NET_ADMIN in a container, no sch_tbf
        return f"cannot create a rate-limited network namespace here: {err}"


def _run(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {proc.returncode}: {proc.stderr.strip()}")


@contextmanager
def namespace(name: str, rate: str | None = None) -> Iterator[list[str]]:
    """A network namespace ``name`` with its loopback up, rate-limited to ``rate`` if given.

    Yields the command prefix that runs a program inside the namespace. The
    burst (256 KiB) lets single small messages through at full speed, so the
    limit shows in bandwidth, not in small-message latency.
    """
    _run(["ip", "netns", "add", name])
    try:
        inside = ["ip", "netns", "exec", name]
        _run([*inside, "ip", "link", "set", "lo", "up"])
        if rate:
            _run([*inside, "tc", "qdisc", "add", "dev", "lo", "root", "tbf",
                  "rate", rate, "burst", "256kb", "latency", "100ms"])
        yield inside
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


@contextmanager
def busy_loop(cpu: int) -> Iterator[int]:
    """A process spinning on core ``cpu`` while the block runs; yields its PID."""
    proc = subprocess.Popen(["taskset", "-c", str(cpu), sys.executable, "-c",
                             "while True: pass"])
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()



BENCH = Path(__file__).resolve().parents[2] / "src" / "bench"


def build_host_probe(where: Path) -> Path:
    """Build the suite's host probe (``src/bench/host``) into ``where``; returns the program."""
    exe = where / "host"
    proc = subprocess.run(["mpicc.openmpi", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror",
                           "-pthread", "-o", str(exe), str(BENCH / "host" / "host.c"),
                           str(BENCH / "common" / "bench_common.c"), "-lm"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"cannot build the host probe: {proc.stderr.strip()}")
    return exe


def host_speed(exe: Path) -> dict[str, float]:
    """The host's own speed now, without MPI or the network (``src/bench/host``).

    ``roundtrip_ns``: a cache line's round trip between the first two CPUs
    this process may use; ``copy_gbs``: a 32 MiB copy's bandwidth. On a VM
    both change when the hypervisor moves the vCPUs or another tenant
    contends for them, and every transport of a ``Pt2ptCheck`` with them.
    """
    proc = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    values = host_values(spec_of("Pt2ptCheck"), proc.stdout + proc.stderr, exe.name)
    if proc.returncode != 0 or values.unresolved:
        raise RuntimeError(f"{exe.name} exited {proc.returncode}: {values.unresolved}")
    return {"roundtrip_ns": values["host_roundtrip"][0], "copy_gbs": values["host_copy_bw"][0]}
