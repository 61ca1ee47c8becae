"""The processor shape of a test node: sockets, NUMA domains and cores over this host's CPUs.

A site's node has two sockets (and a NUMA domain each, or more) with many
cores; this host has a few CPUs in one socket. A :class:`NodeShape` lays
this host's real CPUs out as such a node: ``sockets`` packages of
``cores_per_socket`` cores, one NUMA domain per package, CPU ``k`` in
package ``k // cores_per_socket``. Every program of a test node sees that
layout through hwloc's XML import (:meth:`NodeShape.hwloc_env`: slurmd,
and so Slurm's task binding, and the MPI libraries of the node's tasks),
and ReFrame gets the same layout as the partition's processor
(:meth:`NodeShape.processor`), so placement is proven per socket. Binding
stays real: the processing units are this host's CPUs, by their numbers.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


class TopologyError(RuntimeError):
    """The node's topology file could not be written; the message says why."""


@dataclass(frozen=True)
class NodeShape:
    """``sockets`` x ``cores_per_socket`` cores, one CPU each, over this host's CPUs 0...."""

    sockets: int
    cores_per_socket: int

    @classmethod
    def on_host(cls, sockets: int = 2) -> NodeShape:
        """``sockets`` sockets sharing this host's CPUs evenly (at least one core each)."""
        return cls(sockets, max((os.cpu_count() or 1) // sockets, 1))

    @property
    def cpus(self) -> int:
        """CPUs of the node (one per core)."""
        return self.sockets * self.cores_per_socket

    def slurm(self) -> str:
        """The node line's CPU description for ``slurm.conf``."""
        return (f"CPUs={self.cpus} Sockets={self.sockets} CoresPerSocket={self.cores_per_socket}"
                " ThreadsPerCore=1")

    def _mask(self, cpus: range) -> str:
        return hex(sum(1 << c for c in cpus))

    def socket_cpus(self, socket: int) -> range:
        """The CPUs of ``socket``."""
        return range(socket * self.cores_per_socket, (socket + 1) * self.cores_per_socket)

    def processor(self) -> dict:
        """The node as a ReFrame partition's ``processor`` (as --detect-host-topology writes it)."""
        sockets = [self._mask(self.socket_cpus(s)) for s in range(self.sockets)]
        return {
            "num_cpus": self.cpus, "num_cpus_per_core": 1,
            "num_cpus_per_socket": self.cores_per_socket, "num_sockets": self.sockets,
            "topology": {"numa_nodes": sockets, "sockets": sockets,
                         "cores": [self._mask(range(c, c + 1)) for c in range(self.cpus)]},
        }

    def hwloc_synthetic(self) -> str:
        """hwloc's synthetic description of the node."""
        return f"package:{self.sockets} numa:1 core:{self.cores_per_socket} pu:1"

    def write_xml(self, path: Path) -> Path:
        """The node's topology as hwloc XML at ``path`` (``lstopo`` of the synthetic shape)."""
        lstopo = shutil.which("lstopo-no-graphics") or shutil.which("lstopo")
        if lstopo is None:
            raise TopologyError("lstopo is not installed (apt install hwloc)")
        proc = subprocess.run([lstopo, "--input", self.hwloc_synthetic(), "--of", "xml",
                               str(path), "--force"], capture_output=True, text=True,
                              timeout=60)
        if proc.returncode != 0 or not path.exists():
            raise TopologyError(f"lstopo could not write {path}: {proc.stderr.strip()}")
        return path

    @staticmethod
    def hwloc_env(xml: Path) -> dict[str, str]:
        """What makes hwloc (and every MPI that uses it) read the node from ``xml``.

        ``HWLOC_THISSYSTEM=1`` says the XML describes this very machine, so
        binding through it is real.
        """
        return {"HWLOC_XMLFILE": str(xml), "HWLOC_THISSYSTEM": "1"}
