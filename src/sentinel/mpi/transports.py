"""The transport catalogue: named transport settings per MPI family.

A transport is pure data: the environment variables that select it, the ones
that make the library say what it selected, the path that carries traffic
between ranks of one node and the one between nodes (none for shared
memory: it cannot cross nodes), and what the library's own log must show
for the run to count as having used it. A *production pair* is what a site
runs across nodes: shared memory on the node and the network off it,
named ``<on-node>+<off-node>`` (``ob1-vader+tcp``, ``ucx-sm+rc``; Intel MPI's
``shm-ofi-<provider>``, its ``I_MPI_FABRICS=shm:ofi``). An environment
offers a pair where it offers both halves (``ob1-vader`` and ``ob1-tcp``):
the pair's features are its halves' (:attr:`Transport.features`), since a
ReFrame feature cannot hold ``+``. A transport over IP (tcp, sockets) also
knows the variables that name its network interface: an environment that
declares ``<name>-<interface>`` (``ob1-tcp-ib0``, ``ofi-tcp-br0``) gets
that transport pinned to the interface (:func:`lookup`). Environment variables (not launcher flags)
select transports so that the same setting works under ``mpirun`` and
``srun``; a flag given on the command line (for example by a site's
``launcher_options`` extra) wins over them, which verification then catches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Mapping

from sentinel.errors import SentinelError

FAMILIES = ("openmpi", "mpich", "intelmpi")

#: OFI providers a site may declare; names follow libfabric's ``fi_info -l``.
OFI_PROVIDERS = ("tcp", "udp", "verbs", "psm3", "cxi", "efa", "opx")
#: Providers over IP, whose interface a site may name (``FI_<PROV>_IFACE``).
_IP_PROVIDERS = ("tcp", "sockets")
#: libfabric's development providers (``udp`` is ofi_rxd over UDP sockets):
#: for testing code, not a fabric a site runs on. Detection does not declare
#: them (with Open MPI 4.1.4 and libfabric 1.17, MPI_Ssend over udp crashes
#: in libfabric); a site configuration still can.
DEVELOPMENT_PROVIDERS = ("udp",)
#: Intel MPI also ships ``mlx`` and a ``shm`` OFI provider, and in its
#: libfabric 1.x builds ``sockets`` (libfabric 2.0 removed it).
INTEL_OFI_PROVIDERS = OFI_PROVIDERS + ("mlx", "shm", "sockets")

#: UCX transport-layer names by class, as UCX prints them in ``ep_cfg`` lines.
#: ``rc``, ``dc`` and ``ud`` are InfiniBand/RoCE: the verbs transport and,
#: on Mellanox/NVIDIA HCAs, the accelerated one (``_mlx5``).
UCX_CLASSES: Mapping[str, frozenset[str]] = MappingProxyType({
    "sm": frozenset({"sysv", "posix", "xpmem", "cma", "knem"}),
    "tcp": frozenset({"tcp"}),
    "rc": frozenset({"rc_verbs", "rc_mlx5"}),
    "dc": frozenset({"dc_mlx5"}),
    "ud": frozenset({"ud_verbs", "ud_mlx5"}),
})
#: UCX classes that cross nodes (the others are shared memory).
UCX_NETWORK = ("tcp", "rc", "dc", "ud")

#: UCX's transports for GPU memory, by GPU runtime: copies between host and
#: device, and between devices of one node. A UCX transport used with device
#: buffers needs them beside its own (``UCX_TLS=tcp,self`` alone cannot touch
#: a device pointer); they carry no traffic between nodes.
UCX_DEVICE_TLS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "cuda": ("cuda_copy", "cuda_ipc"),
    "rocm": ("rocm_copy", "rocm_ipc"),
})
#: An interface name as a ReFrame feature can spell it (``ib0``, ``hsn0``).
_INTERFACE = re.compile(r"^[A-Za-z0-9_]+$")

_OMPI_PML_PROBE = {"OMPI_MCA_pml_base_verbose": "10"}
# UCX logs to stdout by default, from every rank and at any time (endpoints
# are created lazily): under Hydra a log line can land inside a result line.
_UCX_PROBE = {"UCX_LOG_LEVEL": "info", "UCX_LOG_FILE": "stderr"}


@dataclass(frozen=True)
class Transport:
    """One named way of carrying MPI point-to-point traffic."""

    #: MPI family: ``openmpi``, ``mpich`` or ``intelmpi``.
    family: str
    #: Name, the same everywhere (test names, features, references).
    name: str
    #: Environment variables that select the transport.
    env: Mapping[str, str]
    #: Environment variables that make the library log its selection.
    probe_env: Mapping[str, str]
    #: The path between ranks of one node, as the library's log names it
    #: (a BTL, a UCX class, ``ofi:<provider>``, ``shm``).
    on_node: str
    #: The path between nodes; ``''`` when it cannot cross nodes (shared memory).
    off_node: str
    #: What the library's log must show: keys of :class:`Selection` -> value.
    expect: Mapping[str, str] = field(default_factory=dict)
    #: Variables that take the network interface (tcp, sockets); empty when
    #: the transport has no interface to choose.
    interface_vars: tuple[str, ...] = ()
    #: Whether the library logs the interface it used (then it is verified).
    logs_interface: bool = False
    #: The interface this entry is pinned to (``''``: the library's choice).
    interface: str = ""
    #: A pair's halves: the catalogue names whose features an environment
    #: declares to offer it (``()``: the entry's own name).
    halves: tuple[str, ...] = ()
    #: The :class:`Selection` signal that names the path to each peer, for
    #: a pair (``btl``, ``ucx``); ``''`` where the log does not tell.
    path_key: str = ""

    @property
    def key(self) -> str:
        """``family/name``, unique across the catalogue."""
        return f"{self.family}/{self.name}"

    @property
    def intra_node(self) -> bool:
        """True when the transport cannot cross nodes (shared memory)."""
        return not self.off_node

    @property
    def is_pair(self) -> bool:
        """Whether on-node and off-node traffic take different paths (a production pair)."""
        return bool(self.off_node) and self.on_node != self.off_node

    @property
    def features(self) -> tuple[str, ...]:
        """The environment features that offer it: its name, or a pair's halves."""
        return self.halves or (self.name,)

    def run_env(self) -> dict[str, str]:
        """Everything to export for a run: the selection plus its probes."""
        return {**self.env, **self.probe_env}

    def selection(self, exported: Mapping[str, str]) -> str:
        """The variables that select it as ``exported`` has them: ``UCX_TLS=sm,self ...``.

        Sorted by name; one that ``exported`` lacks is ``<unset>``.
        """
        return " ".join(f"{name}={exported.get(name, '<unset>')}" for name in sorted(self.env))


def _openmpi() -> list[Transport]:
    probe = {**_OMPI_PML_PROBE, "OMPI_MCA_btl_base_verbose": "100"}
    tcp_if = ("OMPI_MCA_btl_tcp_if_include",)

    def ob1(btl: str) -> Transport:
        tcp = btl == "tcp"
        return Transport(
            "openmpi", f"ob1-{btl}", {"OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": f"self,{btl}"},
            probe, btl, btl if tcp else "", {"pml": "ob1", "btl": btl},
            tcp_if if tcp else (), tcp,
        )

    def ob1_pair(sm: str) -> Transport:
        return Transport(
            "openmpi", f"ob1-{sm}+tcp", {"OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": f"self,{sm},tcp"},
            probe, sm, "tcp", {"pml": "ob1"}, tcp_if, True,
            halves=(f"ob1-{sm}", "ob1-tcp"), path_key="btl",
        )

    def ucx(tls: str, on: str = "") -> Transport:
        # Open MPI's pml ucx only accepts Mellanox devices by default.
        select = {"OMPI_MCA_pml": "ucx", "OMPI_MCA_pml_ucx_tls": "any",
                  "OMPI_MCA_pml_ucx_devices": "any"}
        return _ucx("openmpi", tls, on or tls, select, _OMPI_PML_PROBE, {"pml": "ucx"})

    def ofi(provider: str) -> Transport:
        # the provider carries on-node traffic too (libfabric has no shm BTL beside cm)
        path = f"ofi:{provider}"
        return Transport(
            "openmpi", f"ofi-{provider}",
            {"OMPI_MCA_pml": "cm", "OMPI_MCA_mtl": "ofi",
             "OMPI_MCA_mtl_ofi_provider_include": provider},
            {**_OMPI_PML_PROBE, "OMPI_MCA_mtl_ofi_verbose": "1"},
            path, path, {"pml": "cm", "ofi": provider}, _ofi_interface(provider),
        )

    # 'vader' is Open MPI 4's shared-memory BTL; Open MPI 5 renamed it 'sm'.
    return [ob1("tcp"), ob1("vader"), ob1("sm"), ob1_pair("vader"), ob1_pair("sm"),
            *(ucx(tls) for tls in UCX_CLASSES),
            *(ucx(tls, "sm") for tls in UCX_NETWORK),
            *(ofi(p) for p in OFI_PROVIDERS)]


def _ucx(family: str, tls: str, on: str, select: Mapping[str, str],
         probe: Mapping[str, str], expect: Mapping[str, str]) -> Transport:
    """A UCX transport of ``family``: UCX class ``tls``, or the pair ``on`` + ``tls``.

    ``select``, ``probe`` and ``expect`` are the family's own: the variables
    that put it on UCX, make it log its choice, and what that log must show.
    """
    return Transport(
        family, _ucx_name(tls, on), {**select, "UCX_TLS": _ucx_tls(tls, on)},
        {**probe, **_UCX_PROBE}, on, tls if tls in UCX_NETWORK else "",
        expect if on != tls else {**expect, "ucx": tls},
        *_ucx_interface(tls), **_ucx_pair(tls, on),
    )


def _ucx_name(tls: str, on: str) -> str:
    """``ucx-tcp``, or for a pair ``ucx-sm+tcp``."""
    return f"ucx-{tls}" if on == tls else f"ucx-{on}+{tls}"


def _ucx_tls(tls: str, on: str) -> str:
    """``UCX_TLS`` of a UCX transport: its classes, then ``self``."""
    return f"{tls},self" if on == tls else f"{on},{tls},self"


def _ucx_pair(tls: str, on: str) -> dict:
    """A UCX pair's halves and the signal that names each endpoint's path."""
    return {} if on == tls else {"halves": (f"ucx-{on}", f"ucx-{tls}"), "path_key": "ucx"}


def _ucx_interface(tls: str) -> tuple[tuple[str, ...], bool]:
    """UCX over TCP takes its interface from ``UCX_NET_DEVICES`` and logs it (``tcp/ib0``)."""
    return (("UCX_NET_DEVICES",), True) if tls == "tcp" else ((), False)


def _ofi_interface(provider: str) -> tuple[str, ...]:
    """The tcp and sockets providers of libfabric take their interface from ``FI_<PROV>_IFACE``."""
    return (f"FI_{provider.upper()}_IFACE",) if provider in _IP_PROVIDERS else ()


def _mpich() -> list[Transport]:
    probe = {"MPIR_CVAR_DEBUG_SUMMARY": "1"}

    # A build with both netmods (MPICH 5 from PyPI: ch4:ucx ofi) takes the one
    # named; one with a single netmod ignores the variable, and its log tells
    # which it ran.
    def ucx(tls: str, on: str = "") -> Transport:
        return _ucx("mpich", tls, on or tls, {"MPIR_CVAR_CH4_NETMOD": "ucx"}, probe,
                    {"netmod": "ucx"})

    def ofi(provider: str) -> Transport:
        path = f"ofi:{provider}"
        return Transport(
            "mpich", f"ofi-{provider}",
            {"MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": provider},
            {**probe, "MPIR_CVAR_CH4_OFI_CAPABILITY_SETS_DEBUG": "1"}, path, path,
            {"netmod": "ofi", "ofi": provider}, _ofi_interface(provider),
        )

    return [*(ucx(tls) for tls in UCX_CLASSES),
            *(ucx(tls, "sm") for tls in UCX_NETWORK),
            *(ofi(p) for p in OFI_PROVIDERS)]


def _intelmpi() -> list[Transport]:
    probe = {"I_MPI_DEBUG": "5"}
    out = [Transport("intelmpi", "shm", {"I_MPI_FABRICS": "shm"}, probe, "shm", "",
                     {"fabrics": "shm", "ofi": ""})]
    for p in INTEL_OFI_PROVIDERS:
        sel = {"I_MPI_OFI_PROVIDER": p}
        path = f"ofi:{p}"
        # Intel MPI prints the interface each rank uses in its NIC pinning table.
        iface = _ofi_interface(p)
        out.append(Transport("intelmpi", f"ofi-{p}",
                             {"I_MPI_FABRICS": "ofi", **sel}, probe,
                             path, "" if p == "shm" else path,
                             {"fabrics": "ofi", "ofi": p}, iface, bool(iface)))
        if p != "shm":
            # The production pair, spelled without the colon of
            # I_MPI_FABRICS=shm:ofi (a name the detection and sites already
            # declare as one feature); Intel MPI's log does not name the path
            # of each peer, only the fabrics and the provider.
            out.append(Transport("intelmpi", f"shm-ofi-{p}",
                                 {"I_MPI_FABRICS": "shm:ofi", **sel}, probe, "shm", path,
                                 {"fabrics": "shm:ofi", "ofi": p}, iface, bool(iface)))
    return out


#: Every known transport, keyed ``family/name``.
CATALOGUE: Mapping[str, Transport] = MappingProxyType(
    {t.key: t for t in (*_openmpi(), *_mpich(), *_intelmpi())}
)


def on_interface(transport: Transport, interface: str) -> Transport:
    """``transport`` pinned to the network ``interface`` (``ob1-tcp`` -> ``ob1-tcp-ib0``)."""
    if not transport.interface_vars:
        raise SentinelError(f"transport {transport.key} has no network interface to choose")
    if not _INTERFACE.match(interface):
        raise SentinelError(f"interface {interface!r} of {transport.key}: letters, digits "
                            "and '_' only (it is part of a ReFrame feature name)")
    expect = {**transport.expect, "interface": interface} if transport.logs_interface \
        else transport.expect
    halves = tuple(f"{h}-{interface}" if lookup(transport.family, h).interface_vars else h
                   for h in transport.halves)
    return replace(transport, name=f"{transport.name}-{interface}",
                   env={**transport.env, **dict.fromkeys(transport.interface_vars, interface)},
                   expect=expect, interface_vars=(), logs_interface=False, interface=interface,
                   halves=halves)


def lookup(family: str, name: str) -> Transport:
    """The catalogue entry for ``family``/``name``, or one pinned to an interface.

    ``ob1-tcp-ib0`` is ``ob1-tcp`` over ``ib0``. An unknown name is an error
    naming the options.
    """
    entry = CATALOGUE.get(f"{family}/{name}")
    if entry is not None:
        return entry
    for base in CATALOGUE.values():
        if (base.family == family and base.interface_vars
                and name.startswith(f"{base.name}-")):
            return on_interface(base, name[len(base.name) + 1:])
    known = sorted(t.name for t in CATALOGUE.values() if t.family == family)
    if not known:
        raise SentinelError(
            f"unknown MPI family {family!r} (known: {', '.join(FAMILIES)})"
        )
    over_ip = sorted(t.name for t in CATALOGUE.values()
                     if t.family == family and t.interface_vars)
    raise SentinelError(
        f"unknown transport {name!r} for {family} (known: {', '.join(known)}; "
        f"over an interface: <name>-<interface> for {', '.join(over_ip)})"
    )


def current_name(name: str) -> str:
    """A transport's name in the current version of its MPI.

    Open MPI 5 renamed the shared-memory BTL ``vader`` to ``sm`` (the same
    component: Open MPI 5.0's release notes): Open MPI 4's ``ob1-vader``
    and 5's ``ob1-sm`` are one transport when versions are compared.
    """
    return name.replace("ob1-vader", "ob1-sm")


def resolve(key: str) -> Transport:
    """The transport of a ``family/name`` key (:func:`lookup`)."""
    family, _, name = key.partition("/")
    return lookup(family, name)


def with_device_memory(env: Mapping[str, str], runtime: str) -> dict[str, str]:
    """``env`` of a transport for GPU buffers of ``runtime`` (``cuda``, ``rocm``).

    Where ``UCX_TLS`` selects the transport, UCX's transports for that
    runtime's memory join it; other transports are left as they are.
    """
    if runtime not in UCX_DEVICE_TLS:
        raise SentinelError(f"unknown GPU runtime {runtime!r} (known: "
                            f"{', '.join(UCX_DEVICE_TLS)})")
    out = dict(env)
    if "UCX_TLS" in out:
        out["UCX_TLS"] = ",".join([out["UCX_TLS"], *UCX_DEVICE_TLS[runtime]])
    return out


def declared(features: set[str]) -> list[Transport]:
    """The transports an environment with ``features`` offers, in key order.

    The features name the family (``openmpi``) and each transport
    (``ob1-vader``, ``ob1-tcp-ib0``); other features are not transports. A
    production pair is offered where both its halves are (``ob1-vader`` and
    ``ob1-tcp-ib0`` offer ``ob1-vader+tcp-ib0``).
    """
    out = {}
    for family in set(FAMILIES) & features:
        for feature in features:
            try:
                t = lookup(family, feature)
            except SentinelError:
                continue
            out[t.key] = t
        for pair in _pairs(family, {t.name for t in out.values()}):
            out[pair.key] = pair
    return [out[k] for k in sorted(out)]


def pairs_over(t: Transport, offered: list[Transport]) -> list[Transport]:
    """The production pairs among ``offered`` whose on-node path is shared-memory ``t``'s."""
    if not t.intra_node:
        return []
    return [p for p in offered if p.family == t.family and p.is_pair and p.on_node == t.on_node]


def _pairs(family: str, offered: set[str]) -> list[Transport]:
    """The production pairs of ``family`` whose halves are both among ``offered``."""
    out = []
    for t in CATALOGUE.values():
        if t.family != family or not t.halves or t.name in offered:
            continue
        on, off = t.halves
        if on not in offered:
            continue
        if off in offered:
            out.append(t)
        out += [on_interface(t, name[len(off) + 1:]) for name in sorted(offered)
                if t.interface_vars and name.startswith(f"{off}-")]
    return out


def names(family: str) -> list[str]:
    """Transport names of one family, in catalogue order."""
    return [t.name for t in CATALOGUE.values() if t.family == family]
