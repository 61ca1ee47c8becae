"""The node beneath the MPI: ``src/bench/host``'s figures as every family's values.

Every job of the suite's own benchmarks runs the host probe before its
launches (:mod:`sentinel.rfm.base`); its ``SENTINEL_HOST`` line gives
``host_roundtrip`` and ``host_copy_bw`` (declared once, in
:data:`sentinel.analysis.variables.HOST_VARIABLES`), each the median over the
probe's batches with its distribution-free 95 % interval. A probe that did
not run or was cut short leaves both unresolved, saying why; a probe given one
CPU measures the copy alone.
"""

from __future__ import annotations

from sentinel.analysis.baseline import worse_edge
from sentinel.analysis.variables import HIGHER, HOST_VARIABLES, CheckSpec, Values
from sentinel.errors import SentinelError
from sentinel.parsers.sentinel_output import parse, require_complete

#: The job's file holding the probe's output (and its errors), and the one of
#: the probe run again after the launches (the node's state at their end).
HOST_FILE = "rfm_host.txt"
HOST_AFTER_FILE = "rfm_host_after.txt"

#: Why a job that gave the probe one CPU (one rank per node, one CPU per rank)
#: has no round trip; its copy bandwidth is still measured.
ONE_CPU = ("not measured: the job gave the host probe one CPU, and a round trip between "
           "cores needs two")

#: How a test case that failed for its node's sake says so (the report groups by it).
SLOWED = "the node slowed as a whole (its host probe, before any MPI)"


def host_values(spec: CheckSpec, text: str | None, where: str) -> Values:
    """``host_roundtrip`` and ``host_copy_bw`` from the probe's output ``text`` (of ``where``)."""
    out = Values(spec)
    try:
        if text is None:
            raise SentinelError(f"the job wrote no {where}")
        records = parse(text, "host")
        require_complete(records, where)
        lines = records.of("HOST")
        if len(lines) != 1:
            raise SentinelError(f"{where} has {len(lines)} SENTINEL_HOST lines, not one")
        line = lines[0]
        if line.fields.get("roundtrip") == "one_cpu":
            out.unresolve("host_roundtrip", ONE_CPU)
        else:
            out.put("host_roundtrip", line.number("roundtrip_ns"),
                    (line.number("roundtrip_lo"), line.number("roundtrip_hi")))
        out.put("host_copy_bw", line.number("copy_gbs"),
                (line.number("copy_lo"), line.number("copy_hi")))
    except SentinelError as err:
        detail = (text or "").strip().splitlines()
        why = f"host probe: {err}" + (f" ({detail[-1][:200]})" if detail else "")
        for var in HOST_VARIABLES:
            out.unresolve(var.template, why)
    return out


def waited(text: str) -> str:
    """What a retry's probe said of its wait for a quiet node ('' when it did not wait)."""
    try:
        lines = parse(text, "host").of("HOST")
    except SentinelError:
        return ""
    if len(lines) != 1 or "waited_s" not in lines[0].fields:
        return ""
    line = lines[0]
    state = ("quiet at the end" if line.fields.get("quiet") == "1"
             else "still outside its bands at the end")
    return (f"the probe waited {line.number('waited_s'):.0f} s over {line.integer('tries')} "
            f"measurement(s) for the node to be within its bands: {state}")


def slowed(values: dict[str, tuple[float, str]], entry: dict[str, list[str]]) -> list[str]:
    """Each host figure of ``values`` outside its reference band (``entry``), worse.

    ``entry`` is the test's reference entry, name -> [reference, lower,
    upper, unit] (:attr:`~sentinel.rfm.references.PartitionReferences.reference_entry`).
    """
    found = []
    for var in HOST_VARIABLES:
        name = var.template
        if name not in values or name not in entry:
            continue
        value, unit = values[name]
        edges = worse_edge(entry[name], var.better)
        if edges is None:
            continue
        ref, edge = edges
        if (value < edge) if var.better == HIGHER else (value > edge):
            found.append(f"{name} {value:.4g} {unit}, {100 * abs(value / ref - 1):.1f} % worse "
                         f"than its reference {ref:.4g} {unit}")
    return found
