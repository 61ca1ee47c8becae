"""Prove from the library's own log which transport carried the traffic."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sentinel.mpi.transports import UCX_CLASSES, Transport

_PML = re.compile(r"selected (\w+) best priority")
_BML = re.compile(r"mca: bml: Using (\w+) btl for send to")
# UCX up to 1.14: "ep_cfg[1]: tag(rc_mlx5/mlx5_0:1)"; from 1.15: "<context>
# inter-node cfg#6 tag(rc_mlx5/mlx5_0:1)" (openucx/ucx ucp_worker.c, ucp_ep.c)
_UCX_EP = re.compile(r"(?:ep_cfg\[\d+\]:|(?:self|intra-node|inter-node) cfg#\d+) tag\(([^)]*)\)")
# Open MPI 4.x "mtl:ofi:prov: <provider>" (its "mtl:ofi:provider:" is the
# domain); 5.x "mtl:ofi:provider: <provider>" with "mtl:ofi:provider:domain:"
_OMPI_OFI = re.compile(r"mtl:ofi:prov: (\S+)")
_OMPI5_OFI = re.compile(r"mtl:ofi:provider: (\S+)")
_OMPI5_DOMAIN = "mtl:ofi:provider:domain:"
_IMPI_FABRICS = re.compile(r"MPI startup\(\): I_MPI_FABRICS=(\S+)")
# Intel MPI "MPI startup(): libfabric provider: tcp"; MPICH 3.4 the same
# line, MPICH 4.x "libfabric provider: tcp - <fabric>"
_OFI_PROVIDER = re.compile(r"libfabric provider: ([\w;]+)")
_MPICH_UCX = "==== UCX netmod Capability ===="
# printed by MPICH's OFI netmod only (ofi_init.c dump_global_settings)
_MPICH_OFI = "==== Capability set configuration ===="
_OMPI_TCP_IF = re.compile(r"btl: tcp: Using interface: (\S+)")
# A row of Intel MPI's NIC pinning table: rank, (2021.13+: thread id,) NIC;
# the CPU pinning table's rows have more columns.
_IMPI_NIC = re.compile(r"MPI startup\(\): \d+\s+(?:\d+\s+)?([A-Za-z]\S*)\s*$", re.MULTILINE)


@dataclass
class Selection:
    """What the library logged about its own choices, one set per signal."""

    pml: set[str] = field(default_factory=set)
    btl: set[str] = field(default_factory=set)
    ucx: set[str] = field(default_factory=set)
    ofi: set[str] = field(default_factory=set)
    fabrics: set[str] = field(default_factory=set)
    netmod: set[str] = field(default_factory=set)
    #: Network interfaces an IP transport used.
    interface: set[str] = field(default_factory=set)

    def describe(self) -> str:
        """A compact 'pml=ob1 btl=tcp' summary of what was seen."""
        parts = [f"{k}={','.join(sorted(v))}" for k, v in vars(self).items() if v]
        return " ".join(parts) or "nothing"


def observe(text: str) -> Selection:
    """Collect every selection signal found in a run's stdout + stderr."""
    sel = Selection()
    sel.pml.update(_PML.findall(text))
    sel.btl.update(b for b in _BML.findall(text) if b != "self")
    for lanes in _UCX_EP.findall(text):
        tls = [lane.split("/")[0] for lane in lanes.split()]
        if "self" not in tls:  # skip the loopback endpoint to the rank itself
            sel.ucx.update(tls)
            sel.interface.update(lane.split("/", 1)[1].split(":")[0] for lane in lanes.split()
                                 if lane.startswith("tcp/"))
    chains = _OMPI_OFI.findall(text) or (_OMPI5_OFI.findall(text) if _OMPI5_DOMAIN in text
                                         else [])
    for chain in chains + _OFI_PROVIDER.findall(text):
        sel.ofi.add(chain.split(";")[0])
    sel.fabrics.update(_IMPI_FABRICS.findall(text))
    sel.interface.update(_OMPI_TCP_IF.findall(text))
    sel.interface.update(_IMPI_NIC.findall(text))
    if _MPICH_UCX in text:
        sel.netmod.add("ucx")
    if _MPICH_OFI in text:
        sel.netmod.add("ofi")
    return sel


def _ucx_problem(expected: str, seen: set[str]) -> str | None:
    allowed = UCX_CLASSES[expected]
    if not seen:
        return "UCX logged no endpoint to a peer (no 'ep_cfg' line)"
    if not seen <= allowed:
        return (f"requested UCX {expected} transports ({', '.join(sorted(allowed))}), "
                f"UCX used {', '.join(sorted(seen))}")
    return None


def problems(transport: Transport, sel: Selection) -> list[str]:
    """Mismatches between what ``transport`` expects and what was selected."""
    out = []
    for key, expected in transport.expect.items():
        seen: set[str] = getattr(sel, key)
        if key == "ucx":
            msg = _ucx_problem(expected, seen)
            if msg:
                out.append(msg)
        elif expected == "":
            if seen:
                out.append(f"requested no {key}, the run used {key}={','.join(sorted(seen))}")
        elif not seen:
            out.append(f"requested {key}={expected}, the library logged no {key} selection")
        elif seen != {expected}:
            out.append(f"requested {key}={expected}, the run selected "
                       f"{key}={','.join(sorted(seen))}")
    return out
