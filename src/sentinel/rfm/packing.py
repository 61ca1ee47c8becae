"""One job for the transports of one environment: the packed job and its members.

With ``pack_transports`` (the nightly and acceptance modes), the variant of
a check whose transport is ``<family>/all`` is a *packed job*: one batch job
that runs the job body of that check (every pre-run launch, the main
launch) once per transport the environment offers, one after another, each
in its own directory ``packed/<transport>/`` with the transport's
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
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import reframe.utility.udeps as udeps
from reframe.core import runtime
from reframe.core.builtins import run_after, run_before, variable

from sentinel.analysis.host import HOST_AFTER_FILE, HOST_FILE
from sentinel.errors import SentinelError
from sentinel.mpi.transports import Transport, declared
from sentinel.parsers.jobend import job_end_causes, job_end_message
from sentinel.rfm.provenance import LDD_FILE, PROVENANCE_FILE
from sentinel.rfm.references import Requirements
from sentinel.rfm.variants import variant_name

#: The transport name of a packed job's variant (``openmpi/all``).
PACKED = "all"

#: Where the packed job puts each launch, below its stage directory.
PACKED_DIR = "packed"

#: A launch's files in its directory (and in its member's stage directory).
OUT, ERR, EXIT = "rfm_packed.out", "rfm_packed.err", "rfm_packed.exit"

#: Exit statuses of ``timeout``: stopped at the limit (TERM), killed after it (KILL).
TIMED_OUT = (124, 137)

#: Seconds ``timeout`` waits after TERM before it kills the launch.
KILL_AFTER_S = 30

_BODY = "sentinel_launch"


def packed_key(family: str) -> str:
    """The transport parameter value of ``family``'s packed job."""
    return f"{family}/{PACKED}"


def is_packed_key(key: str) -> bool:
    """Whether ``key`` names a packed job, not a transport."""
    return key.endswith(f"/{PACKED}")


@dataclass(frozen=True)
class Launch:
    """One transport of a packed job: its name and what to export for it."""

    name: str
    env: Mapping[str, str]


#: The first line of a packed job's body: the check's commands become a function.
OPEN_BODY = f"{_BODY}() {{"


def run_lines(launches: Sequence[Launch], limit_s: float) -> list[str]:
    """Job-script lines that close the body and run it once per launch.

    The body (what a check with one transport would run, between
    :data:`OPEN_BODY` and these lines) runs in ``packed/<name>/``, in a
    subshell with the launch's environment, under ``timeout`` (which stops
    its whole process group: launcher and ranks); the exit status is
    recorded next to the launch's output.
    """
    lines = ["}", f"export -f {_BODY}"]
    for launch in launches:
        where = shlex.quote(f"{PACKED_DIR}/{launch.name}")
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
    """What the packed job left of one launch."""

    #: The launch's directory.
    where: str
    #: Whether the packed job got to it.
    started: bool
    #: Its exit status; None when the packed job ended during the launch.
    exit_status: int | None

    @property
    def timed_out(self) -> bool:
        """Stopped by its time limit."""
        return self.exit_status in TIMED_OUT


def launch_status(job_stagedir: str, name: str) -> LaunchStatus:
    """The status of launch ``name`` of the packed job staged in ``job_stagedir``."""
    where = os.path.join(job_stagedir, PACKED_DIR, name)
    if not os.path.isdir(where):
        return LaunchStatus(where, False, None)
    try:
        with open(os.path.join(where, EXIT)) as fp:
            text = fp.read().strip()
    except FileNotFoundError:
        return LaunchStatus(where, True, None)
    return LaunchStatus(where, True, int(text) if text.isdigit() else None)


def launch_causes(status: LaunchStatus, job_name: str, limit: str,
                  job_causes: Sequence[str]) -> list[str]:
    """Why a launch of the packed job has no complete result ([] when it ran to its end)."""
    if not status.started:
        return [f"the packed job {job_name} ended before it launched this transport "
                f"({status.where} does not exist)", *job_causes]
    if status.exit_status is None:
        return [f"the packed job {job_name} ended during this launch", *job_causes]
    if status.timed_out:
        return [f"the launch ran past its time limit of {limit} in the packed job "
                f"{job_name} and was stopped (timeout, exit status {status.exit_status})"]
    return []


class PackedTransports(Requirements):
    """A check's transports packed into one job per environment (:attr:`pack_transports`)."""

    #: Run the transports of each environment one after another in one job
    #: (the packed job, ``%transport=<family>-all``) instead of one job each;
    #: every transport keeps its own test case, verdict, references and
    #: failure message. Set by the nightly and acceptance modes.
    #:
    #: :type: :class:`bool`
    #: :default: ``False``
    pack_transports = variable(bool, value=False, loggable=True)

    #: What each launch of a packed job ended with (``ob1-tcp:0 ucx-tcp:124``).
    #:
    #: :type: :class:`str`
    #: :default: ``''`` (set by a packed job's sanity)
    packed_launches = variable(str, value="", loggable=True)

    @property
    def is_packed_job(self) -> bool:
        """Whether this variant is a packed job (``transport=<family>-all``)."""
        return is_packed_key(self.transport)

    @property
    def in_packed_job(self) -> bool:
        """Whether this transport's launch belongs to a packed job.

        Not a transport that cannot cross nodes in a check whose launches
        span them: it is held to one node, so its launches are not the
        packed job's; it runs a job of its own.
        """
        return self.pack_transports and not self.is_packed_job and not self.held_to_one_node

    @property
    def from_packed_job(self) -> bool:
        """Whether this run takes its launch from the packed job (a retry runs its own)."""
        return self.in_packed_job and self.local

    @property
    def packed_job_name(self) -> str:
        """The unique name of the packed job of this variant's family and other parameters."""
        params = dict(type(self).get_variant_info(self.variant_num)["params"])
        params["transport"] = packed_key(self.transport_info.family)
        return variant_name(type(self), type(self).__name__, **params)

    def depend_on_packed_job(self) -> None:
        """A member depends on its packed job (same partition and environment)."""
        if self.in_packed_job:
            self.depends_on(self.packed_job_name, udeps.by_case)

    @run_before("setup")
    def choose_job(self) -> None:
        """A member runs locally, on its launch in the packed job; a retry runs its own job."""
        self.local = self.in_packed_job and runtime.runtime().current_run == 0

    @run_after("setup")
    def skip_empty_packed_job(self) -> None:
        """Skip a packed job with no transport to run (its members all skip)."""
        if self.is_packed_job:
            selected = f" among {type(self).__name__}.transports" if self.transports else ""
            self.skip_if(not self.packed_transports(),
                         f"environment {self.current_environ.name} offers no "
                         f"{self.transport_info.family} transport{self.required_by()} for mapping "
                         f"{self.mapping}{selected}")

    def packed_transports(self) -> list[Transport]:
        """The transports a packed job runs: its family's, offered by this environment.

        In an acceptance, only those whose members' combinations the
        reference file covers (:meth:`~sentinel.rfm.references.Requirements.runs_transport`).
        """
        return [t for t in declared(set(self.current_environ.features))
                if t.family == self.transport_info.family
                and not (t.intra_node and (self.mapping == "node" or self.spans_nodes))
                and not (t.is_pair and t.halves and not self.mixes_levels())
                and (not self.transports or t.key in self.transports)
                and self.runs_transport(t.name)]

    def wrap_packed_job(self) -> None:
        """The job body once per transport, each under this check's time limit."""
        launcher = self.job.launcher.registered_name
        launches = []
        for t in self.packed_transports():
            env = self.transport_env(t)
            forward = sorted(v for v in env if not v.startswith("OMPI_"))
            if t.family == "openmpi" and launcher in ("mpirun", "mpiexec") and forward:
                # mpirun forwards OMPI_* itself; the others by name (its -x, as a variable).
                env["OMPI_MCA_mca_base_env_list"] = ";".join(forward)
            launches.append(Launch(t.name, env))
        per_launch = float(self.time_limit)
        self.prerun_cmds.insert(0, OPEN_BODY)
        self.postrun_cmds += run_lines(launches, per_launch)
        self.time_limit = per_launch * len(launches) + KILL_AFTER_S * len(launches)

    def take_packed_launch(self) -> None:
        """Make this launch's output, errors, ``ldd`` and node facts in the packed job its own."""
        self.prerun_cmds, self.postrun_cmds = [], []
        self.executable = "sh"
        self.executable_opts = ["-c", shlex.quote(
            f"cat {OUT} 2>/dev/null; cat {ERR} >&2 2>/dev/null; true")]
        if self.is_dry_run() or self.each_node:
            return  # an each-node member reads each node's launch where it is
        status = self.packed_launch()
        for name in (OUT, ERR, LDD_FILE, PROVENANCE_FILE, HOST_FILE, HOST_AFTER_FILE):
            path = os.path.join(status.where, name)
            if os.path.exists(path):
                shutil.copy(path, self.stagedir)

    def packed_launch(self) -> LaunchStatus:
        """What the packed job left of this transport's launch."""
        return launch_status(self.launch_root(self.getdep(self.packed_job_name).stagedir),
                             self.transport_name)

    def packed_launch_causes(self) -> list[str]:
        """Why the packed job has no complete launch of this transport ([] if it has)."""
        job = self.getdep(self.packed_job_name)
        return launch_causes(self.packed_launch(), job.display_name,
                             f"{float(self.time_limit):g} s",
                             job_end_causes(job.job_output_text()))

    def verify_packed_job(self) -> None:
        """A packed job passes when it launched its transports; each one's verdict is its own.

        Its members depend on it: failing it for one failed launch would
        skip the others. A job that launched nothing fails, with why.
        """
        self.values = {}
        roots = self.launch_roots(self.stagedir)
        statuses = {t.name: [launch_status(root, t.name) for root in roots]
                    for t in self.packed_transports()}
        self.packed_launches = " ".join(
            f"{name}:{_ended(launches)}" for name, launches in statuses.items())
        if not any(s.started for launches in statuses.values() for s in launches):
            causes = job_end_causes(self.job_output_text())
            raise SentinelError("the packed job launched none of its transports"
                                + (f": {job_end_message(causes, self.time_limit)}"
                                   if causes else ""))


def _ended(launches: Sequence[LaunchStatus]) -> str:
    """What one transport's launches ended with: its exit status, or each one's count."""
    if len(launches) == 1:
        s = launches[0]
        return "not launched" if not s.started else str(s.exit_status)
    counts: dict[str, int] = {}
    for s in launches:
        key = "not launched" if not s.started else str(s.exit_status)
        counts[key] = counts.get(key, 0) + 1
    return ",".join(f"{key}x{n}" for key, n in sorted(counts.items()))
