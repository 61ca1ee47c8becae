"""The transport catalogue: named transport settings per MPI family.

A transport is pure data: the environment variables that select it, the ones
that make the library say what it selected, whether it can only carry
traffic inside one node, and what the library's own log must show for the
run to count as having used it. Environment variables (not launcher flags)
select transports so that the same setting works under ``mpirun`` and
``srun``; a flag given on the command line (for example by a site's
``launcher_options`` extra) wins over them, which verification then catches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from sentinel.errors import SentinelError

FAMILIES = ("openmpi", "mpich", "intelmpi")

#: OFI providers a site may declare; names follow libfabric's ``fi_info -l``.
OFI_PROVIDERS = ("tcp", "udp", "verbs", "psm3", "cxi", "efa", "opx")
#: libfabric's development providers (``udp`` is ofi_rxd over UDP sockets):
#: for testing code, not a fabric a site runs on. Detection does not declare
#: them (with Open MPI 4.1.4 and libfabric 1.17, MPI_Ssend over udp crashes
#: in libfabric); a site configuration still can.
DEVELOPMENT_PROVIDERS = ("udp",)
#: Intel MPI also ships ``mlx`` and a ``shm`` OFI provider.
INTEL_OFI_PROVIDERS = OFI_PROVIDERS + ("mlx", "shm")

#: UCX transport-layer names by class, as UCX prints them in ``ep_cfg`` lines.
UCX_CLASSES: Mapping[str, frozenset[str]] = MappingProxyType({
    "sm": frozenset({"sysv", "posix", "xpmem", "cma", "knem"}),
    "tcp": frozenset({"tcp"}),
})

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

    @property
    def key(self) -> str:
        """``family/name``, unique across the catalogue."""
        return f"{self.family}/{self.name}"

    def run_env(self) -> dict[str, str]:
        """Everything to export for a run: the selection plus its probes."""
        return {**self.env, **self.probe_env}


def _openmpi() -> list[Transport]:
    def ob1(btl: str, intra: bool) -> Transport:
        return Transport(
            "openmpi", f"ob1-{btl}",
            {"OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": f"self,{btl}"},
            {**_OMPI_PML_PROBE, "OMPI_MCA_btl_base_verbose": "100"},
            intra, {"pml": "ob1", "btl": btl},
        )

    def ucx(tls: str, intra: bool) -> Transport:
        # Open MPI's pml ucx only accepts Mellanox devices by default.
        return Transport(
            "openmpi", f"ucx-{tls}",
            {"OMPI_MCA_pml": "ucx", "OMPI_MCA_pml_ucx_tls": "any",
             "OMPI_MCA_pml_ucx_devices": "any", "UCX_TLS": f"{tls},self"},
            {**_OMPI_PML_PROBE, **_UCX_PROBE},
            intra, {"pml": "ucx", "ucx": tls},
        )

    def ofi(provider: str) -> Transport:
        return Transport(
            "openmpi", f"ofi-{provider}",
            {"OMPI_MCA_pml": "cm", "OMPI_MCA_mtl": "ofi",
             "OMPI_MCA_mtl_ofi_provider_include": provider},
            {**_OMPI_PML_PROBE, "OMPI_MCA_mtl_ofi_verbose": "1"},
            False, {"pml": "cm", "ofi": provider},
        )

    # 'vader' is Open MPI 4's shared-memory BTL; Open MPI 5 renamed it 'sm'.
    return [ob1("tcp", False), ob1("vader", True), ob1("sm", True),
            ucx("sm", True), ucx("tcp", False),
            *(ofi(p) for p in OFI_PROVIDERS)]


def _mpich() -> list[Transport]:
    probe = {"MPIR_CVAR_DEBUG_SUMMARY": "1"}

    def ucx(tls: str, intra: bool) -> Transport:
        return Transport(
            "mpich", f"ucx-{tls}", {"UCX_TLS": f"{tls},self"},
            {**probe, **_UCX_PROBE}, intra,
            {"netmod": "ucx", "ucx": tls},
        )

    def ofi(provider: str) -> Transport:
        return Transport(
            "mpich", f"ofi-{provider}",
            {"MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": provider},
            {**probe, "MPIR_CVAR_CH4_OFI_CAPABILITY_SETS_DEBUG": "1"}, False,
            {"netmod": "ofi", "ofi": provider},
        )

    return [ucx("sm", True), ucx("tcp", False),
            *(ofi(p) for p in OFI_PROVIDERS)]


def _intelmpi() -> list[Transport]:
    probe = {"I_MPI_DEBUG": "5"}
    out = [Transport("intelmpi", "shm", {"I_MPI_FABRICS": "shm"}, probe, True,
                     {"fabrics": "shm", "ofi": ""})]
    for p in INTEL_OFI_PROVIDERS:
        sel = {"I_MPI_OFI_PROVIDER": p}
        out.append(Transport("intelmpi", f"ofi-{p}",
                             {"I_MPI_FABRICS": "ofi", **sel}, probe,
                             p == "shm", {"fabrics": "ofi", "ofi": p}))
        if p != "shm":
            # Spelled without the colon of I_MPI_FABRICS=shm:ofi so that the
            # name is a valid ReFrame feature and test-name component.
            out.append(Transport("intelmpi", f"shm-ofi-{p}",
                                 {"I_MPI_FABRICS": "shm:ofi", **sel}, probe,
                                 False, {"fabrics": "shm:ofi", "ofi": p}))
    return out


#: Every known transport, keyed ``family/name``.
CATALOGUE: Mapping[str, Transport] = MappingProxyType(
    {t.key: t for t in (*_openmpi(), *_mpich(), *_intelmpi())}
)


def lookup(family: str, name: str) -> Transport:
    """The catalogue entry for ``family``/``name``; an error names the options."""
    try:
        return CATALOGUE[f"{family}/{name}"]
    except KeyError:
        known = sorted(t.name for t in CATALOGUE.values() if t.family == family)
        if not known:
            raise SentinelError(
                f"unknown MPI family {family!r} (known: {', '.join(FAMILIES)})"
            ) from None
        raise SentinelError(
            f"unknown transport {name!r} for {family} (known: {', '.join(known)})"
        ) from None


def names(family: str) -> list[str]:
    """Transport names of one family, in catalogue order."""
    return [t.name for t in CATALOGUE.values() if t.family == family]
