"""Why a job ended badly, read from what the scheduler and the launchers print.

A benchmark killed at its time limit, on a failed node, by a signal, or an
MPI that refused to start leaves a truncated output; the parsers would only
say "truncated". These patterns name the cause instead. Each is written the
way Slurm, Open MPI's mpirun, MPICH's Hydra and srun print it.
"""

from __future__ import annotations

import re

#: What a job's output shows when it ended abnormally: a pattern and how to say
#: it (``\N`` is the pattern's group N; a group that did not match is empty).
CAUSES: tuple[tuple[re.Pattern, str], ...] = tuple((re.compile(p), say) for p, say in (
    (r"CANCELLED AT (\S+) DUE TO TIME LIMIT",
     r"the job hit its time limit and Slurm cancelled it at \1"),
    (r"CANCELLED AT (\S+) DUE TO NODE FAIL",
     r"a node of the job failed (Slurm cancelled it at \1)"),
    (r"CANCELLED AT (\S+) DUE TO PREEMPTION", r"the job was preempted at \1"),
    (r"CANCELLED AT (\S+)( BY \S+)? \*\*\*", r"the job was cancelled at \1\2"),
    (r"slurmstepd\S*: error: .*?(Exceeded job memory limit|oom-kill\w*)",
     r"the job ran out of memory (\1)"),
    (r"process rank (\d+) with PID \d+ on node (\S+) exited on signal (\d+) \(([^)]+)\)",
     r"rank \1 on \2 died of signal \3 (\4)"),
    (r"EXIT STRING: (.+?) \(signal (\d+)\)", r"a rank died of signal \2 (\1)"),
    # Not "Exited with exit code N": that is the benchmark's own verdict (an
    # unsupported thread level, a bad argument), which its sanity reads.
    (r"srun: error: (\S+): tasks? ([\d,-]+): (?!Exited with exit code)\s*(.*\S)",
     r"srun: task(s) \2 on \1: \3"),
    (r"has detected an attempt to run as root",
     "Open MPI refused to run as root (OMPI_ALLOW_RUN_AS_ROOT and "
     "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM are not set)"),
    (r"(?:srun|sbatch): error: (Unable to allocate resources: .*\S|"
     r"Required node not available.*\S|Invalid partition name specified.*\S)",
     r"Slurm refused the job: \1"),
    (r"(\S+): (?:error while loading shared libraries|cannot open shared "
     r"object file)[: ]*(.*\S)?", r"\1 cannot start: missing shared library \2"),
    (r"(?:srun|mpirun\S*|mpiexec\S*|bash|sh): (?:line \d+: )?(\S+): "
     r"(?:No such file or directory|command not found)", r"\1: no such program"),
))

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
    for pattern, say in CAUSES:
        m = pattern.search(text)
        if m:
            found.append((m.start(), m.expand(say)))
    seen: dict[str, None] = {}
    for _, cause in sorted(found):
        seen.setdefault(cause, None)
    done = _DONE.search(text)
    if done and _KILLED.search(text):
        seen[f"{done[1]} had printed all its results (SENTINEL_DONE), {FINALIZE_HANG}"] = None
    return list(seen)
