"""A scheduler's node states and the actions the suite may take on them.

Only ``sentinel vet`` calls these, and only when asked (``--drain``,
``--recheck``, ``--resume``). Every node the suite drains carries a reason
that starts with :data:`PREFIX`: a node drained by anyone else never does,
and is never touched.

Slurm: ``scontrol show node`` / ``update`` / ``create reservation``. PBS Pro
and OpenPBS: ``pbsnodes -o -C`` (offline with a comment) and ``pbsnodes -r``.
"""

from __future__ import annotations

import getpass
import re
import subprocess
import time
from dataclasses import dataclass

from sentinel.errors import SentinelError
from sentinel.site.slurm import node_records

#: How every reason the suite writes begins.
PREFIX = "sentinel:"
#: Slurm shows a reason with who set it and when: ``text [user@time]``.
_STAMP = " ["


@dataclass(frozen=True)
class NodeState:
    """A node as the scheduler sees it: its state flags and the reason it is drained."""

    name: str
    state: str  # Slurm's, e.g. IDLE+DRAIN, MIXED, DOWN+DRAIN
    reason: str
    #: When the reason was set (unix s, from Slurm's ``[user@time]`` stamp); None unknown.
    since: float | None = None

    @property
    def drained(self) -> bool:
        """Whether the node takes no new job (drained, draining, down or offline)."""
        flags = set(self.state.upper().replace("*", "").split("+"))
        return bool(flags & {"DRAIN", "DRAINED", "DRAINING", "DOWN", "OFFLINE", "FAIL"})

    @property
    def ours(self) -> bool:
        """Whether the suite drained it (its reason starts with :data:`PREFIX`)."""
        return self.drained and self.reason.startswith(PREFIX)


def _run(cmd: list[str], what: str) -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise SentinelError(f"{what}: {cmd[0]} is not installed here") from None
    except subprocess.TimeoutExpired:
        raise SentinelError(f"{what}: {' '.join(cmd)} did not answer in 60 s") from None
    if proc.returncode != 0:
        raise SentinelError(f"{what}: {' '.join(cmd)} failed (exit {proc.returncode}): "
                            f"{(proc.stderr or proc.stdout).strip()[-500:]}")
    return proc.stdout


def slurm_states(nodes: list[str]) -> dict[str, NodeState]:
    """Each node's state from ``scontrol -o show node``; a node Slurm does not know is an error."""
    out = _run(["scontrol", "-o", "show", "node", ",".join(nodes)], "node states")
    found = {}
    for line in out.splitlines():
        rec = node_records(line)
        if rec:
            name = rec[0]["NodeName"]
            found[name] = _state(name, rec[0], line)
    missing = sorted(set(nodes) - set(found))
    if missing:
        raise SentinelError(f"node states: Slurm does not know {', '.join(missing)}")
    return found


def _state(name: str, record: dict[str, str], line: str) -> NodeState:
    return NodeState(name, record.get("State", ""), _reason(line), _since(line))


def partition_states(partitions: set[str]) -> list[NodeState]:
    """Every node of these Slurm partitions, with its state and reason."""
    out = _run(["scontrol", "-o", "show", "node"], "node states")
    return [_state(r["NodeName"], r, line) for line in out.splitlines()
            for r in node_records(line)
            if partitions & set(r.get("Partitions", "").split(","))]


def _since(line: str) -> float | None:
    """When a reason was set: Slurm's stamp ``[user@2026-11-28T10:06:27]`` (local time)."""
    found = re.search(r" \[[^@\]]*@(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\]\s*$", line)
    if not found:
        return None
    return time.mktime(time.strptime(found.group(1), "%Y-%m-%dT%H:%M:%S"))


def _reason(line: str) -> str:
    """The reason of one ``scontrol -o show node`` line: its last field, spaces and all."""
    if " Reason=" not in line:
        return ""
    reason = line.split(" Reason=", 1)[1].strip()
    if _STAMP in reason:
        reason = reason[:reason.rindex(_STAMP)]
    return "" if reason == "(null)" else reason


def expand(hostlist: str) -> list[str]:
    """The node names of a Slurm host list (``m[1-3],c1``)."""
    return _run(["scontrol", "show", "hostnames", hostlist], f"host list {hostlist}").split()


def partitions_of(nodes: list[str]) -> set[str]:
    """The Slurm partitions ``nodes`` belong to."""
    out = _run(["scontrol", "-o", "show", "node", ",".join(nodes)], "node partitions")
    return {p for r in node_records(out) for p in r.get("Partitions", "").split(",") if p}


def idle_nodes(partitions: set[str]) -> list[str]:
    """The idle nodes (no job, not drained, not reserved) of these Slurm partitions."""
    out = _run(["scontrol", "-o", "show", "node"], "idle nodes")
    return sorted(r["NodeName"] for r in node_records(out)
                  if partitions & set(r.get("Partitions", "").split(","))
                  and r.get("State", "").split("+") == ["IDLE"])


def slurm_reservation_nodes(name: str) -> list[str]:
    """The nodes of a Slurm reservation, expanded from its host list."""
    out = _run(["scontrol", "-o", "show", "reservation", name], f"reservation {name}")
    fields = dict(f.split("=", 1) for f in out.split() if "=" in f)
    if "Nodes" not in fields:
        raise SentinelError(f"reservation {name}: scontrol shows no Nodes field: {out[:200]}")
    return expand(fields["Nodes"])


def drain_command(scheduler: str, node: str, reason: str) -> list[str]:
    """The command that drains ``node`` with ``reason`` (``slurm`` or ``pbs``)."""
    if scheduler == "pbs":
        return ["pbsnodes", "-o", "-C", reason, node]
    return ["scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}"]


def resume_command(scheduler: str, node: str) -> list[str]:
    """The command that returns ``node`` to service."""
    if scheduler == "pbs":
        return ["pbsnodes", "-r", node]
    return ["scontrol", "update", f"NodeName={node}", "State=RESUME"]


def drain(node: str, reason: str, scheduler: str = "slurm") -> None:
    """Drain ``node``: it finishes its jobs and takes no new one."""
    if not reason.startswith(PREFIX):
        raise ValueError(f"a drain reason starts with {PREFIX!r}: {reason!r}")
    _run(drain_command(scheduler, node, reason), f"drain {node}")


def resume(node: str, scheduler: str = "slurm") -> None:
    """Return ``node`` to service."""
    _run(resume_command(scheduler, node), f"resume {node}")


def reserve(name: str, nodes: list[str], minutes: int) -> None:
    """A maintenance reservation of ``nodes`` for this user, starting now.

    ``IGNORE_JOBS`` lets it take drained nodes; while it lasts only this
    user's jobs that name it run there, so a node resumed into it takes no
    one else's job before it has passed.
    """
    _run(["scontrol", "create", "reservation", f"ReservationName={name}",
          f"Nodes={','.join(nodes)}", "StartTime=now", f"Duration={minutes}",
          f"Users={getpass.getuser()}", "Flags=MAINT,IGNORE_JOBS"], f"reservation {name}")


def release(name: str) -> None:
    """Delete the reservation ``name``."""
    _run(["scontrol", "delete", f"ReservationName={name}"], f"reservation {name}")
