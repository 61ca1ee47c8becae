"""Thread levels: how many OpenMP threads a rank runs, by what they fill."""

from __future__ import annotations

#: OpenMP threads per rank, by what they fill: one core, a NUMA domain, a
#: socket, a whole node (the counts come from each partition's topology).
THREAD_LEVELS = ("one", "numa", "socket", "node")
#: What fills a partition's processor description on a site.
TOPOLOGY_COMMAND = ("reframe --detect-host-topology on a compute node, or sentinel init, "
                    "writes it")


def missing_keys(cores: int | None, sockets: int | None, numa: int | None) -> dict[str, str]:
    """Per thread level whose count is unknown, the processor key that would give it."""
    missing = {}
    if not cores:
        missing.update({level: "num_cpus and num_cpus_per_core"
                        for level in ("numa", "socket", "node")})
    if not numa:
        missing.setdefault("numa", "topology.numa_nodes")
    if not sockets:
        missing.setdefault("socket", "num_sockets")
    return missing


def thread_counts(cores: int | None, sockets: int | None,
                  numa: int | None) -> dict[str, int | None]:
    """Cores (threads per rank) of each level of :data:`THREAD_LEVELS` on a node.

    ``cores``, ``sockets`` and ``numa`` are per node; a level that one
    unknown leaves without a count is None (:func:`missing_keys` says which).
    """
    return {"one": 1, "numa": cores // numa if cores and numa else None,
            "socket": cores // sockets if cores and sockets else None, "node": cores or None}


def same_as_larger(level: str, counts: dict[str, int | None]) -> str | None:
    """The next larger level with ``level``'s count (a NUMA domain that is a socket), or None."""
    larger = THREAD_LEVELS[THREAD_LEVELS.index(level) + 1:]
    return next((other for other in reversed(larger)
                 if counts[other] is not None and counts[other] == counts[level]), None)


def topology_gaps(partition: str, cores: int | None, sockets: int | None,
                  numa: int | None) -> str:
    """A sentence for a partition whose processor lacks a key a thread level needs, or ""."""
    missing = missing_keys(cores, sockets, numa)
    if not missing:
        return ""
    by_key: dict[str, list[str]] = {}
    for level, key in missing.items():
        by_key.setdefault(key, []).append(f"threads={level}")
    what = "; ".join(f"processor {key} is not set: the {', '.join(levels)} test cases are "
                     "skipped" for key, levels in by_key.items())
    return f"partition {partition}: {what} ({TOPOLOGY_COMMAND})"


def processor_gaps(partition: str, processor: dict) -> str:
    """:func:`topology_gaps` of a partition's ``processor`` as its configuration writes it."""
    cpus, per_core = processor.get("num_cpus"), processor.get("num_cpus_per_core") or 1
    numa = len((processor.get("topology") or {}).get("numa_nodes") or [])
    return topology_gaps(partition, cpus // per_core if cpus else None,
                         processor.get("num_sockets"), numa or None)
