"""The point-to-point check's variants by name: what the Jacobi model depends on.

``checks/pt2pt.py`` holds ``Pt2ptCheck``. Its parameters are
:class:`~sentinel.rfm.base.TransportMappingTest`'s (``transport`` and
``mapping``; it adds none, which ``tests/unit/test_checks_offline.py``
holds), so the names of its variants follow from them here, without the
check file: the Jacobi model depends on them by name
(:func:`jacobi_pt2pt`), and an acceptance runs the ping-pongs its Jacobi
series take their model from (:func:`feeds_jacobi`).
"""

from sentinel.analysis.jacobi import SPEC as jacobi_spec
from sentinel.mpi.transports import Transport, lookup
from sentinel.rfm.base import TransportMappingTest
from sentinel.rfm.variants import variant_name

#: The name under which checks/pt2pt.py registers the point-to-point check.
PT2PT_CHECK = "Pt2ptCheck"
#: The reference index's head that names a Jacobi series' transport and mapping.
_SERIES_KEYS = ("$partition", "$environ", "transport_name", "mapping")


def pt2pt_check_name(transport: str, mapping: str) -> str:
    """The unique name of the ``Pt2ptCheck`` variant for ``transport`` and ``mapping``."""
    return variant_name(TransportMappingTest, PT2PT_CHECK, transport=transport, mapping=mapping)


def jacobi_pt2pt(transport: Transport, key: str, mapping: str) -> dict[str, str]:
    """The ``Pt2ptCheck`` variants giving a Jacobi series its B and T_L, by level.

    ``on``: the halo exchange between ranks of one node, ``off``: between
    nodes. A production pair takes each from the half that carries it (the
    off-node half between two nodes, mapping ``node``); any other transport
    from its own ping-pong at the series' mapping.
    """
    if not transport.halves:
        name = pt2pt_check_name(key, mapping)
        return {"on": name, "off": name}
    on, off = (f"{transport.family}/{half}" for half in transport.halves)
    return {"on": pt2pt_check_name(on, mapping), "off": pt2pt_check_name(off, "node")}


def feeds_jacobi(test, doc: dict, transport: str) -> bool:
    """Whether a Jacobi series the reference file ``doc`` requires takes B and T_L from here.

    From ``test``'s variant over ``transport`` (a name of its family).
    """
    jacobi = doc.get(jacobi_spec.checks[0]) or {}
    if type(test).__name__ != PT2PT_CHECK or tuple(jacobi.get("$index", [])[:4]) != \
            jacobi_spec.index[:4] or jacobi_spec.index[:4] != _SERIES_KEYS:
        return False
    family = test.transport_info.family
    mine = pt2pt_check_name(f"{family}/{transport}", test.mapping)
    here = {str(k): v for k, v in jacobi.items()}.get(test.current_partition.fullname) or {}
    series = {str(k): v for k, v in here.items()}.get(test.current_environ.name) or {}
    return any(mine in jacobi_pt2pt(lookup(family, str(name)), f"{family}/{name}",
                                    str(mapping)).values()
               for name, mappings in series.items() for mapping in (mappings or {}))
