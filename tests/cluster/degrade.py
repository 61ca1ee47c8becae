"""Degradations injected on purpose, for the regression-detection test.

* :func:`namespace`: a network namespace whose only interface is its own
  loopback, optionally behind a ``tc`` token-bucket filter (``tbf``) rate
  limit. Every TCP transport between ranks on this host then crosses that
  loopback; the host's own loopback is never touched.
* :func:`busy_loop`: a process spinning on one core (``taskset``), the core a
  rank is bound to, so the rank shares its core.

Both need root (namespaces and qdiscs) and clean up on exit, also on error.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager


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
            limit(inside, rate)
        yield inside
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


def limit(inside: list[str], rate: str) -> None:
    """Put the loopback of the namespace ``inside`` runs in behind a ``tbf`` limit of ``rate``.

    The same filter as :func:`namespace` adds (a 256 KiB burst), on a
    namespace that already runs: its sessions before and after share it.
    """
    _run([*inside, "tc", "qdisc", "add", "dev", "lo", "root", "tbf",
          "rate", rate, "burst", "256kb", "latency", "100ms"])


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
