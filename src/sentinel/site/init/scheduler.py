"""What a site's scheduler says it has: partitions (queues), their nodes and node shapes.

Slurm is read in its parsable one-line forms (``scontrol -o show nodes``,
``scontrol -o show partitions``, ``scontrol show config``), which every
Slurm since 2.x prints alike; PBS Pro / OpenPBS in its JSON forms
(``pbsnodes -a -F json``, ``qstat -Q -f -F json``). The commands' outputs are
kept as they came (:class:`Answer`), so that ``sentinel init --from DIR``
decides from the same text as the run that collected it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass, field

from sentinel.errors import SentinelError
from sentinel.site.slurm import job_cpus, members, node_records, scontrol_fields

#: The commands each scheduler answers, in the order they are asked.
COMMANDS = {
    "slurm": (("scontrol", "-o", "show", "nodes"), ("scontrol", "-o", "show", "partitions"),
              ("scontrol", "show", "config")),
    "pbs": (("pbsnodes", "-a", "-F", "json"), ("qstat", "-Q", "-f", "-F", "json")),
}


class SchedulerError(SentinelError):
    """The scheduler is not there, or its answer cannot be read; the message says which."""


@dataclass(frozen=True)
class NodeType:
    """The shape of a node as the scheduler declares it (0 sockets: not declared)."""

    cpus: int
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    gpus: int = 0
    features: tuple[str, ...] = ()

    def describe(self) -> str:
        """``24 CPUs (2 x 12 cores x 1 thread(s)), 2 GPU(s)``: the CPUs are those jobs get."""
        gpus = f", {self.gpus} GPU(s)" if self.gpus else ""
        if not self.sockets:  # PBS declares CPUs only: the discovery job tells the rest
            return f"{self.cpus} CPU(s){gpus}"
        node = self.sockets * self.cores_per_socket * self.threads_per_core
        of = f" for jobs of {node}" if node > self.cpus else ""
        return (f"{self.cpus} CPU(s){of} ({self.sockets} x {self.cores_per_socket} cores x "
                f"{self.threads_per_core} thread(s)){gpus}")


@dataclass
class Partition:
    """A Slurm partition or PBS queue: its node types, each with its node names."""

    name: str
    types: dict[NodeType, list[str]] = field(default_factory=dict)
    usable: bool = True

    @property
    def nodes(self) -> int:
        """All nodes of the partition."""
        return sum(len(v) for v in self.types.values())


@dataclass
class Answer:
    """A scheduler's kind and its raw answers, by command line."""

    kind: str
    outputs: dict[str, str]

    def to_json(self) -> dict:
        """For ``DIR/scheduler.json``."""
        return {"kind": self.kind, "outputs": self.outputs}

    @classmethod
    def from_json(cls, data: dict, where: str) -> Answer:
        """Read back :meth:`to_json`; SchedulerError naming ``where`` when it is not that."""
        if not isinstance(data, dict) or data.get("kind") not in COMMANDS or not isinstance(
                data.get("outputs"), dict):
            raise SchedulerError(f"{where}: not a scheduler answer written by sentinel init "
                                 f"(expected 'kind' one of {', '.join(COMMANDS)} and "
                                 "'outputs')")
        return cls(data["kind"], {str(k): str(v) for k, v in data["outputs"].items()})


def ask(kind: str | None = None) -> Answer:
    """Ask this host's scheduler (``kind``, or the first whose commands are on PATH)."""
    kinds = [kind] if kind else list(COMMANDS)
    for k in kinds:
        missing = [c[0] for c in COMMANDS[k] if shutil.which(c[0]) is None]
        if missing:
            continue
        outputs = {}
        for cmd in COMMANDS[k]:
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            except subprocess.TimeoutExpired:
                raise SchedulerError(f"{' '.join(cmd)}: no answer within 60 s") from None
            if p.returncode != 0:
                raise SchedulerError(f"{' '.join(cmd)} failed (exit {p.returncode}): "
                                     f"{(p.stderr or p.stdout).strip()[-300:]}")
            outputs[" ".join(cmd)] = p.stdout
        return Answer(k, outputs)
    wanted = "; ".join(f"{k}: {', '.join(sorted({c[0] for c in COMMANDS[k]}))}" for k in kinds)
    raise SchedulerError(f"no scheduler answers on this host (looked for {wanted} on PATH); "
                         "run sentinel init on a login node, or --from DIR with the outputs "
                         "collected there")


def _int(value: str | int | None, default: int = 0) -> int:
    try:
        return int(value) if value not in (None, "") else default
    except (TypeError, ValueError):
        return default


def _gres_gpus(gres: str) -> int:
    """GPUs in a Slurm ``Gres`` (``gpu:a100:4(S:0-1),shard:8``)."""
    return sum(_int(m.group(1), 1) for m in re.finditer(r"gpu(?::[^:,(]+)?:(\d+)", gres))


def _features(value: str) -> tuple[str, ...]:
    return tuple(sorted(f for f in value.split(",") if f and f != "(null)"))


#: Node states in which a node runs no job.
_DEAD = re.compile(r"DOWN|DRAIN|FAIL|NOT_RESPONDING|FUTURE|UNKNOWN|POWERED_DOWN|maintenance",
                   re.I)


def slurm_partitions(answer: Answer) -> list[Partition]:
    """Partitions and node types from ``scontrol -o show nodes/partitions``."""
    nodes = answer.outputs.get("scontrol -o show nodes", "")
    parts = answer.outputs.get("scontrol -o show partitions", "")
    order = [scontrol_fields(line).get("PartitionName") for line in parts.splitlines()]
    up = {f["PartitionName"]: f.get("State", "UP") == "UP"
          for f in map(scontrol_fields, parts.splitlines()) if "PartitionName" in f}
    alive = [f for f in node_records(nodes) if not _DEAD.search(f.get("State", ""))]
    found: dict[str, Partition] = {}
    for name, records in members(alive).items():
        found[name] = Partition(name, usable=up.get(name, True))
        for f in records:
            shape = NodeType(job_cpus(f), _int(f.get("Sockets"), 1),
                             _int(f.get("CoresPerSocket"), 1), _int(f.get("ThreadsPerCore"), 1),
                             _gres_gpus(f.get("Gres", "")),
                             _features(f.get("AvailableFeatures", "")))
            found[name].types.setdefault(shape, []).append(f["NodeName"])
    return sorted(found.values(), key=lambda p: order.index(p.name) if p.name in order else 99)


def slurm_accounting(answer: Answer) -> bool:
    """Whether Slurm keeps accounting (``sacct``), which ReFrame's ``slurm`` scheduler needs."""
    m = re.search(r"^AccountingStorageType\s*=\s*(\S+)", answer.outputs.get(
        "scontrol show config", ""), re.M)
    return bool(m) and m.group(1) != "accounting_storage/none"


def _json(answer: Answer, command: str) -> dict:
    try:
        data = json.loads(answer.outputs.get(command, "") or "{}")
    except ValueError as err:
        raise SchedulerError(f"{command}: not JSON ({err})") from None
    if not isinstance(data, dict):
        raise SchedulerError(f"{command}: not a JSON object")
    return data


def pbs_partitions(answer: Answer) -> list[Partition]:
    """Queues and node types from ``pbsnodes -a -F json`` and ``qstat -Q -f -F json``.

    A node belongs to the queues its ``queue`` attribute or its
    ``resources_available.Qlist`` names; a node naming neither, to every
    execution queue that has no nodes of its own.
    """
    queues = {name: q for name, q in _json(answer, "qstat -Q -f -F json").get(
        "Queue", {}).items() if q.get("queue_type", "Execution") == "Execution"}
    found = {name: Partition(name, usable=str(q.get("enabled", "True")) == "True" and str(
        q.get("started", "True")) == "True") for name, q in queues.items()}
    loose: list[tuple[NodeType, str]] = []
    for name, node in _json(answer, "pbsnodes -a -F json").get("nodes", {}).items():
        if _DEAD.search(str(node.get("state", ""))) or "offline" in str(node.get("state")):
            continue
        res = node.get("resources_available", {})
        cpus = _int(res.get("ncpus"), _int(node.get("pcpus"), 1))
        shape = NodeType(cpus, 0, 0, 0, _int(res.get("ngpus")), ())
        member = [q for q in [node.get("queue"), *str(res.get("Qlist", "")).split(",")] if q]
        if not member:
            loose.append((shape, name))
        for q in member:
            if q in found:
                found[q].types.setdefault(shape, []).append(name)
    for part in found.values():
        if not part.types:
            for shape, name in loose:
                part.types.setdefault(shape, []).append(name)
    return [p for p in found.values() if p.types]


def partitions(answer: Answer) -> list[Partition]:
    """The partitions (queues) of either scheduler, with at least one node that runs jobs."""
    return slurm_partitions(answer) if answer.kind == "slurm" else pbs_partitions(answer)
