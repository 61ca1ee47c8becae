"""Thread levels: how many OpenMP threads a rank runs, by what they fill."""

from __future__ import annotations

from sentinel.errors import SentinelError

#: OpenMP threads per rank, by what they fill: one core, a NUMA domain, a
#: socket, a whole node (the counts come from each partition's topology).
THREAD_LEVELS = ("one", "numa", "socket", "node")


def thread_counts(cores: int | None, sockets: int | None, numa: int | None,
                  where: str) -> dict[str, int]:
    """Cores (threads per rank) of each level of :data:`THREAD_LEVELS` on a node.

    ``cores``, ``sockets`` and ``numa`` are per node; one unknown is an
    error naming ``where`` and the configuration key that would give it.
    """
    missing = [key for key, value in (("num_cpus and num_cpus_per_core", cores),
                                      ("num_sockets", sockets),
                                      ("topology.numa_nodes", numa)) if not value]
    if missing or not (cores and sockets and numa):
        raise SentinelError(f"{where}: the processor's {', '.join(missing)} unknown; thread "
                            "counts come from the node's topology (set 'processor' in the "
                            "partition's config, or run reframe --detect-host-topology)")
    return {"one": 1, "numa": cores // numa, "socket": cores // sockets, "node": cores}


def same_as_larger(level: str, counts: dict[str, int]) -> str | None:
    """The next larger level with ``level``'s count (a NUMA domain that is a socket), or None."""
    larger = THREAD_LEVELS[THREAD_LEVELS.index(level) + 1:]
    return next((other for other in reversed(larger) if counts[other] == counts[level]), None)
