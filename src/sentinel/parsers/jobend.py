"""Why a job ended badly, read from what the scheduler and the launchers print.

A benchmark killed at its time limit, on a failed node, by a signal, or an
MPI that refused to start leaves a truncated output; the parsers would only
say "truncated". These patterns name the cause instead. Each is written the
way Slurm, Open MPI's mpirun, MPICH's Hydra, srun, the MPI libraries and the
suite's own benchmarks print it; an MPI's or a benchmark's own words are
quoted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: How the cause of a Slurm time-limit kill begins.
TIME_LIMIT_KILL = "the job hit its time limit"
#: How the end of a job says Slurm's PMI-2 server rejected the MPI's request.
PMI2_REQUEST = "Slurm's PMI-2 server could not parse a request of the MPI's PMI-2 client"

#: How the end of a job says a rank of Open MPI crashed on a message that
#: came in while it was still in MPI_Init (a race of the library's own).
OB1_INIT_RACE = "Open MPI's ob1 crashed on a message that arrived while its rank was in MPI_Init"

#: How the cause of ranks left in MPI_Finalize until a kill ends.
FINALIZE_HANG = "so the ranks hung in MPI_Finalize"

#: The programs in src/bench; each says why it stops as ``<program>: error: <why>``.
BENCH_PROGRAMS = ("affinity", "hybrid", "jacobi", "matching", "pt2pt", "ring")

#: How MPICH and Intel MPI report a fatal error: the MPI call that failed,
#: then the layers under it, the deepest saying why.
_ERROR_STACK = (r"Fatal error in \w+: [^\n]*error stack:\n"
                r"\w+\(\d+\)\.*: (MPI_\w+)\([^\n]*\n"
                r"(?:\w+\(\d+\)\.*:[^\n]*\n)*"
                r"\w+\(\d+\)\.*: *([^\n]*\S)")


def _table(entries: Sequence[tuple[str, str]]) -> tuple[tuple[re.Pattern, str], ...]:
    return tuple((re.compile(pattern), say) for pattern, say in entries)


#: What a job's output shows when it ended abnormally: a pattern and how to say
#: it (``\N`` is the pattern's group N; a group that did not match is empty).
CAUSES: tuple[tuple[re.Pattern, str], ...] = _table((
    (r"CANCELLED AT (\S+) DUE TO TIME LIMIT",
     TIME_LIMIT_KILL + r" and Slurm cancelled it at \1"),
    (r"CANCELLED AT (\S+) DUE TO NODE FAIL",
     r"a node of the job failed (Slurm cancelled it at \1)"),
    (r"CANCELLED AT (\S+) DUE TO PREEMPTION", r"the job was preempted at \1"),
    (r"CANCELLED AT (\S+)( BY \S+)? \*\*\*", r"the job was cancelled at \1\2"),
    (r"slurmstepd\S*: error: .*?(Exceeded job memory limit|oom-kill\w*)",
     r"the job ran out of memory (\1)"),
    (r"process rank (\d+) with PID \d+ on node (\S+) exited on signal (\d+) \(([^)]+)\)",
     r"rank \1 on \2 died of signal \3 (\4)"),
    (r"EXIT STRING: (.+?) \(signal (\d+)\)", r"a rank died of signal \2 (\1)"),
    # Not "Exited with exit code N": a rank that exits with a code says why
    # itself (a benchmark's error line below, an unsupported thread level
    # that its sanity reads).
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
    (r"\] (PML \w+ cannot be selected)", r'Open MPI could not start: "\1"'),
    (r"A requested component was not found, or was unable to be opened\.[\s\S]{0,800}?"
     r"\nFramework: *(\S+)\nComponent: *(\S+)",
     r'Open MPI has no \1 component "\2" (or cannot open it)'),
    (r"It looks like MPI_INIT failed for some reason;[\s\S]{0,1000}?"
     r"\n  (\S[^\n]*\S)\n  --> ([^\n]*\S)", r'MPI_Init failed in Open MPI: "\1" (\2)'),
    # Slurm's PMI-2 server (22.05) reading a request of the MPI's PMI client
    # it cannot parse (MPICH 5.0.2's long PMI-1 put, read as two requests:
    # once in four CI runs across two nodes here; docs/slurm.md)
    (r"slurmstepd\S*: error: mpi/pmi2: (value not properly terminated in client request|"
     r"invalid client request)",
     PMI2_REQUEST + r" (srun --mpi=pmi2: \1)"),
    # Open MPI 5.0.11 under srun --mpi=pmix: a rank that leaves MPI_Init's
    # PMIx fence first sends before a slower one has set MPI_COMM_WORLD up in
    # ob1, and the slower one crashes matching it (open-mpi/ompi#11438, PR
    # #13559). 4 launches in 82 across the test rig's nodes, none in 52 under
    # Open MPI's own mpirun in the allocation (docs/slurm.md).
    (r"\[([^\]:]+):\d+\] \[ ?\d+\] [^\n]*\(mca_pml_ob1_recv_frag_callback_match\+[^\n]*\n"
     r"(?:\[\1:\d+\] [^\n]*\n){0,20}?\[\1:\d+\] \[ ?\d+\] [^\n]*\(ompi_mpi_init\+",
     OB1_INIT_RACE + r" on \1 (open-mpi/ompi issue 11438: a race of the library, not a fault "
     r"of the node)"),
    (_ERROR_STACK, r'\1 failed: "\2"'),
    # sb_finalize's watchdog: the results were out, the shutdown deadlocked
    (rf"\b({'|'.join(BENCH_PROGRAMS)}): error: rank (\d+): MPI_Finalize did not return "
     r"within (\d+) s",
     r"\1 had printed all its results (SENTINEL_DONE), " + FINALIZE_HANG
     + r": its watchdog stopped rank \2 after \3 s"),
    (rf"\b({'|'.join(BENCH_PROGRAMS)}): error: (?!rank \d+: MPI_Finalize did not)([^\n]*\S)",
     r'\1 stopped with an error: "\2"'),
))

#: Causes said only when no cause above was found: Open MPI ends every fatal
#: error with this block, after a more telling message when it has one.
FALLBACK_CAUSES: tuple[tuple[re.Pattern, str], ...] = _table((
    (r"\*\*\* An error occurred in (MPI_\w+)\n(?:[^\n]*\*\*\* (?:reported by|on )[^\n]*\n)*"
     r"(?:[^\n]*\*\*\* (?!MPI_ERRORS_ARE_FATAL)([^\n]*\S))?",
     r'Open MPI aborted in \1: "\2"'),
))

#: Lines that explain a cause but are none themselves, said only along with
#: one: UCX warns of a transport it lacks and goes on with the others.
DETAILS: tuple[tuple[re.Pattern, str], ...] = _table((
    (r"UCX\s+WARN\s+((?:transport|network device) '[^']*' is not available[^\n]*\S)",
     r'UCX: "\1"'),
    (r"UCX\s+ERROR\s+([^\n]*\S)", r'UCX: "\1"'),
    (r"(select_ofi_provider: no provider found)", r'Open MPI (mtl ofi): "\1"'),
))

#: The suite's own benchmarks print this after their last result, just
#: before MPI_Finalize.
_DONE = re.compile(r"^SENTINEL_DONE bench=(\S+)", re.MULTILINE)
_BENCH_SAYS = tuple(f"{program} " for program in BENCH_PROGRAMS)
_KILLED = re.compile(r"CANCELLED AT \S+ DUE TO TIME LIMIT|CANCELLED AT \S+( BY \S+)? \*\*\*")


def _first_matches(table: Sequence[tuple[re.Pattern, str]], text: str) -> list[tuple[int, str]]:
    """Each pattern's first match in ``text``: where it is and what it says."""
    found: list[tuple[int, str]] = []
    for pattern, say in table:
        m = pattern.search(text)
        if m:
            found.append((m.start(), m.expand(say)))
    return found


def job_end_causes(text: str, bench: str | None = None, launches: int = 1) -> list[str]:
    """Every cause found in a job's stdout + stderr, first occurrence each, in order.

    The lines that explain a cause (:data:`DETAILS`) come with it, in the
    order they were printed. A job killed after the benchmark printed its
    done line has all its results; what hung was MPI_Finalize, and the last
    cause says so. That holds only when each of the job's ``launches``
    launches of ``bench`` printed its done line (an earlier launch's does not
    speak for the last); ``bench`` None counts any benchmark's done line, ''
    none (a third-party suite prints none of its own).
    """
    found = _first_matches(CAUSES, text) or _first_matches(FALLBACK_CAUSES, text)
    if found:
        found += _first_matches(DETAILS, text)
    # A benchmark's own words come first: the launcher then killed the other
    # ranks, and what it printed of them (on stdout, before the benchmark's
    # stderr here) is the consequence.
    found.sort(key=lambda at: (not at[1].startswith(_BENCH_SAYS), at[0]))
    seen = dict.fromkeys(cause for _, cause in found)
    done = [m[1] for m in _DONE.finditer(text) if bench is None or m[1] == bench]
    if bench != "" and done and len(done) >= launches and _KILLED.search(text):
        seen[f"{done[-1]} had printed all its results (SENTINEL_DONE), {FINALIZE_HANG}"] = None
    return list(seen)


def job_end_message(causes: Sequence[str], time_limit: float | None) -> str:
    """The failure message of a job that ended abnormally with ``causes``.

    The time limit is named only where it explains the end: a time-limit
    kill, or ranks hung in MPI_Finalize until the job was killed.
    """
    # (a hang the benchmark's own watchdog stopped says more after FINALIZE_HANG)
    timed_out = any(c.startswith(TIME_LIMIT_KILL) or c.endswith(FINALIZE_HANG) for c in causes)
    limit = f" (time limit {time_limit:g} s)" if timed_out and time_limit else ""
    return f"the job ended abnormally{limit}: " + "; ".join(causes)
