"""One job for the transports of one environment: the series job and its members.

With ``pack_transports`` (the nightly and acceptance modes), the variant of
a check whose transport is ``<family>/all`` is a *series job*: one batch job
that runs the job body of that check (every pre-run launch, the main
launch) once per transport the environment offers, one after another, each
in its own directory ``series/<transport>/`` with the transport's
environment exported, under its own time limit. The per-transport variants
are its *members*: they depend on it, run locally (no batch job), take their
launch's stdout, stderr and ``ldd`` as their own and go through the same
sanity, references and performance checks as a test with its own job. A
failed launch fails its member alone, naming its cause; a retry runs the
member with its own job.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: The transport name of a series job's variant (``openmpi/all``).
SERIES = "all"

#: Where the series job puts each launch, below its stage directory.
SERIES_DIR = "series"

#: A launch's files in its directory (and in its member's stage directory).
OUT, ERR, EXIT = "rfm_series.out", "rfm_series.err", "rfm_series.exit"

#: Exit statuses of ``timeout``: stopped at the limit (TERM), killed after it (KILL).
TIMED_OUT = (124, 137)

#: Seconds ``timeout`` waits after TERM before it kills the launch.
KILL_AFTER_S = 30

_BODY = "sentinel_launch"


def series_key(family: str) -> str:
    """The transport parameter value of ``family``'s series job."""
    return f"{family}/{SERIES}"


def is_series_key(key: str) -> bool:
    """Whether ``key`` names a series job, not a transport."""
    return key.endswith(f"/{SERIES}")


@dataclass(frozen=True)
class Launch:
    """One transport of a series: its name and what to export for it."""

    name: str
    env: Mapping[str, str]


#: The first line of a series job's body: the check's commands become a function.
OPEN_BODY = f"{_BODY}() {{"


def run_lines(launches: Sequence[Launch], limit_s: float) -> list[str]:
    """Job-script lines that close the body and run it once per launch.

    The body (what a check with one transport would run, between
    :data:`OPEN_BODY` and these lines) runs in ``series/<name>/``, in a
    subshell with the launch's environment, under ``timeout`` (which stops
    its whole process group: launcher and ranks); the exit status is
    recorded next to the launch's output.
    """
    lines = ["}", f"export -f {_BODY}"]
    for launch in launches:
        where = shlex.quote(f"{SERIES_DIR}/{launch.name}")
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(launch.env.items()))
        export = f"export {exports} && " if exports else ""
        lines += [
            f"mkdir -p {where}",
            f"(cd {where} && {export}exec timeout --kill-after={KILL_AFTER_S} {int(limit_s)} "
            f"bash -c {_BODY} > {OUT} 2> {ERR}); echo $? > {where}/{EXIT}",
        ]
    return lines


@dataclass(frozen=True)
class LaunchStatus:
    """What the series job left of one launch."""

    #: The launch's directory.
    where: str
    #: Whether the series job got to it.
    started: bool
    #: Its exit status; None when the series job ended during the launch.
    exit_status: int | None

    @property
    def timed_out(self) -> bool:
        """Stopped by its time limit."""
        return self.exit_status in TIMED_OUT


def launch_status(series_stagedir: str, name: str) -> LaunchStatus:
    """The status of launch ``name`` of the series job staged in ``series_stagedir``."""
    where = os.path.join(series_stagedir, SERIES_DIR, name)
    if not os.path.isdir(where):
        return LaunchStatus(where, False, None)
    try:
        with open(os.path.join(where, EXIT)) as fp:
            text = fp.read().strip()
    except FileNotFoundError:
        return LaunchStatus(where, True, None)
    return LaunchStatus(where, True, int(text) if text.isdigit() else None)


def series_causes(status: LaunchStatus, series_name: str, limit: str,
                  series_job_causes: Sequence[str]) -> list[str]:
    """Why a launch of the series job has no complete result ([] when it ran to its end)."""
    if not status.started:
        return [f"the series job {series_name} ended before it launched this transport "
                f"({status.where} does not exist)", *series_job_causes]
    if status.exit_status is None:
        return [f"the series job {series_name} ended during this launch", *series_job_causes]
    if status.timed_out:
        return [f"the launch ran past its time limit of {limit} in the series job "
                f"{series_name} and was stopped (timeout, exit status {status.exit_status})"]
    return []
