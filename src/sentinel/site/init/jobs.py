"""The discovery jobs: one per partition and node type, each running ``sentinel.site.discover``.

A job takes one whole node of its type (Slurm: ``--exclusive``, so it sees
every CPU a job can use; PBS: ``place=excl``) for at most
:data:`WALLTIME_MIN` minutes and writes its report to
``DIR/discover-<partition>[-<k>].json`` (stderr beside it, ``.err``). The job
runs this checkout's Python, so the checkout must be on a file system the
compute nodes mount (as ReFrame's stage directory must be).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from sentinel.site.discover import SCHEMA
from sentinel.site.init.scheduler import NodeType, Partition

#: A discovery job's time limit, minutes: module loads and fi_info probes take seconds.
WALLTIME_MIN = 10


@dataclass(frozen=True)
class Job:
    """One discovery job: where it runs and where its report goes."""

    partition: str
    shape: NodeType
    node: str | None  # one node of the shape, where the partition has several shapes
    label: str  # ``<partition>`` or ``<partition>-<k>``

    def report(self, directory: Path) -> Path:
        """The job's report."""
        return directory / f"discover-{self.label}.json"

    def errors(self, directory: Path) -> Path:
        """The job's standard error."""
        return directory / f"discover-{self.label}.err"


def jobs_of(partitions: list[Partition]) -> list[Job]:
    """A job per node type of each usable partition (the first node of the type, if several)."""
    out = []
    for part in partitions:
        if not part.usable:
            continue
        several = len(part.types) > 1
        for k, (shape, names) in enumerate(part.types.items(), start=1):
            label = re.sub(r"[^\w.-]", "_", part.name) + (f"-{k}" if several else "")
            out.append(Job(part.name, shape, names[0] if several else None, label))
    return out


def _command() -> str:
    return f"exec {shlex.quote(sys.executable)} -m sentinel.site.discover"


def script(kind: str, job: Job, directory: Path) -> str:
    """The batch script of ``job`` for ``kind`` (``slurm`` or ``pbs``)."""
    out, err = job.report(directory), job.errors(directory)
    if kind == "slurm":
        lines = ["#!/bin/bash", "#SBATCH --job-name=sentinel-discover",
                 f"#SBATCH --partition={job.partition}", "#SBATCH --nodes=1",
                 "#SBATCH --exclusive", f"#SBATCH --time={WALLTIME_MIN}",
                 f"#SBATCH --output={out}", f"#SBATCH --error={err}",
                 *([f"#SBATCH --nodelist={job.node}"] if job.node else [])]
    else:
        host = f":host={job.node}" if job.node else ""
        lines = ["#!/bin/bash", "#PBS -N sentinel-discover", f"#PBS -q {job.partition}",
                 f"#PBS -l select=1:ncpus={job.shape.cpus}{host}", "#PBS -l place=excl",
                 f"#PBS -l walltime=00:{WALLTIME_MIN:02d}:00", "#PBS -V",
                 f"#PBS -o {out}", f"#PBS -e {err}"]
    return "\n".join([*lines, _command(), ""])


#: How each scheduler takes a script, tells a job's id, and tells that it ended.
_SUBMIT = {"slurm": ["sbatch", "--parsable"], "pbs": ["qsub"]}


def _queued(kind: str, job_id: str) -> bool:
    if kind == "slurm":
        p = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True,
                           text=True, timeout=60)
        return p.returncode == 0 and bool(p.stdout.strip())
    p = subprocess.run(["qstat", "-x", "-f", "-F", "json", job_id], capture_output=True,
                       text=True, timeout=60)
    try:
        state = json.loads(p.stdout)["Jobs"][job_id]["job_state"]
    except (ValueError, KeyError, TypeError):
        return False
    return state not in ("F", "E")


def _cancel(kind: str, job_id: str) -> None:
    subprocess.run(["scancel" if kind == "slurm" else "qdel", job_id], capture_output=True,
                   timeout=60)


def submit_all(kind: str, jobs: list[Job], directory: Path,
               timeout: float) -> dict[str, str]:
    """Submit every job, wait until each ended (or ``timeout`` s), cancel the rest.

    Returns, per job label, why it has no report ("" when it has one).
    """
    problems: dict[str, str] = {}
    ids: dict[str, str] = {}
    for job in jobs:
        path = directory / "jobs" / f"discover-{job.label}.sh"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(script(kind, job, directory))
        p = subprocess.run([*_SUBMIT[kind], str(path)], capture_output=True, text=True,
                           timeout=60)
        if p.returncode != 0:
            problems[job.label] = (f"{' '.join(_SUBMIT[kind])} refused the job (exit "
                                   f"{p.returncode}): {(p.stderr or p.stdout).strip()[-300:]}")
            continue
        ids[job.label] = p.stdout.strip().split(";")[0]
    end = time.monotonic() + timeout
    waiting = dict(ids)
    while waiting and time.monotonic() < end:
        waiting = {k: v for k, v in waiting.items() if _queued(kind, v)}
        if waiting:
            time.sleep(1.0)
    for label, job_id in waiting.items():
        _cancel(kind, job_id)
        problems[label] = (f"job {job_id} did not end within {timeout:g} s (queued or running; "
                           "cancelled): raise --timeout, or run it when the partition is free")
    return problems


def read_report(job: Job, directory: Path) -> tuple[dict | None, str]:
    """The job's report, or None and why not (missing, truncated, another schema)."""
    path = job.report(directory)
    err = job.errors(directory)
    tail = " | ".join(err.read_text(errors="replace").strip().splitlines()[-3:]) if (
        err.exists()) else ""
    if not path.exists() or not path.read_text(errors="replace").strip():
        return None, f"{path} is missing or empty" + (f" (stderr: {tail})" if tail else "")
    try:
        data = json.loads(path.read_text(errors="replace"))
    except ValueError as err_:
        return None, f"{path}: not a complete JSON report ({err_}); truncated?" + (
            f" (stderr: {tail})" if tail else "")
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        return None, (f"{path}: schema {data.get('schema') if isinstance(data, dict) else '?'}"
                      f", this sentinel reads {SCHEMA} (run the same checkout's discovery)")
    return data, ""
