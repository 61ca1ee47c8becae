"""The transport catalogue: named transport settings per MPI family.

A transport is pure data: the environment variables that select it, the ones
that make the library say what it selected, whether it can only carry
traffic inside one node, and what the library's own log must show for the
run to count as having used it. A transport over IP (tcp, sockets) also
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
_UCX_NETWORK = ("tcp", "rc", "dc", "ud")
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
    #: True when the transport cannot cross nodes (shared memory).
    intra_node: bool
    #: What the library's log must show: keys of :class:`Selection` -> value.
    expect: Mapping[str, str] = field(default_factory=dict)
    #: Variables that take the network interface (tcp, sockets); empty when
    #: the transport has no interface to choose.
    interface_vars: tuple[str, ...] = ()
    #: Whether the library logs the interface it used (then it is verified).
    logs_interface: bool = False
    #: The interface this entry is pinned to (``''``: the library's choice).
    interface: str = ""

    @property
    def key(self) -> str:
        """``family/name``, unique across the catalogue."""
        return f"{self.family}/{self.name}"

    def run_env(self) -> dict[str, str]:
        """Everything to export for a run: the selection plus its probes."""
        return {**self.env, **self.probe_env}

    def selection(self, exported: Mapping[str, str]) -> str:
        """The variables that select it as ``exported`` has them: ``UCX_TLS=sm,self ...``.

        Sorted by name; one that ``exported`` lacks is ``<unset>``.
        """
        return " ".join(f"{name}={exported.get(name, '<unset>')}" for name in sorted(self.env))


def _openmpi() -> list[Transport]:
    def ob1(btl: str, intra: bool) -> Transport:
        tcp = btl == "tcp"
        return Transport(
            "openmpi", f"ob1-{btl}",
            {"OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": f"self,{btl}"},
            {**_OMPI_PML_PROBE, "OMPI_MCA_btl_base_verbose": "100"},
            intra, {"pml": "ob1", "btl": btl},
            ("OMPI_MCA_btl_tcp_if_include",) if tcp else (), tcp,
        )

    def ucx(tls: str) -> Transport:
        # Open MPI's pml ucx only accepts Mellanox devices by default.
        return Transport(
            "openmpi", f"ucx-{tls}",
            {"OMPI_MCA_pml": "ucx", "OMPI_MCA_pml_ucx_tls": "any",
             "OMPI_MCA_pml_ucx_devices": "any", "UCX_TLS": f"{tls},self"},
            {**_OMPI_PML_PROBE, **_UCX_PROBE},
            tls not in _UCX_NETWORK, {"pml": "ucx", "ucx": tls}, *_ucx_interface(tls),
        )

    def ofi(provider: str) -> Transport:
        return Transport(
            "openmpi", f"ofi-{provider}",
            {"OMPI_MCA_pml": "cm", "OMPI_MCA_mtl": "ofi",
             "OMPI_MCA_mtl_ofi_provider_include": provider},
            {**_OMPI_PML_PROBE, "OMPI_MCA_mtl_ofi_verbose": "1"},
            False, {"pml": "cm", "ofi": provider}, _ofi_interface(provider),
        )

    # 'vader' is Open MPI 4's shared-memory BTL; Open MPI 5 renamed it 'sm'.
    return [ob1("tcp", False), ob1("vader", True), ob1("sm", True),
            *(ucx(tls) for tls in UCX_CLASSES),
            *(ofi(p) for p in OFI_PROVIDERS)]


def _ucx_interface(tls: str) -> tuple[tuple[str, ...], bool]:
    """UCX over TCP takes its interface from ``UCX_NET_DEVICES`` and logs it (``tcp/ib0``)."""
    return (("UCX_NET_DEVICES",), True) if tls == "tcp" else ((), False)


def _ofi_interface(provider: str) -> tuple[str, ...]:
    """The tcp and sockets providers of libfabric take their interface from ``FI_<PROV>_IFACE``."""
    return (f"FI_{provider.upper()}_IFACE",) if provider in _IP_PROVIDERS else ()


def _mpich() -> list[Transport]:
    probe = {"MPIR_CVAR_DEBUG_SUMMARY": "1"}

    def ucx(tls: str) -> Transport:
        return Transport(
            "mpich", f"ucx-{tls}", {"UCX_TLS": f"{tls},self"},
            {**probe, **_UCX_PROBE}, tls not in _UCX_NETWORK,
            {"netmod": "ucx", "ucx": tls}, *_ucx_interface(tls),
        )

    def ofi(provider: str) -> Transport:
        return Transport(
            "mpich", f"ofi-{provider}",
            {"MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": provider},
            {**probe, "MPIR_CVAR_CH4_OFI_CAPABILITY_SETS_DEBUG": "1"}, False,
            {"netmod": "ofi", "ofi": provider}, _ofi_interface(provider),
        )

    return [*(ucx(tls) for tls in UCX_CLASSES),
            *(ofi(p) for p in OFI_PROVIDERS)]


def _intelmpi() -> list[Transport]:
    probe = {"I_MPI_DEBUG": "5"}
    out = [Transport("intelmpi", "shm", {"I_MPI_FABRICS": "shm"}, probe, True,
                     {"fabrics": "shm", "ofi": ""})]
    for p in INTEL_OFI_PROVIDERS:
        sel = {"I_MPI_OFI_PROVIDER": p}
        # Intel MPI prints the interface each rank uses in its NIC pinning table.
        iface = _ofi_interface(p)
        out.append(Transport("intelmpi", f"ofi-{p}",
                             {"I_MPI_FABRICS": "ofi", **sel}, probe,
                             p == "shm", {"fabrics": "ofi", "ofi": p}, iface, bool(iface)))
        if p != "shm":
            # Spelled without the colon of I_MPI_FABRICS=shm:ofi so that the
            # name is a valid ReFrame feature and test-name component.
            out.append(Transport("intelmpi", f"shm-ofi-{p}",
                                 {"I_MPI_FABRICS": "shm:ofi", **sel}, probe,
                                 False, {"fabrics": "shm:ofi", "ofi": p}, iface, bool(iface)))
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
    return replace(transport, name=f"{transport.name}-{interface}",
                   env={**transport.env, **dict.fromkeys(transport.interface_vars, interface)},
                   expect=expect, interface_vars=(), logs_interface=False, interface=interface)


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


def resolve(key: str) -> Transport:
    """The transport of a ``family/name`` key (:func:`lookup`)."""
    family, _, name = key.partition("/")
    return lookup(family, name)


def declared(features: set[str]) -> list[Transport]:
    """The transports an environment with ``features`` offers, in key order.

    The features name the family (``openmpi``) and each transport
    (``ob1-vader``, ``ob1-tcp-ib0``); other features are not transports.
    """
    out = {}
    for family in set(FAMILIES) & features:
        for feature in features:
            try:
                t = lookup(family, feature)
            except SentinelError:
                continue
            out[t.key] = t
    return [out[k] for k in sorted(out)]


def names(family: str) -> list[str]:
    """Transport names of one family, in catalogue order."""
    return [t.name for t in CATALOGUE.values() if t.family == family]
