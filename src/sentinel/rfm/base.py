"""The base of every check: one transport, one rank mapping, one sanity path.

:class:`TransportMappingTest` generates only valid (transport, mapping)
pairs, applies the transport's environment and the mapping's launcher
options, hands the job body to its launch plan
(:mod:`sentinel.rfm.launch_plan`) and holds the sanity path every launch
goes through (:attr:`TransportMappingTest.sanity_path`,
:mod:`sentinel.rfm.sanity`): how the job ended, the MPI library the binary
ran with (``ldd`` in the job), the output read and complete, the world
size, the transport from the library's log, the placement from the
affinity report, then the check's own analysis. A check supplies only what
is its own (:meth:`read_output`, :meth:`analyse`, and where it differs,
:meth:`placement_records`). Every :class:`~sentinel.errors.SentinelError` on
the way becomes one clear ``SanityError``, here (:meth:`validate`) and
nowhere else.
"""

from __future__ import annotations

import os
import shlex

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.backends import getlauncher
from reframe.core.builtins import parameter, run_after, run_before, sanity_function, variable
from reframe.core.exceptions import ConfigError, SanityError

from sentinel.analysis.variables import CheckSpec, Values
from sentinel.errors import SentinelError
from sentinel.mpi.linkage import linkage_problems
from sentinel.mpi.mappings import MAPPINGS, launcher_settings, scheduler_options, tasks_per_node
from sentinel.mpi.placement import Levels
from sentinel.mpi.transports import Transport
from sentinel.mpi.verify import observe, problems
from sentinel.parsers.jobend import FINALIZE_HANG, job_end_causes, job_end_message
from sentinel.parsers.provenance import gather_command
from sentinel.parsers.sentinel_output import parse, require_complete
from sentinel.rfm import compat
from sentinel.rfm.compat.generation import offered_transports
from sentinel.rfm.compat.skips import RecordsSkip
from sentinel.rfm.host_probe import LAUNCH_STATUS, HostProbe
from sentinel.rfm.launch_plan import PlannedLaunches
from sentinel.rfm.packing import transport_label, transport_of
from sentinel.rfm.placing import PlacementChecks
from sentinel.rfm.provenance import LDD_FILE, PROVENANCE_FILE, Provenance
from sentinel.rfm.rotation import NightlyRotation
from sentinel.rfm.sanity import SanityPath
from sentinel.rfm.values import MeasuredValues

#: MPICH before 4.2 (ch4:ucx) can deadlock in MPI_Finalize: one rank waits in
#: a PMI barrier while the other still needs it to complete a UCX disconnect
#: (fixed by pmodels/mpich#6596).
MPICH_FINALIZE_NOTE = ("MPICH before 4.2 with ch4:ucx is known to deadlock there "
                       "(pmodels/mpich#6596; see docs/slurm.md, known issue)")


def _option_value(value: object) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return str(value)


compat.install()

#: Every pipeline hook of the suite's test library, stage by stage, in the
#: order they run in any check (a check's own hooks come between them, after
#: its stage's library hooks and before those ``always_last``). ReFrame
#: orders hooks by the classes that define them; this is the order that
#: inheritance must give, and ``tests/unit/test_hook_order.py`` fails
#: where it does not. Why the order matters:
#:
#: * ``init``: a rotating check's night and whether it is deferrable are
#:   known before anything else is decided; the pairs it generates last.
#: * ``setup``: what cannot run is skipped (mapping, deferral, an empty
#:   packed job, each node) before the environment's own launcher replaces
#:   the partition's and a check sizes its launches (its program, nodes,
#:   series or splits); nothing reads or wraps the launcher before then.
#: * ``run``: the references are loaded before the job is written (an
#:   acceptance without its file fails before its job runs); an each-node
#:   job takes its nodes before the launcher's options are added to its
#:   launcher; the benchmark's command line precedes the threads' binding
#:   and the repeated launches (splits, series, the affinity probe) that
#:   copy it; the launch plan writes the job body last.
#: * ``performance``: the values are given to ReFrame before the bands.
HOOK_ORDER: dict[str, tuple[str, ...]] = {
    "post_init": ("take_turn", "default_deferrable", "record_reference_file",
                  "require_declaration", "generate_valid_pairs"),
    "pre_setup": ("choose_launch_plan",),
    "post_setup": ("skip_impossible_mapping", "wait_if_deferred", "skip_empty_packed_job",
                   "runs_on_each_node", "use_environment_launcher", "locate_program",
                   "span_nodes", "plan_series", "plan_splits"),
    "pre_run": ("load_references", "size_job", "apply_transport_and_mapping",
                "set_bench_command", "bind_omp_threads", "launch_splits", "launch_series",
                "launch_probe_first", "finish_job_script"),
    "pre_sanity": ("record_provenance",),
    "pre_performance": ("set_perf_variables", "judge_references"),
}


class TransportMappingTest(RecordsSkip, PlannedLaunches, NightlyRotation, Provenance,
                           PlacementChecks, MeasuredValues, HostProbe,
                           rfm.RunOnlyRegressionTest):
    """Two ranks over one transport and one rank mapping."""

    #: The transport, ``family/name`` from :data:`sentinel.mpi.CATALOGUE`,
    #: among those the selected system's environments offer. Only
    #: environments whose features include the family and the transport name
    #: (e.g. ``+openmpi +ucx-sm``) run it.
    #:
    #: :type: :class:`str`
    #: :values: the catalogue entries the system offers
    transport = parameter(offered_transports(), fmt=transport_label, loggable=True)

    #: Transports (``family/name``) to run; empty: every transport offered.
    #:
    #: :type: :class:`List[str]`
    #: :default: ``[]``
    transports = variable(typ.List[str], value=[])

    #: Rank placement: ``core``, ``socket`` or ``node``.
    #:
    #: :type: :class:`str`
    mapping = parameter(list(MAPPINGS), loggable=True)

    #: The MPI library the binary ran with, as ``ldd`` in the job resolved it.
    #:
    #: :type: :class:`str`
    #: :default: ``''`` (set before sanity)
    mpi_linkage = variable(str, value="", loggable=True)

    #: What the library's log showed about its transport selection.
    #:
    #: :type: :class:`str`
    #: :default: ``''`` (set by sanity)
    transport_selected = variable(str, value="", loggable=True)

    #: Why the launches hold fewer nodes or ranks than the partition does,
    #: when they do (a transport that cannot cross nodes, a node's memory).
    #:
    #: :type: :class:`str`
    #: :default: ``''``
    span_note = variable(str, value="", loggable=True)

    #: More environment features a subclass requires (``+spack``) or
    #: excludes (``-spack``), in ReFrame's feature syntax.
    environ_features: str = ""

    #: Whether the check runs two ranks (``core``: on two cores of one
    #: socket; ``socket``: one on each of two sockets; ``node``: one on each
    #: of two nodes), not a node's worth or a rank series.
    rank_pair: bool = True

    #: Whether the check's launches may span nodes with several ranks on
    #: each (the rank-series and spanning checks): a transport that cannot cross
    #: nodes is held to one node there, and the production pairs run there.
    spans_nodes: bool = False

    #: What the check reports: each performance variable's name, unit and
    #: direction, and the levels of its reference index (set by each family).
    spec: CheckSpec

    #: The suite's benchmark whose ``SENTINEL_`` output :meth:`read_output`
    #: parses (set by the checks that run one of the suite's own benchmarks,
    #: built by their ``build`` fixture).
    bench: str = ""

    #: Check variables passed to :attr:`bench` as ``--<name> <value>``
    #: (underscores as dashes, lists comma-separated).
    bench_options: tuple[str, ...] = ()

    #: The steps every launch's sanity goes through (:mod:`sentinel.rfm.sanity`).
    sanity_path = SanityPath()

    num_tasks = 2
    valid_systems = ["+mpi"]
    # A provider that livelocks (seen: Open MPI ofi-udp with 90 outstanding
    # 8 KB messages) must end as a timeout, never hang the nightly run.
    time_limit = "30m"

    @property
    def transport_info(self) -> Transport:
        """The catalogue entry of :attr:`transport` (a packed job: its family, no settings)."""
        return transport_of(self.transport)

    @property
    def held_to_one_node(self) -> bool:
        """Whether the transport cannot cross nodes where this check's launches would."""
        return self.spans_nodes and self.transport_info.intra_node

    def mixes_levels(self) -> bool:
        """Whether the launches put ranks both on one node and on several (a pair's use)."""
        return self.spans_nodes and self.mapping != "node"

    @property
    def transport_name(self) -> str:
        """The transport name without its family (a reference index key)."""
        return self.transport_info.name

    @run_after("init")
    def require_declaration(self) -> None:
        """The check's name must be one its declaration serves (references live there)."""
        if type(self).__name__ not in self.spec.checks:
            raise SentinelError(f"{type(self).__name__} is not among the checks its declaration "
                                f"serves ({', '.join(self.spec.checks)}): add it there")

    @run_after("init")
    def generate_valid_pairs(self) -> None:
        """Drop impossible pairs; run only where the environment offers the transport.

        A packed job runs in every environment of its family; a transport in
        it depends on it (its launch plan's :meth:`~sentinel.rfm.launch_plan.LaunchPlan.depend`).
        """
        plan = self.launch_plan
        why = plan.why_not_run(self)
        self.skip_if(bool(why), why)
        self.valid_prog_environs = [" ".join(filter(None, (*plan.features(self),
                                                           self.environ_features)))]
        self.num_tasks_per_node = tasks_per_node(self.mapping)
        plan.depend(self)

    @run_after("setup")
    def use_environment_launcher(self) -> None:
        """The environment's own launcher (``extras['launcher']``) instead of the partition's.

        An MPI that runs inside a Slurm allocation with its own launcher
        (Open MPI 5's ``mpirun``, MPICH 5's ``mpiexec``: ``slurm.OWN_LAUNCHER``)
        declares it on its environment; ReFrame's launcher is the partition's,
        and its documented way to change it is to replace the job's here.
        """
        name = self.current_environ.extras.get("launcher")
        if not name or name == self.job.launcher.registered_name:
            return
        try:
            self.job.launcher = getlauncher(name)()
        except ConfigError:
            raise SentinelError(f"environment {self.current_environ.name}: extras['launcher'] "
                                f"{name!r} is no launcher ReFrame has") from None

    @run_before("run")
    def apply_transport_and_mapping(self) -> None:
        """Export the transport's variables; add placement and site launcher options."""
        t = self.transport_info
        launcher = self.job.launcher.registered_name
        opts, env = launcher_settings(t.family, self.mapping, launcher,
                                      self.num_cpus_per_task or 1, self.num_tasks_per_node or 1)
        self.placement_options = list(opts)
        self.env_vars.update(self.transport_env(t))
        self.env_vars.update(env)
        opts += [arg for var in self.forwarded(t, self.transport_env(t)) for arg in ("-x", var)]
        opts += list(self.current_environ.extras.get("launcher_options", []))
        self.job.launcher.options += opts
        self.job.options += scheduler_options(self.job.scheduler.registered_name, self.mapping)

    @run_before("run")
    def set_bench_command(self) -> None:
        """The built benchmark with :attr:`bench_options`.

        Where the mapping puts ranks on one node with cores of their own
        (``core``, ``socket``), the benchmark gets ``--distinct-cpus``: it
        proves before measuring that no two ranks of a node share a CPU, and
        otherwise stops at once naming them, instead of busy-polling one core
        in turns into the time limit. Not for a check that asks for
        oversubscription (its ``oversubscribe`` variable).
        """
        if not self.bench:
            return
        self.executable = self.build.executable_path
        self.executable_opts = [arg for name in self.bench_options
                                for arg in (f"--{name.replace('_', '-')}",
                                            _option_value(getattr(self, name)))]
        oversubscribe = bool(getattr(self, "oversubscribe", False))
        if (self.num_tasks_per_node or 1) > 1 and not oversubscribe:
            self.executable_opts.append("--distinct-cpus")

    @run_before("run", always_last=True)
    def finish_job_script(self) -> None:
        """The job body, as the launch plan runs it (:meth:`job_body`)."""
        self.launch_plan.write_job(self, self.job_body)

    def job_body(self) -> None:
        """Run ``ldd`` on the benchmark in the job, with its run-time environment.

        Then the node's facts and the host probe, each on the node measured;
        the main launch is followed by :meth:`repeated_launches`.
        """
        on_node = self.launch_plan.on_node
        self.prerun_cmds[0:0] = [on_node(self, cmd) for cmd in (
            f"ldd {shlex.quote(self.executable)} > {LDD_FILE} 2>&1 || true",
            gather_command(PROVENANCE_FILE),
            *self.host_probe_command(),
        )]
        self.postrun_cmds += self.repeated_launches()
        after = [on_node(self, cmd) for cmd in self.host_probe_after_command()]
        if after:  # the launches' exit status stays the job's (a packed launch's), not the probe's
            self.postrun_cmds += [f"{LAUNCH_STATUS}=$?", *after, f"(exit ${LAUNCH_STATUS})"]

    def repeated_launches(self) -> list[str]:
        """Launches after the main one, in the job body; none where the benchmark repeats."""
        return []

    def transport_env(self, t: Transport) -> dict[str, str]:
        """What a launch over ``t`` exports: its selection and its probes."""
        return t.run_env()

    def forwarded(self, t: Transport, env: dict[str, str]) -> list[str]:
        """Variables of ``env`` the launcher must be told to pass to the ranks.

        Open MPI's mpirun forwards ``OMPI_*`` itself; the others it must
        be given by name. Other launchers pass the environment.
        """
        if t.family != "openmpi" or self.job.launcher.registered_name not in ("mpirun", "mpiexec"):
            return []
        return sorted(var for var in env if not var.startswith("OMPI_"))

    @sanity_function
    def validate(self):
        """The one sanity path; its first failure is the test's failure, with its cause.

        Each launch of the plan goes through it (an each-node job's: once per
        node); a packed job's verdict is that it launched its transports.
        """
        try:
            self.launch_plan.judge(self)
        except (OSError, SentinelError) as err:
            raise SanityError(str(err)) from None
        return True

    def read_output(self):
        """The benchmark's records, complete (a truncated output is an error naming it)."""
        stdout, text = self.stdout_text()
        out = parse(text, self.bench)
        require_complete(out, stdout)
        return out

    def analyse(self, out) -> Values:
        """The check's own performance values from what :meth:`read_output` returned."""
        raise NotImplementedError(f"{type(self).__name__} has no analysis")

    def launches(self) -> int:
        """Launches of :attr:`bench` in the job (a rank series has one per N)."""
        return 1

    def verify_job_end(self) -> str:
        """Fail naming the cause when the job was killed, crashed or could not start.

        Ranks that printed every result and then hung in MPI_Finalize are
        the one exception: the message is returned, and raised once the
        rest of the sanity path (transport, placement, values) has run, so
        that a finalize deadlock does not hide what else the run shows.
        """
        causes = job_end_causes(self.job_output_text(), self.bench, self.launches())
        causes = self.launch_plan.launch_causes(self) + causes
        if not causes:
            return ""
        hang = any(FINALIZE_HANG in c for c in causes)
        if self.transport_info.family == "mpich" and hang:
            causes.append(MPICH_FINALIZE_NOTE)
        message = job_end_message(causes, self.time_limit)
        if hang:
            return message
        raise SentinelError(message)

    def verify_linkage(self, missing_ok: bool = False) -> None:
        """Fail unless the binary ran with the environment's MPI library.

        With ``missing_ok``, a job that never ran ``ldd`` passes here (the
        job's end says why it did not).
        """
        path = os.path.join(self.files_dir(), LDD_FILE)
        if not os.path.exists(path):
            if missing_ok:
                return
            raise SentinelError(f"{path} is missing: the job did not run ldd on "
                                f"{self.executable}")
        with open(path, errors="replace") as fp:
            text = fp.read()
        family = self.transport_info.family
        abi = "mpi-abi" in self.current_environ.features
        self.mpi_linkage, issues = linkage_problems(family, text, self.executable, abi)
        if issues:
            raise SentinelError(f"MPI linkage of {self.executable}: " + "; ".join(issues))

    def verify_transport(self, out) -> None:
        """Fail unless the library's log proves the requested transport at every level.

        Where the ranks ran (:meth:`launch_placements`) says which levels
        the traffic had to cross: a pair's on-node and off-node paths are
        each proven, and a transport that cannot cross nodes fails if its
        ranks did.
        """
        sel = observe(self.job_output_text())
        self.transport_selected = sel.describe()
        levels = Levels.of(self.launch_placements(out))
        issues = problems(self.transport_info, sel, levels)
        if issues:
            raise SentinelError(
                f"transport {self.transport} not verified: " + "; ".join(issues)
            )
