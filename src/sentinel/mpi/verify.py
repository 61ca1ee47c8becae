"""Prove from the library's own log which transport carried the traffic."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sentinel.mpi.transports import UCX_CLASSES, Transport

_PML = re.compile(r"selected (\w+) best priority")
_BML = re.compile(r"mca: bml: Using (\w+) btl for send to")
_UCX_EP = re.compile(r"ep_cfg\[\d+\]: tag\(([^)]*)\)")
_OMPI_OFI = re.compile(r"mtl:ofi:prov: (\S+)")
_IMPI_FABRICS = re.compile(r"MPI startup\(\): I_MPI_FABRICS=(\S+)")
_IMPI_PROVIDER = re.compile(r"MPI startup\(\): libfabric provider: (\S+)")
_MPICH_NETMOD = re.compile(r"==== (\w+) netmod Capability")
_MPICH_PROVIDER = re.compile(r"[Pp]rovider(?: name)?\s*[:=]\s*([\w;]+)")


@dataclass
class Selection:
    """What the library logged about its own choices, one set per signal."""

    pml: set[str] = field(default_factory=set)
    btl: set[str] = field(default_factory=set)
    ucx: set[str] = field(default_factory=set)
    ofi: set[str] = field(default_factory=set)
    fabrics: set[str] = field(default_factory=set)
    netmod: set[str] = field(default_factory=set)

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
    for chain in _OMPI_OFI.findall(text) + _IMPI_PROVIDER.findall(text):
        sel.ofi.add(chain.split(";")[0])
    sel.fabrics.update(_IMPI_FABRICS.findall(text))
    sel.netmod.update(m.lower() for m in _MPICH_NETMOD.findall(text))
    if "ofi" in sel.netmod:
        sel.ofi.update(c.split(";")[0] for c in _MPICH_PROVIDER.findall(text))
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
