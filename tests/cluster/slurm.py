"""A real Slurm on this one machine: munge, slurmctld and three slurmd.

Partitions:

* ``one``: the host itself as node ``c1`` (all its CPUs);
* ``two``: fake nodes ``n1`` and ``n2`` (one CPU each), two slurmd on this
  host with their own ports, so jobs and the ``node`` mapping span two nodes.

A fake node declares all the host's CPUs and reserves all but one for the
system (``CpuSpecList``): ``n1`` gives jobs CPU 0 and ``n2`` CPU 1. Declared
with ``CPUs=1``, both would bind their task to CPU 0 and the two "nodes"
would share one core.

Everything (keys, sockets, state, spool, logs, pid files) lives under one
directory; nothing touches /etc or systemd. Usage::

    python -m tests.cluster.slurm up DIR     # prints the SLURM_CONF to export
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

DAEMONS = ("slurmd-n2", "slurmd-n1", "slurmd-c1", "slurmctld", "munged")
NODES = ("c1", "n1", "n2")
PORTS = {"ctld": 16817, "c1": 16818, "n1": 17001, "n2": 17002}


class ClusterError(RuntimeError):
    """The cluster could not be brought up; the message says which daemon and why."""


def _fake_cpus(cpus: int, own: int) -> str:
    """The CPU part of a fake node's line: job CPU ``own``, the others reserved."""
    if cpus < 2:
        return "CPUs=1 State=UNKNOWN"
    spec = ",".join(str(c) for c in range(cpus) if c != own)
    return (f"CPUs={cpus} CoresPerSocket={cpus} ThreadsPerCore=1 CpuSpecList={spec} "
            "State=UNKNOWN")


def _conf(root: Path, cpus: int) -> str:
    host = socket.gethostname()
    return f"""\
ClusterName=sentinel
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={PORTS['ctld']}
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
InactiveLimit=0
KillWait=5
MinJobAge=60
NodeName=c1 NodeHostname={host} NodeAddr=127.0.0.1 Port={PORTS['c1']} CPUs={cpus} \
CoresPerSocket={cpus} ThreadsPerCore=1 State=UNKNOWN
NodeName=n1 NodeHostname={host} NodeAddr=127.0.0.1 Port={PORTS['n1']} {_fake_cpus(cpus, 0)}
NodeName=n2 NodeHostname={host} NodeAddr=127.0.0.1 Port={PORTS['n2']} {_fake_cpus(cpus, 1)}
PartitionName=one Nodes=c1 Default=YES MaxTime=60 State=UP
PartitionName=two Nodes=n1,n2 MaxTime=60 State=UP
"""


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


def nodes_idle(env: dict[str, str]) -> bool:
    """Whether sinfo shows every node (c1, n1, n2) idle."""
    proc = subprocess.run([_need("sinfo"), "-h", "-N", "-o", "%N %t"], capture_output=True,
                          text=True, env=env, timeout=30)
    states = dict(line.split() for line in proc.stdout.splitlines() if line.strip())
    return proc.returncode == 0 and all(states.get(n) == "idle" for n in NODES)


def up(root: Path) -> Path:
    """Start munge, slurmctld and the three slurmd under ``root``; return slurm.conf."""
    root = root.resolve()
    down(root)
    for sub in ("munge", "state", "run", "log", *(f"spool/{n}" for n in NODES),
                *(f"tmp/{n}" for n in NODES), "etc"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(root / "munge", 0o755)
    key = root / "munge" / "munge.key"
    if not key.exists():
        subprocess.run([_need("mungekey"), "--create", "--keyfile", str(key)], check=True,
                       capture_output=True, timeout=30)
    os.chmod(key, 0o400)
    conf = root / "etc" / "slurm.conf"
    conf.write_text(_conf(root, os.cpu_count() or 1))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    _start("munged", [_need("munged"), "--force", f"--key-file={key}",
                      f"--socket={root}/munge/socket", f"--pid-file={root}/run/munged.pid",
                      f"--log-file={root}/log/munged.log",
                      f"--seed-file={root}/munge/seed"], root, env)
    _start("slurmctld", [_need("slurmctld"), "-f", str(conf)], root, env)
    for node in NODES:
        _start(f"slurmd-{node}", [_need("slurmd"), "-f", str(conf), "-N", node], root, env)
    wait("Slurm nodes c1, n1, n2 (sinfo: idle)", lambda: nodes_idle(env))
    return conf


def _pid_files(root: Path) -> dict[str, Path]:
    run = root / "run"
    return {"munged": run / "munged.pid", "slurmctld": run / "slurmctld.pid",
            **{f"slurmd-{n}": run / f"slurmd-{n}.pid" for n in NODES}}


def down(root: Path) -> list[str]:
    """Stop every daemon that a PID file under ``root`` names; return what was stopped."""
    stopped = []
    files = _pid_files(root.resolve())
    for name in DAEMONS:
        path = files[name]
        try:
            pid = int(path.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        if _terminate(pid):
            stopped.append(f"{name} ({pid})")
        path.unlink(missing_ok=True)
    return stopped


def _terminate(pid: int, timeout: float = 10.0) -> bool:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    return True


def main(argv: list[str]) -> int:
    """``up DIR`` or ``down DIR``; errors are one line on stderr, exit 1."""
    if len(argv) != 2 or argv[0] not in ("up", "down"):
        print("usage: python -m tests.cluster.slurm up|down DIR", file=sys.stderr)
        return 2
    root = Path(argv[1])
    try:
        if argv[0] == "up":
            print(up(root))
        else:
            print("stopped: " + (", ".join(down(root)) or "nothing"))
    except (ClusterError, OSError, subprocess.SubprocessError) as err:
        print(f"slurm {argv[0]}: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
