"""What carries each transport's one-sided traffic, and how the library's log proves it.

One-sided communication (``MPI_Put``, ``MPI_Get``, ``MPI_Accumulate``) runs
on other components than two-sided traffic, and regresses on its own: an
RDMA path that silently falls back to an emulation over messages keeps
every ping-pong fast. For each transport of the catalogue this module
writes down the one-sided path expected for a window over the
application's memory (``MPI_Win_create``), the variables that select it,
those that make the library log it, and what that log must show:

* **Open MPI** chooses a one-sided component (``osc``) of its own,
  independent of the two-sided pml: ``osc ucx`` for the UCX transports;
  ``osc rdma`` over the shared-memory BTL (its single copy) for ob1 on a
  node; over TCP, which has no RDMA, ``osc pt2pt`` (Open MPI 4: one-sided
  emulated over two-sided messages) or ``osc rdma`` over the tcp BTL's
  put and get (Open MPI 5). The component is selected here
  (``OMPI_MCA_osc``: ``ucx``, or every component but ``ucx`` so that the
  BTLs decide) and proven from ``osc_base_verbose`` (Open MPI 4:
  ``<component> component destroying window``; 5: ``select: component
  <component> selected`` and, for ``osc rdma``, the BTL of each peer and
  whether its put and get are the BTL's own (``rdma``) or emulated over its
  messages (``eager``)) and, for ``osc ucx``, from UCX's log of its own
  endpoints (lanes ``rma(...)``: UCX's native RMA; ``rma_am(...)``:
  emulated over active messages).
* **MPICH** (and Intel MPI, built on it) sends one-sided operations to a
  rank of the same node through its shared-memory layer, which emulates
  them with active messages for memory it did not allocate; to another
  node through the netmod: UCX's RMA lanes (proven across nodes from UCX's
  endpoint log) or libfabric's RMA (proven from the netmod's capability
  set, ``MPIDI_OFI_ENABLE_RMA``, which ``MPIR_CVAR_CH4_OFI_ENABLE_RMA=0``
  turns off: then every put and get is an active message).

A run whose log shows another component, or an emulated path where the
transport's native one is expected, fails naming what it used. Where a
transport's one-sided path is an emulation by design (TCP, UDP, Intel MPI's
tcp provider), that is what is expected, and said.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping

from sentinel.mpi.placement import Levels
from sentinel.mpi.transports import Transport
from sentinel.mpi.verify import summary

#: UCX classes whose RMA is native (put and get by the hardware or by a
#: single copy between processes); the others emulate it with active messages.
UCX_NATIVE_RMA = ("sm", "rc", "dc")
#: Intel MPI's OFI providers whose capability set has RMA off (Intel MPI
#: 2021.18's tcp: ``MPIDI_OFI_ENABLE_RMA: 0``, measured here): put and get
#: go over active messages by design.
INTEL_AM_PROVIDERS = ("tcp",)
#: Open MPI's one-sided components (the pml's names overlap: ``ucx``).
OSC_COMPONENTS = frozenset({"rdma", "sm", "pt2pt", "ucx", "monitoring"})

_OSC_VERBOSE = {"OMPI_MCA_osc_base_verbose": "100"}
_UCX_LOG = {"UCX_LOG_LEVEL": "info", "UCX_LOG_FILE": "stderr"}
_OFI_SETS = {"MPIR_CVAR_CH4_OFI_CAPABILITY_SETS_DEBUG": "1"}


@dataclass(frozen=True)
class OneSidedPath:
    """The one-sided path of one transport, and how its log proves it."""

    #: The transport's catalogue key (``openmpi/ob1-vader``).
    transport: str
    #: The path in words, for messages and the manual.
    path: str
    #: What proves it: ``osc`` (Open MPI's component), ``ucx`` (UCX's RMA
    #: lanes across nodes), ``ofi`` (the OFI netmod's capability set) or
    #: ``""`` (nothing the library logs beyond the transport itself).
    signal: str
    #: Open MPI's one-sided components that may carry it.
    components: tuple[str, ...] = ()
    #: Whether put and get must take the native path (True), take an
    #: emulation by design (False), or are not judged (None).
    native: bool | None = None
    #: Variables that select the path.
    env: Mapping[str, str] = field(default_factory=dict)
    #: Variables that make the library log it.
    probe_env: Mapping[str, str] = field(default_factory=dict)

    def run_env(self) -> dict[str, str]:
        """What a one-sided run over the transport exports besides the transport's own."""
        return {**self.env, **self.probe_env}


def expected(t: Transport) -> OneSidedPath:
    """The one-sided path of transport ``t`` (every catalogue entry has one)."""
    if t.family == "openmpi":
        return _openmpi(t)
    if t.family == "mpich":
        return _mpich(t)
    return _intelmpi(t)


def _openmpi(t: Transport) -> OneSidedPath:
    pml = t.expect.get("pml", "")
    # every component but ucx (Debian's openmpi-mca-params.conf also
    # excludes pt2pt, Open MPI 4's only one-sided path over TCP): the BTLs decide
    btls = {"OMPI_MCA_osc": "^ucx"}
    if pml == "ucx":
        native = t.off_node in UCX_NATIVE_RMA if t.off_node else t.on_node in UCX_NATIVE_RMA
        lanes = "UCX's native RMA" if native else "RMA emulated by UCX over active messages"
        return OneSidedPath(t.key, f"osc ucx ({lanes})", "osc", ("ucx",), native,
                            {"OMPI_MCA_osc": "ucx"}, {**_OSC_VERBOSE, **_UCX_LOG})
    if pml == "ob1" and not t.off_node:
        return OneSidedPath(t.key, f"osc rdma over the {t.on_node} BTL's single copy", "osc",
                            ("rdma",), True, btls, _OSC_VERBOSE)
    if pml == "ob1" and not t.is_pair:
        return OneSidedPath(
            t.key, "osc pt2pt (Open MPI 4: emulated over two-sided messages) or osc rdma "
            "over the tcp BTL's put and get (Open MPI 5): TCP has no RDMA", "osc",
            ("pt2pt", "rdma"), False, btls, _OSC_VERBOSE)
    # a production pair's window holds peers of both levels; cm/OFI carries
    # two-sided traffic only, one-sided goes over the BTLs
    return OneSidedPath(
        t.key, "osc rdma over the node's BTLs (osc pt2pt where no BTL reaches every peer "
        "with RDMA, Open MPI 4)", "osc", ("rdma", "pt2pt"), None, btls, _OSC_VERBOSE)


def _mpich(t: Transport) -> OneSidedPath:
    on_node = "on a node, MPICH's shared-memory active messages"
    if t.expect.get("netmod") == "ofi":
        return OneSidedPath(t.key, f"libfabric's RMA across nodes ({on_node})", "ofi",
                            native=True, probe_env=_OFI_SETS)
    off = t.off_node or t.on_node
    native = off in UCX_NATIVE_RMA
    lanes = "UCX's native RMA" if native else "RMA emulated by UCX over active messages"
    return OneSidedPath(t.key, f"{lanes} ({off}) across nodes ({on_node})", "ucx",
                        native=native, probe_env=_UCX_LOG)


def _intelmpi(t: Transport) -> OneSidedPath:
    provider = t.expect.get("ofi", "")
    if not provider:
        return OneSidedPath(t.key, "Intel MPI's shared-memory active messages "
                            "(I_MPI_FABRICS=shm; its log names no one-sided path)", "")
    native = provider not in INTEL_AM_PROVIDERS
    how = "libfabric's RMA" if native else "active messages (RMA off in Intel MPI's capability "\
        f"set for {provider})"
    return OneSidedPath(t.key, f"{how} over ofi:{provider}", "ofi", native=native,
                        probe_env=_OFI_SETS)


# Open MPI 4: "[vm:05127] rdma component destroying window with id 3"
_OSC4 = re.compile(r"\b(\w+) component destroying window with id")
# Open MPI 5: "select: component rdma selected" (the pml's lines have the same form)
_OSC5 = re.compile(r"select: component (\w+) selected")
# Open MPI 5's osc rdma: "rank 0 found btl for peer 1 (sm, 1, rdma)"
_RDMA_PEER = re.compile(r"rank (\d+) found btl for peer (\d+) \((\w+), \d+, (\w+)\)")
_RDMA_AM = "falling back on active-message BTLs"
# UCX endpoint configurations (1.13: "ep_cfg[1]: tag(...) rma(...) am(...)";
# 1.15+: "ucp_context_1 intra-node cfg#0 rma(...) amo(...)")
_UCX_EP = re.compile(r"(?:ep_cfg\[\d+\]:|(?:self|intra-node|inter-node) cfg#\d+)\s+(.*)$",
                     re.MULTILINE)
_UCX_LANES = re.compile(r"\b(rma|rma_am|tag)\(([^)]*)\)")
_OFI_RMA = re.compile(r"MPIDI_OFI_ENABLE_RMA: (\d)")
_OFI_ATOMICS = re.compile(r"MPIDI_OFI_ENABLE_ATOMICS: (\d)")


@dataclass
class OneSidedSelection:
    """What a run's log shows of its one-sided path."""

    #: Open MPI's one-sided components that served a window (osc ucx: from UCX's log).
    osc: set[str] = field(default_factory=set)
    #: osc rdma's BTL to each other peer and the source of its put and get.
    rdma_btls: set[tuple[str, str]] = field(default_factory=set)
    #: osc rdma found no BTL with RDMA and atomics for every peer.
    rdma_am: bool = False
    #: UCX's RMA lanes of osc ucx's own endpoints (no tag lane): native, emulated.
    osc_ucx_rma: set[str] = field(default_factory=set)
    osc_ucx_rma_am: set[str] = field(default_factory=set)
    #: UCX's RMA lanes of the endpoints two-sided traffic uses (MPICH's).
    ucx_rma: set[str] = field(default_factory=set)
    ucx_rma_am: set[str] = field(default_factory=set)
    #: The OFI netmod's capability set: RMA and atomics on (1) or off (0).
    ofi_rma: set[str] = field(default_factory=set)
    ofi_atomics: set[str] = field(default_factory=set)

    def describe(self) -> str:
        """A compact summary of what was seen (``osc=rdma rdma_btls=sm:rdma rdma_am``)."""
        return summary(vars(self))


def _transports_of(lanes: str) -> set[str]:
    """UCX transport names of a lane list (``sysv/memory cma/memory`` -> sysv, cma)."""
    return {lane.split("/")[0] for lane in lanes.split()}


def observe(text: str) -> OneSidedSelection:
    """Collect every one-sided signal of a run's stdout and stderr."""
    sel = OneSidedSelection()
    sel.osc.update(_OSC4.findall(text))
    sel.osc.update(c for c in _OSC5.findall(text) if c in OSC_COMPONENTS - {"ucx"})
    sel.rdma_btls.update((btl, source) for rank, peer, btl, source in _RDMA_PEER.findall(text)
                         if rank != peer and btl != "self")
    sel.rdma_am = _RDMA_AM in text
    for config in _UCX_EP.findall(text):
        lanes = dict(_UCX_LANES.findall(config))
        if "self/" in config:  # a rank's endpoint to itself
            continue
        native, emulated = _transports_of(lanes.get("rma", "")), \
            _transports_of(lanes.get("rma_am", ""))
        if "tag" in lanes:
            sel.ucx_rma |= native
            sel.ucx_rma_am |= emulated
        elif native or emulated:  # osc ucx's own worker: RMA and atomics lanes only
            sel.osc.add("ucx")
            sel.osc_ucx_rma |= native
            sel.osc_ucx_rma_am |= emulated
    sel.ofi_rma.update(_OFI_RMA.findall(text))
    sel.ofi_atomics.update(_OFI_ATOMICS.findall(text))
    return sel


def problems(path: OneSidedPath, sel: OneSidedSelection, levels: Levels) -> list[str]:
    """How the run's one-sided path differs from ``path``; empty when it is proven.

    ``levels`` says where the ranks ran: MPICH's UCX lanes carry one-sided
    traffic between nodes only.
    """
    if path.signal == "osc":
        return _osc_problems(path, sel)
    if path.signal == "ofi":
        return _ofi_problems(path, sel)
    if path.signal == "ucx" and levels.spans:
        return _lane_problems(path, sel.ucx_rma, sel.ucx_rma_am, f"between {levels.spans}")
    return []


def _osc_problems(path: OneSidedPath, sel: OneSidedSelection) -> list[str]:
    if not sel.osc:
        return [f"expected {path.path}, the library logged no one-sided component "
                "(osc_base_verbose; for osc ucx, UCX's endpoint log)"]
    other = sorted(sel.osc - set(path.components))
    if other:
        used = ", ".join(f"osc {c}" + _how(c, sel) for c in other)
        return [f"expected {path.path}, the run used {used}"]
    out: list[str] = []
    eager = sorted(btl for btl, source in sel.rdma_btls if source != "rdma")
    if path.native and eager:
        out.append(f"expected {path.path}, osc rdma emulated put and get over the "
                   f"{', '.join(eager)} BTL's messages (its 'eager' path: the BTL offered no "
                   "RDMA)")
    if "ucx" in path.components:
        out += _lane_problems(path, sel.osc_ucx_rma, sel.osc_ucx_rma_am, "in osc ucx")
    return out


def _how(component: str, sel: OneSidedSelection) -> str:
    """What the log says of how an unexpected component carried the traffic."""
    if component == "pt2pt":
        return " (one-sided emulated over two-sided messages)"
    if component == "rdma" and sel.rdma_am:
        btls = ", ".join(sorted(f"{b} ({s})" for b, s in sel.rdma_btls))
        return f" over the active-message BTLs{f': {btls}' if btls else ''} (no BTL with RDMA " \
            "and atomics for every peer)"
    return ""


def _lane_problems(path: OneSidedPath, native: set[str], emulated: set[str],
                   where: str) -> list[str]:
    if not native and not emulated:
        return [f"expected {path.path}, UCX logged no RMA lane {where} (UCX_LOG_LEVEL=info)"]
    if path.native and emulated and not native:
        return [f"expected {path.path}, UCX emulated RMA over active messages {where} "
                f"(rma_am over {', '.join(sorted(emulated))}): its native RMA fell back"]
    return []


def _ofi_problems(path: OneSidedPath, sel: OneSidedSelection) -> list[str]:
    if not sel.ofi_rma:
        return [f"expected {path.path}, the library logged no OFI capability set "
                "(MPIR_CVAR_CH4_OFI_CAPABILITY_SETS_DEBUG=1)"]
    if path.native and "0" in sel.ofi_rma:
        return [f"expected {path.path}, the OFI netmod ran with RMA off "
                "(MPIDI_OFI_ENABLE_RMA: 0): every put and get went over active messages"]
    return []

