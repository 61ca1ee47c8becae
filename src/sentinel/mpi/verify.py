"""Prove from the library's own log which transport carried the traffic."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sentinel.mpi.placement import Levels
from sentinel.mpi.transports import UCX_CLASSES, UCX_DEVICE_TLS, Transport

#: UCX's GPU-memory transports: lanes for device buffers, not a path between ranks.
_UCX_DEVICE = frozenset(tl for tls in UCX_DEVICE_TLS.values() for tl in tls)

_PML = re.compile(r"selected (\w+) best priority")
_BML = re.compile(r"mca: bml: Using (\w+) btl for send to")
# "[m1:06541] mca: bml: Using tcp btl for send to [[63987,32565],2] on node m2":
# the sender's host (opal_output's prefix) and the peer's (from the runtime)
_BML_PEER = re.compile(r"^\[([^\]:\s]+):\d+\] mca: bml: Using (\w+) btl for send to "
                       r"\S+ on node (\S+)", re.MULTILINE)
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
    #: UCX's GPU-memory transports in an endpoint (device buffers).
    ucx_device: set[str] = field(default_factory=set)
    #: BTLs Open MPI used to a peer on the sender's node, and to a peer on another.
    btl_on_node: set[str] = field(default_factory=set)
    btl_off_node: set[str] = field(default_factory=set)

    def describe(self) -> str:
        """A compact 'pml=ob1 btl=tcp' summary of what was seen."""
        return summary(vars(self))


def summary(signals: dict[str, object]) -> str:
    """A compact summary of the signals seen; ``nothing`` when none was.

    ``key=a,b`` for a set of names (tuples as ``x:y``), ``key`` alone for a
    flag that is set.
    """
    parts = []
    for key, value in signals.items():
        if isinstance(value, bool):
            parts += [key] if value else []
        elif value:
            parts.append(f"{key}=" + ",".join(sorted(
                ":".join(v) if isinstance(v, tuple) else str(v) for v in value)))
    return " ".join(parts) or "nothing"


def observe(text: str) -> Selection:
    """Collect every selection signal found in a run's stdout + stderr."""
    sel = Selection()
    sel.pml.update(_PML.findall(text))
    sel.btl.update(b for b in _BML.findall(text) if b != "self")
    for sender, btl, peer in _BML_PEER.findall(text):
        if btl != "self":
            same = _short(sender) == _short(peer)
            (sel.btl_on_node if same else sel.btl_off_node).add(btl)
    for lanes in _UCX_EP.findall(text):
        tls = [lane.split("/")[0] for lane in lanes.split()]
        if "self" not in tls:  # skip the loopback endpoint to the rank itself
            sel.ucx.update(t for t in tls if t not in _UCX_DEVICE)
            sel.ucx_device.update(t for t in tls if t in _UCX_DEVICE)
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


def _short(host: str) -> str:
    """A host name without its domain (the runtime and gethostname may differ there)."""
    return host.split(".", 1)[0]


def _ucx_problem(expected: str, seen: set[str]) -> str | None:
    allowed = UCX_CLASSES[expected]
    if not seen:
        return "UCX logged no endpoint to a peer (no 'ep_cfg' line)"
    if not seen <= allowed:
        return (f"requested UCX {expected} transports ({', '.join(sorted(allowed))}), "
                f"UCX used {', '.join(sorted(seen))}")
    return None


def problems(transport: Transport, sel: Selection, levels: Levels | None = None) -> list[str]:
    """Mismatches between what ``transport`` expects and what was selected.

    ``levels`` (where the ranks ran) adds the checks of each level: a
    transport that cannot cross nodes whose ranks spanned nodes, and for a
    production pair, the path of on-node and of off-node traffic.
    """
    out = _family_problems(transport, sel)
    if levels is not None and transport.intra_node and levels.spans:
        out.append(f"{transport.name} carries traffic within a node only (shared memory), "
                   f"but the ranks ran on {levels.spans}")
    if transport.path_key:
        out += _pair_problems(transport, sel, levels)
    return out


#: The words for each level in messages.
_ON, _OFF = "on-node", "off-node"


def _pair_problems(t: Transport, sel: Selection, levels: Levels | None) -> list[str]:
    """The path of each level of a production pair, as the library's log shows it."""
    if t.path_key == "btl":
        if not sel.btl:
            return [f"requested btl={t.on_node} on the node and btl={t.off_node} off it, "
                    "the library logged no btl selection"]
        if sel.btl_on_node or sel.btl_off_node:
            seen = {_ON: sel.btl_on_node, _OFF: sel.btl_off_node}
            out = [f"requested {level} traffic over btl={want}, the run used "
                   f"btl={','.join(sorted(seen[level] - {want}))}"
                   for level, want in ((_ON, t.on_node), (_OFF, t.off_node))
                   if seen[level] - {want}]
        else:  # a log without the senders' hosts: no level is known
            seen = {_ON: sel.btl, _OFF: sel.btl}
            stray = sel.btl - {t.on_node, t.off_node}
            out = [f"requested btl={t.on_node} on the node and btl={t.off_node} off it, the "
                   f"run used btl={','.join(sorted(stray))}"] if stray else []
        used = {_ON: t.on_node in seen[_ON], _OFF: t.off_node in seen[_OFF]}
    else:
        allowed = UCX_CLASSES[t.on_node] | UCX_CLASSES[t.off_node]
        if not sel.ucx:
            return ["UCX logged no endpoint to a peer (no 'ep_cfg' line)"]
        stray = sel.ucx - allowed
        out = [f"requested UCX {t.on_node} on the node and {t.off_node} off it "
               f"({', '.join(sorted(allowed))}), UCX used {', '.join(sorted(stray))}"] \
            if stray else []
        # UCX 1.13 does not name an endpoint's peer: a level is proven by its class
        used = {_ON: bool(sel.ucx & UCX_CLASSES[t.on_node]),
                _OFF: bool(sel.ucx & UCX_CLASSES[t.off_node])}
    if levels is not None:
        if levels.shares and not used[_ON]:
            out.append(f"ranks shared a node ({levels.shares}), but no on-node traffic went "
                       f"over {t.on_node}")
        if levels.spans and not used[_OFF]:
            out.append(f"the ranks ran on {levels.spans}, but no traffic between them went "
                       f"over {t.off_node}")
    return out


def _family_problems(transport: Transport, sel: Selection) -> list[str]:
    """What the library as a whole selected (pml, netmod, fabrics, provider, interface)."""
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
