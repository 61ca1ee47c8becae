"""What a result depended on, as stored with each test case, and what changed in it.

Every test case of the suite records its ``provenance`` (a loggable check
variable: ReFrame 4.10 writes it as a field of the test case in the JSON run
report, and the results database stores that report whole): the MPI library's
version and file, UCX and libfabric versions, the compiler, the Spack spec of a
Spack build, the variables that select the transport, the kernel, the nodes
and the CPU model (:attr:`sentinel.rfm.provenance.Provenance.provenance`).
:func:`diff` says what changed between two sessions, for the sessions on
either side of a change point: ``ucx: 1.13.1 -> 1.15.0``.
"""

from __future__ import annotations

from collections.abc import Mapping

from sentinel.errors import SentinelError

#: The keys in the order a diff lists them; other keys follow by name.
ORDER = ("mpi", "mpi_library", "ucx", "libfabric", "compiler", "spack_spec", "transport_env",
         "kernel", "nodes", "cpu")

#: What ReFrame writes for a loggable variable a test case does not have.
UNDEFINED = "<undefined>"


def of_testcase(tc: Mapping) -> dict[str, str]:
    """The provenance of a run report's (or stored session's) test case.

    Empty for a test case without one (a session of an older suite, a build
    or a packed job). A provenance that is not an object of strings is an
    error naming the test case.
    """
    value = tc.get("provenance")
    if value is None or value == UNDEFINED:
        return {}
    name = tc.get("display_name") or tc.get("name") or "a test case"
    if not isinstance(value, dict):
        raise SentinelError(f"test case {name}: 'provenance' must be an object, "
                            f"got {type(value).__name__} {str(value)[:60]!r}")
    bad = [k for k, v in value.items() if not isinstance(v, str)]
    if bad:
        raise SentinelError(f"test case {name}: 'provenance' values must be strings; "
                            f"{', '.join(bad[:5])} is not")
    return dict(value)


def _key_order(key: str) -> tuple[int, str]:
    return (ORDER.index(key), "") if key in ORDER else (len(ORDER), key)


def diff(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """What changed from ``before`` to ``after``, one line per key; [] when nothing did.

    ``ucx: 1.13.1 -> 1.15.0``; a key on one side only is ``added (...)`` or
    ``removed (was ...)``.
    """
    lines = []
    for key in sorted(before.keys() | after.keys(), key=_key_order):
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        if old is None:
            lines.append(f"{key}: added ({new})")
        elif new is None:
            lines.append(f"{key}: removed (was {old})")
        else:
            lines.append(f"{key}: {old} -> {new}")
    return lines
