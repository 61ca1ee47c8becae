"""One job for the transports of one environment: the packed job.

With ``pack_transports`` (the nightly and acceptance modes), the variant of
a check whose transport is ``<family>/all`` is a *packed job*: one batch job
that runs the job body of that check (every pre-run launch, the main
launch) once per transport the environment offers, one after another, each
in its own directory ``packed/<transport>/`` with the transport's
environment exported, under its own time limit (:class:`PerTransport`, a
:class:`~sentinel.rfm.repetition.Repetition`). The per-transport variants
are its *members*: their launch plan (:mod:`sentinel.rfm.launch_plan`)
takes their launch's stdout, stderr and ``ldd`` from it, and they go
through the same sanity, references and performance checks as a test with
its own job. A failed launch fails its member alone, naming its cause; a
retry runs the member with its own job.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from reframe.core.builtins import run_after, variable

from sentinel.errors import SentinelError
from sentinel.mpi.transports import Transport, declared, resolve
from sentinel.parsers.jobend import job_end_causes, job_end_message
from sentinel.rfm.references import Requirements
from sentinel.rfm.repetition import Repetition, Run
from sentinel.rfm.variants import variant_name

#: The transport name of a packed job's variant (``openmpi/all``).
PACKED = "all"


def packed_key(family: str) -> str:
    """The transport parameter value of ``family``'s packed job."""
    return f"{family}/{PACKED}"


def is_packed_key(key: str) -> bool:
    """Whether ``key`` names a packed job, not a transport."""
    return key.endswith(f"/{PACKED}")


def transport_label(key: str) -> str:
    """``ob1-tcp`` for a transport, ``openmpi-all`` for a packed job (a variant's name)."""
    family, name = key.split("/", 1)
    return f"{family}-{name}" if is_packed_key(key) else name


def transport_of(key: str) -> Transport:
    """The catalogue entry of ``key``; a packed job's: its family, no settings."""
    if is_packed_key(key):
        return Transport(key.split("/", 1)[0], PACKED, {}, {}, PACKED, PACKED)
    return resolve(key)


def why_not_run(test, t: Transport) -> str:
    """Why ``test``'s check runs no variant over ``t`` ('' when it runs one).

    The one filter of a check's transports: the variants it generates and
    the launches its packed job runs.
    """
    if test.transports and t.key not in test.transports:
        return f"{t.key} is not in {type(test).__name__}.transports"
    if t.intra_node and test.mapping == "node":
        return f"{t.name} is shared memory: it cannot carry traffic between nodes"
    if t.is_pair and t.halves and not test.mixes_levels():
        return (f"{t.name} differs from its halves only where ranks share a node and span "
                f"nodes at once; {type(test).__name__} with mapping {test.mapping} runs one "
                f"level: {' and '.join(t.halves)} measure it")
    return ""


@dataclass(frozen=True)
class Launch:
    """One transport of a packed job: its name and what to export for it."""

    name: str
    env: Mapping[str, str]


class PerTransport(Repetition):
    """The job body once per transport, one after another, in ``packed/<transport>/``."""

    directory = "packed"
    function = "sentinel_launch"
    out, err, exit = "rfm_packed.out", "rfm_packed.err", "rfm_packed.exit"

    def run_lines(self, test, limit_s: float) -> list[str]:
        """Each transport's run, with its selection exported."""
        return self.lines(self.launches(test), limit_s)

    def rounds(self, test) -> int:
        """One run per transport."""
        return len(test.packed_transports())

    def lines(self, launches: Sequence[Launch], limit_s: float) -> list[str]:
        """The runs of ``launches``, each in a subshell with its environment alone."""
        out = []
        for launch in launches:
            where = shlex.quote(f"{self.directory}/{launch.name}")
            exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(launch.env.items()))
            out += [f"mkdir -p {where}", self.run_line(where, exports, limit_s)]
        return out

    @staticmethod
    def launches(test) -> list[Launch]:
        """What each transport of ``test``'s packed job exports."""
        out = []
        for t in test.packed_transports():
            env = test.transport_env(t)
            forward = test.forwarded(t, env)
            if forward:
                # mpirun forwards OMPI_* itself; the others by name (its -x, as a variable).
                env["OMPI_MCA_mca_base_env_list"] = ";".join(forward)
            out.append(Launch(t.name, env))
        return out

    @staticmethod
    def causes(run: Run, job_name: str, limit: str, job_causes: Sequence[str]) -> list[str]:
        """Why a launch of the packed job has no complete result ([] when it ran to its end)."""
        if not run.started:
            return [f"the packed job {job_name} ended before it launched this transport "
                    f"({run.where} does not exist)", *job_causes]
        if run.exit_status is None:
            return [f"the packed job {job_name} ended during this launch", *job_causes]
        if run.timed_out:
            return [f"the launch ran past its time limit of {limit} in the packed job "
                    f"{job_name} and was stopped (timeout, exit status {run.exit_status})"]
        return []

    def verify(self, test, roots: Sequence[str]) -> None:
        """A packed job passes when it launched its transports; each one's verdict is its own.

        Its members depend on it: failing it for one failed launch would
        skip the others. A job that launched nothing fails, with why.
        ``roots``: where its runs are (its stage directory, or each node's).
        """
        test.values = {}
        runs = {t.name: [self.run(root, t.name) for root in roots]
                for t in test.packed_transports()}
        test.packed_launches = " ".join(f"{name}:{_ended(r)}" for name, r in runs.items())
        if not any(r.started for each in runs.values() for r in each):
            causes = job_end_causes(test.job_output_text())
            raise SentinelError("the packed job launched none of its transports"
                                + (f": {job_end_message(causes, test.time_limit)}"
                                   if causes else ""))


class PackedTransports(Requirements):
    """A check's transports packed into one job per environment (:attr:`pack_transports`)."""

    #: What it reads of the test besides ReFrame's attributes and its own
    #: (``tests/unit/test_plugin_needs.py`` holds it to the code).
    plugin_needs = (
        "held_to_one_node", "mapping", "spans_nodes", "transport", "transport_info", "transports",
    )

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
    def packed_job_name(self) -> str:
        """The unique name of the packed job of this variant's family and other parameters."""
        params = dict(type(self).get_variant_info(self.variant_num)["params"])
        params["transport"] = packed_key(self.transport_info.family)
        return variant_name(type(self), type(self).__name__, **params)

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

        Not one held to one node (it runs a job of its own). In an
        acceptance, only those whose members' combinations the reference
        file covers (:meth:`~sentinel.rfm.references.Requirements.runs_transport`).
        """
        return [t for t in declared(set(self.current_environ.features))
                if t.family == self.transport_info.family
                and not why_not_run(self, t) and not (t.intra_node and self.spans_nodes)
                and self.runs_transport(t.name)]


def _ended(runs: Sequence[Run]) -> str:
    """What one transport's launches ended with: its exit status, or each one's count."""
    if len(runs) == 1:
        return runs[0].ended
    counts: dict[str, int] = {}
    for r in runs:
        counts[r.ended] = counts.get(r.ended, 0) + 1
    return ",".join(f"{key}x{n}" for key, n in sorted(counts.items()))
