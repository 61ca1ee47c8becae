"""Why a job ended badly, read from what the scheduler and the launchers print.

A benchmark killed at its time limit, on a failed node, by a signal, or an
MPI that refused to start leaves a truncated output; the parsers would only
say "truncated". These patterns name the cause instead. Each is written the
way Slurm, Open MPI's mpirun, MPICH's Hydra and srun print it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_Explain = Callable[[re.Match], str]

CAUSES: tuple[tuple[re.Pattern, _Explain], ...] = (
    (re.compile(r"CANCELLED AT (\S+) DUE TO TIME LIMIT"),
     lambda m: f"the job hit its time limit and Slurm cancelled it at {m[1]}"),
    (re.compile(r"CANCELLED AT (\S+) DUE TO NODE FAIL"),
     lambda m: f"a node of the job failed (Slurm cancelled it at {m[1]})"),
    (re.compile(r"CANCELLED AT (\S+) DUE TO PREEMPTION"),
     lambda m: f"the job was preempted at {m[1]}"),
    (re.compile(r"CANCELLED AT (\S+)( BY \S+)? \*\*\*"),
     lambda m: f"the job was cancelled at {m[1]}{m[2] or ''}"),
    (re.compile(r"slurmstepd\S*: error: .*?(Exceeded job memory limit|oom-kill\w*)"),
     lambda m: f"the job ran out of memory ({m[1]})"),
    (re.compile(r"process rank (\d+) with PID \d+ on node (\S+) exited on signal (\d+) "
                r"\(([^)]+)\)"),
     lambda m: f"rank {m[1]} on {m[2]} died of signal {m[3]} ({m[4]})"),
    (re.compile(r"EXIT STRING: (.+?) \(signal (\d+)\)"),
     lambda m: f"a rank died of signal {m[2]} ({m[1]})"),
    # Not "Exited with exit code N": that is the benchmark's own verdict (an
    # unsupported thread level, a bad argument), which its sanity reads.
    (re.compile(r"srun: error: (\S+): tasks? ([\d,-]+): (?!Exited with exit code)(.+)"),
     lambda m: f"srun: task(s) {m[2]} on {m[1]}: {m[3].strip()}"),
    (re.compile(r"has detected an attempt to run as root"),
     lambda m: "Open MPI refused to run as root (OMPI_ALLOW_RUN_AS_ROOT and "
               "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM are not set)"),
    (re.compile(r"(?:srun|sbatch): error: (Unable to allocate resources: .+|"
                r"Required node not available.*|Invalid partition name specified.*)"),
     lambda m: f"Slurm refused the job: {m[1].strip()}"),
    (re.compile(r"(\S+): (?:error while loading shared libraries|cannot open shared "
                r"object file)[: ]*(.*)"),
     lambda m: f"{m[1]} cannot start: missing shared library {m[2].strip()}"),
    (re.compile(r"(?:srun|mpirun\S*|mpiexec\S*|bash|sh): (?:line \d+: )?(\S+): "
                r"(?:No such file or directory|command not found)"),
     lambda m: f"{m[1]}: no such program"),
)


#: The suite's own benchmarks print this after their last result, just
#: before MPI_Finalize.
_DONE = re.compile(r"^SENTINEL_DONE bench=(\S+)", re.MULTILINE)
_KILLED = re.compile(r"CANCELLED AT \S+ DUE TO TIME LIMIT|CANCELLED AT \S+( BY \S+)? \*\*\*")

FINALIZE_HANG = "so the ranks hung in MPI_Finalize"


def job_end_causes(text: str) -> list[str]:
    """Every cause found in a job's stdout + stderr, first occurrence each, in order.

    A job killed after the benchmark printed its done line has all its
    results; what hung was MPI_Finalize, and the last cause says so.
    """
    found: list[tuple[int, str]] = []
    for pattern, explain in CAUSES:
        m = pattern.search(text)
        if m:
            found.append((m.start(), explain(m)))
    seen: dict[str, None] = {}
    for _, cause in sorted(found):
        seen.setdefault(cause, None)
    done = _DONE.search(text)
    if done and _KILLED.search(text):
        seen[f"{done[1]} had printed all its results (SENTINEL_DONE), {FINALIZE_HANG}"] = None
    return list(seen)
