"""A real Slurm on this one machine: munge, slurmctld and three slurmd.

Partitions:

* ``one``: the host itself as node ``c1`` (all its CPUs);
* ``two``: fake nodes ``n1`` and ``n2`` (one CPU each), two slurmd on this
  host with their own ports, so jobs and the ``node`` mapping span two nodes;
* ``vet`` (with ``--vet N``): nodes ``v1`` ... ``vN``, each with all the host's
  CPUs like ``c1``, for the per-node vetting of the node-local checks
  (``--distribute``). A node's tasks get the variables of the file
  ``DIR/etc/node-env/<node>`` (``NAME=value`` lines), through Slurm's
  ``TaskProlog``: how a test gives one node a fault of its own, as a drifted
  node image would (the nodes run at once on the same CPUs: functional
  tests, not performance);
* ``net`` (with ``--net N``, N >= 2): nodes ``m1`` ... ``mN``, each slurmd in a
  network namespace of its own with its own link and address
  (:mod:`tests.cluster.netns`), so traffic between them crosses per-node
  links that a test can slow one at a time. Each gives jobs one of the
  host's CPUs, in turn: two neighbours never share one, four nodes do
  (oversubscribed: functional tests, not performance). The daemons then
  reach the controller at the host's bridge address (``SlurmctldAddr``).
  With a ``shape`` (:class:`tests.cluster.topology.NodeShape`, ``--sockets
  2``), each of them is instead a site's node in miniature: all the host's
  CPUs as two sockets, a NUMA domain each, declared to Slurm and seen by
  slurmd (so Slurm binds tasks per socket) and by every MPI of its tasks
  through hwloc's XML import; the nodes then share the host's CPUs.

A fake node declares all the host's CPUs and reserves all but one for the
system (``CpuSpecList``): ``n1`` gives jobs CPU 0 and ``n2`` CPU 1. Declared
with ``CPUs=1``, both would bind their task to CPU 0 and the two "nodes"
would share one core.

Everything (keys, sockets, state, spool, logs, pid files) lives under one
directory; nothing touches /etc or systemd. Usage::

    python -m tests.cluster.slurm up DIR     # prints the SLURM_CONF to export
    python -m tests.cluster.slurm up DIR --net 4   # also the namespaced partition
    python -m tests.cluster.slurm up DIR --net 4 --sockets 2   # nodes of two sockets
    python -m tests.cluster.slurm up DIR --vet 2   # also the vetting partition
    python -m tests.cluster.slurm down DIR   # stops the daemons by their PID files

Both are idempotent: ``up`` stops an earlier instance in DIR first.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.cluster import netns
from tests.cluster.topology import NodeShape, TopologyError

NODES = ("c1", "n1", "n2")
PORTS = {"ctld": 16817, "c1": 16818, "n1": 17001, "n2": 17002}
#: The slurmd port of vetting node vK is VET_PORT + K.
VET_PORT = 17200
#: The slurmd port of namespaced node mK is NET_PORT + K.
NET_PORT = 17100


class ClusterError(RuntimeError):
    """The cluster could not be brought up; the message says which daemon and why."""


def _fake_cpus(cpus: int, own: int) -> str:
    """The CPU part of a fake node's line: job CPU ``own``, the others reserved."""
    if cpus < 2:
        return "CPUs=1 State=UNKNOWN"
    spec = ",".join(str(c) for c in range(cpus) if c != own)
    return (f"CPUs={cpus} CoresPerSocket={cpus} ThreadsPerCore=1 CpuSpecList={spec} "
            "State=UNKNOWN")


def net_nodes(count: int) -> list[str]:
    """Names of the namespaced nodes."""
    return [node.hostname for node in netns.nodes(count)]


def _net_conf(host: str, cpus: int, count: int, shape: NodeShape | None = None) -> str:
    if not count:
        return ""
    # One job CPU per node, alternating (m1 CPU 0, m2 CPU 1, m3 CPU 0, ...):
    # neighbours never share a core, and busy-polling ranks of a two-node
    # job run at this host's speed. A shaped node has all of them.
    lines = [f"NodeName=m{node.index} NodeHostname={host} NodeAddr={node.address} "
             f"Port={NET_PORT + node.index} "
             + (f"{shape.slurm()} State=UNKNOWN" if shape else
                _fake_cpus(cpus, (node.index - 1) % cpus))
             for node in netns.nodes(count)]
    names = ",".join(net_nodes(count))
    return "\n".join([*lines, f"PartitionName=net Nodes={names} MaxTime=60 State=UP", ""])


def vet_nodes(count: int) -> list[str]:
    """Names of the vetting partition's nodes."""
    return [f"v{k}" for k in range(1, count + 1)]


def _vet_conf(root: Path, host: str, cpus: int, count: int) -> str:
    if not count:
        return ""
    lines = [f"NodeName={name} NodeHostname={host} NodeAddr=127.0.0.1 Port={VET_PORT + k} "
             f"CPUs={cpus} CoresPerSocket={cpus} ThreadsPerCore=1 State=UNKNOWN"
             for k, name in enumerate(vet_nodes(count), start=1)]
    return "\n".join([*lines, f"PartitionName=vet Nodes={','.join(vet_nodes(count))} "
                       "MaxTime=60 State=UP", ""])


#: Prints ``export NAME=value`` for each line of the node's file (Slurm's
#: TaskProlog protocol): the variables reach that node's tasks only.
TASK_PROLOG = """#!/bin/sh
env_file="{root}/etc/node-env/$SLURMD_NODENAME"
[ -r "$env_file" ] || exit 0
while IFS= read -r line; do
    case "$line" in *=*) echo "export $line" ;; esac
done < "$env_file"
"""


def _conf(root: Path, cpus: int, net: int = 0, vet: int = 0,
          shape: NodeShape | None = None) -> str:
    host = socket.gethostname()
    # Namespaced nodes cannot reach the host's loopback: every daemon and
    # client then talks to the controller at its bridge address.
    ctld_addr = f"SlurmctldAddr={netns.HOST_ADDRESS}\n" if net else ""
    return f"""\
ClusterName=sentinel
SlurmctldHost={host}(127.0.0.1)
{ctld_addr}SlurmctldPort={PORTS['ctld']}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={root}/munge/socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
# 1, as at a site: a node an admin set DOWN stays down until resumed
ReturnToService=1
SchedulerType=sched/backfill
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmdPidFile={root}/run/slurmd-%n.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd-%n.log
TmpFS={root}/tmp/%n
SlurmdTimeout=30
TaskProlog={root}/etc/task-prolog
InactiveLimit=0
KillWait=5
MinJobAge=60
NodeName=c1 NodeHostname={host} NodeAddr=127.0.0.1 Port={PORTS['c1']} CPUs={cpus} \
CoresPerSocket={cpus} ThreadsPerCore=1 State=UNKNOWN
NodeName=n1 NodeHostname={host} NodeAddr=127.0.0.1 Port={PORTS['n1']} {_fake_cpus(cpus, 0)}
NodeName=n2 NodeHostname={host} NodeAddr=127.0.0.1 Port={PORTS['n2']} {_fake_cpus(cpus, 1)}
PartitionName=one Nodes=c1 Default=YES MaxTime=60 State=UP
PartitionName=two Nodes=n1,n2 MaxTime=60 State=UP
""" + _net_conf(host, cpus, net, shape) + _vet_conf(root, host, cpus, vet)


def _need(program: str) -> str:
    path = shutil.which(program) or shutil.which(program, path="/usr/sbin:/sbin")
    if path is None:
        raise ClusterError(f"{program} is not installed (apt install slurm-wlm munge)")
    return path


def _start(name: str, argv: list[str], root: Path, env: dict[str, str]) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    if proc.returncode != 0:
        log = root / "log" / f"{name}.log"
        tail = log.read_text(errors="replace").strip().splitlines()[-5:] if log.exists() else []
        raise ClusterError(f"{name} did not start (exit {proc.returncode}): "
                           f"{(proc.stderr or proc.stdout).strip()} {' | '.join(tail)}")


def wait(what: str, ready: Callable[[], bool], timeout: float = 30.0) -> None:
    """Poll ``ready`` until it holds; ClusterError naming ``what`` after ``timeout`` s."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if ready():
            return
        time.sleep(0.2)
    raise ClusterError(f"{what} not ready after {timeout:.0f} s")


def nodes_idle(env: dict[str, str], names: tuple[str, ...] | list[str] = NODES) -> bool:
    """Whether sinfo shows every node of ``names`` idle."""
    proc = subprocess.run([_need("sinfo"), "-h", "-N", "-o", "%N %t"], capture_output=True,
                          text=True, env=env, timeout=30)
    states = dict(line.split() for line in proc.stdout.splitlines() if line.strip())
    return proc.returncode == 0 and all(states.get(n) == "idle" for n in names)


def up(root: Path, net: int = 0, vet: int = 0, shape: NodeShape | None = None) -> Path:
    """Start munge, slurmctld and the slurmd under ``root``; return slurm.conf.

    ``net`` namespaced nodes (:mod:`tests.cluster.netns`) join as partition
    ``net``, ``vet`` whole-host nodes as partition ``vet``; 0 leaves them out.
    With ``shape``, each namespaced node has that processor shape
    (``DIR/etc/node-topology.xml``, seen by its slurmd and its tasks).
    """
    root = root.resolve()
    down(root)
    if net:
        netns.up(net)
        (root / "run").mkdir(parents=True, exist_ok=True)
        (root / "run" / "net").write_text(str(net))
    everyone = (*NODES, *net_nodes(net), *vet_nodes(vet))
    for sub in ("munge", "state", "run", "log", *(f"spool/{n}" for n in everyone),
                *(f"tmp/{n}" for n in everyone), "etc/node-env"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(root / "munge", 0o755)
    key = root / "munge" / "munge.key"
    if not key.exists():
        subprocess.run([_need("mungekey"), "--create", "--keyfile", str(key)], check=True,
                       capture_output=True, timeout=30)
    os.chmod(key, 0o400)
    conf = root / "etc" / "slurm.conf"
    conf.write_text(_conf(root, os.cpu_count() or 1, net, vet, shape))
    shaped = _shape_nodes(root, net_nodes(net), shape) if shape else {}
    prolog = root / "etc" / "task-prolog"
    prolog.write_text(TASK_PROLOG.format(root=root))
    prolog.chmod(0o755)
    env = {**os.environ, "SLURM_CONF": str(conf)}
    _start("munged", [_need("munged"), "--force", f"--key-file={key}",
                      f"--socket={root}/munge/socket", f"--pid-file={root}/run/munged.pid",
                      f"--log-file={root}/log/munged.log",
                      f"--seed-file={root}/munge/seed"], root, env)
    _start("slurmctld", [_need("slurmctld"), "-f", str(conf)], root, env)
    for node in (*NODES, *vet_nodes(vet)):
        _start(f"slurmd-{node}", [_need("slurmd"), "-f", str(conf), "-N", node], root, env)
    hosts = netns.hosts_file(root / "etc", net)
    for name, node in zip(net_nodes(net), netns.nodes(net)):
        boot_id = netns.boot_id_file(root / "etc" / "boot-id", node)
        _start(f"slurmd-{name}", [*node.as_host(boot_id, hosts), _need("slurmd"), "-f", str(conf),
                                  "-N", name],
               root, {**env, **shaped})
    wait(f"Slurm nodes {', '.join(everyone)} (sinfo: idle)",
         lambda: nodes_idle(env, everyone), timeout=60 if net else 30)
    return conf


def topology_file(root: Path) -> Path:
    """Where a shaped cluster keeps its nodes' hwloc XML."""
    return root / "etc" / "node-topology.xml"


def _shape_nodes(root: Path, names: list[str], shape: NodeShape) -> dict[str, str]:
    """The nodes' topology file, their tasks' hwloc variables; the slurmd's variables."""
    env = NodeShape.hwloc_env(shape.write_xml(topology_file(root)))
    for name in names:
        (root / "etc" / "node-env" / name).write_text(
            "".join(f"{k}={v}\n" for k, v in env.items()))
    return env


def _pid_files(root: Path) -> dict[str, Path]:
    """Every daemon's PID file, slurmd first and munged last (the order to stop them)."""
    run = root / "run"
    slurmd = sorted(run.glob("slurmd-*.pid"), reverse=True)
    return {**{p.stem: p for p in slurmd}, "slurmctld": run / "slurmctld.pid",
            "munged": run / "munged.pid"}


def down(root: Path) -> list[str]:
    """Stop every daemon that a PID file under ``root`` names; return what was stopped.

    All are signalled at once and waited for together: each takes about 2 s
    to exit. The namespaced nodes' network goes too.
    """
    root = root.resolve()
    pids = {}
    for name, path in _pid_files(root).items():
        try:
            pids[name] = int(path.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        finally:
            path.unlink(missing_ok=True)
    signalled = _terminate(pids.values())
    stopped = [f"{name} ({pid})" for name, pid in pids.items() if pid in signalled]
    marker = root / "run" / "net"
    if marker.exists():
        netns.down(int(marker.read_text()))
        marker.unlink()
    return stopped


def _terminate(pids, timeout: float = 10.0) -> set[int]:
    """SIGTERM to each of ``pids``, SIGKILL to those alive after ``timeout``; those signalled."""
    alive = set()
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
            alive.add(pid)
        except ProcessLookupError:
            pass
    signalled = set(alive)
    end = time.monotonic() + timeout
    while alive and time.monotonic() < end:
        time.sleep(0.1)
        alive = {pid for pid in alive if _running(pid)}
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    return signalled


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def main(argv: list[str]) -> int:
    """``up DIR [--net N] [--vet N] [--sockets S]`` or ``down DIR``; errors: one line, exit 1."""
    sizes = {"--net": 0, "--vet": 0, "--sockets": 0}
    while len(argv) >= 4 and argv[0] == "up" and argv[-2] in sizes and argv[-1].isdigit():
        sizes[argv[-2]], argv = int(argv[-1]), argv[:-2]
    if len(argv) != 2 or argv[0] not in ("up", "down"):
        print("usage: python -m tests.cluster.slurm up DIR [--net N] [--vet N] [--sockets S]"
              " | down DIR",
              file=sys.stderr)
        return 2
    root = Path(argv[1])
    try:
        if argv[0] == "up":
            shape = NodeShape.on_host(sizes["--sockets"]) if sizes["--sockets"] else None
            print(up(root, sizes["--net"], sizes["--vet"], shape))
        else:
            print("stopped: " + (", ".join(down(root)) or "nothing"))
    except (ClusterError, netns.NetworkError, TopologyError, OSError,
            subprocess.SubprocessError) as err:
        print(f"slurm {argv[0]}: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
