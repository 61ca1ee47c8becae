"""The base of every check: one transport, one rank mapping, one sanity path.

:class:`TransportMappingTest` generates only valid (transport, mapping)
pairs, applies the transport's environment and the mapping's launcher
options, and owns the sanity sequence every check goes through
(:meth:`TransportMappingTest.validate`): how the job ended, the MPI library
the binary ran with (``ldd`` in the job), the output read and complete, the
world size, the transport from the library's log, the placement from the
affinity report, then the check's own analysis. A check supplies only what
is its own (:meth:`read_output`, :meth:`analyse`, and where it differs,
:meth:`placement_records`). Every :class:`~sentinel.errors.SentinelError` on
the way becomes one clear ``SanityError``, here and nowhere else.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import time
import zlib

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
import reframe.utility.udeps as udeps
from reframe.core import runtime
from reframe.core.builtins import parameter, run_after, run_before, sanity_function, variable
from reframe.core.exceptions import ReframeError, ReframeFatalError, SanityError

from sentinel.analysis.host import HOST_FILE, SLOWED, host_values, slowed
from sentinel.analysis.variables import CheckSpec, Values
from sentinel.errors import SentinelError
from sentinel.mpi.linkage import linkage_problems, resolved
from sentinel.mpi.placement import (
    MAPPINGS,
    Levels,
    RankPlacement,
    Topology,
    launcher_settings,
    placement_problems,
    scheduler_options,
    tasks_per_node,
)
from sentinel.mpi.transports import CATALOGUE, Transport, declared, resolve
from sentinel.mpi.verify import observe, problems
from sentinel.parsers.jobend import FINALIZE_HANG, job_end_causes, job_end_message
from sentinel.parsers.provenance import (
    FACTS,
    gather_command,
    library_version,
    logged_versions,
    not_found,
    parse_facts,
)
from sentinel.parsers.sentinel_output import BenchOutput, parse, require_complete
from sentinel.rfm import deferral, offered, reframe_fixes, series
from sentinel.rfm.build import BenchBuild, BuildFixture, RecordsSkip
from sentinel.rfm.cmdline import option_values, setvar_values
from sentinel.rfm.threads import ranks_of
from sentinel.rfm.variants import variant_name

#: Where the job writes ``ldd`` of the benchmark (in the stage directory).
LDD_FILE = "rfm_ldd.txt"

#: Where the job writes the facts of its node a result depends on (kernel,
#: CPU model, UCX and libfabric versions: :mod:`sentinel.parsers.provenance`).
PROVENANCE_FILE = "rfm_provenance.txt"

#: MPICH before 4.2 (ch4:ucx) can deadlock in MPI_Finalize: one rank waits in
#: a PMI barrier while the other still needs it to complete a UCX disconnect
#: (fixed by pmodels/mpich#6596). Measured here: 5 of 40 runs over ucx-tcp
#: with both cores busy, under srun and mpiexec alike.
MPICH_FINALIZE_NOTE = ("MPICH before 4.2 with ch4:ucx is known to deadlock there "
                       "(pmodels/mpich#6596; see docs/slurm.md, known issue)")


def _option_value(value: object) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return str(value)


def partition_nodes(partition) -> int:
    """Nodes of a partition: 1 for the local scheduler, else ``extras['num_nodes']``."""
    if partition.scheduler.registered_name == "local":
        return 1
    try:
        return int(partition.extras["num_nodes"])
    except KeyError:
        raise SentinelError(
            f"partition {partition.fullname}: extras['num_nodes'] is not set; "
            "the 'node' mapping needs to know how many nodes the partition has"
        ) from None


reframe_fixes.install()


def offered_transports() -> list[str]:
    """Catalogue entries an environment of the selected system offers, and series jobs.

    ReFrame instantiates every variant of a check before it matches
    environments, about 20 ms each: generating the 39 catalogue transports
    where a system offers 15 cost a site listing most of its time. Before
    ReFrame has a runtime (the configuration checking ``-S`` values), the
    whole catalogue, with the transports pinned to an interface that an
    environment of the configuration declares (:mod:`sentinel.rfm.offered`).
    Each family offered also gets its series job
    (``openmpi/all``, :mod:`sentinel.rfm.series`).
    """
    features = _environ_features()
    if features is None:  # before a runtime: the catalogue and what the configuration pins
        keys = sorted(set(CATALOGUE) | {t.key for f in offered.declared_features()
                                        for t in declared(f)})
    else:
        keys = sorted({t.key for f in features for t in declared(f)})
    if not _packing_asked():
        return keys
    families = sorted({resolve(key).family for key in keys})
    return keys + [series.series_key(family) for family in families]


def _environ_features() -> list[set[str]] | None:
    """The features of each environment of the selected system; None before a runtime."""
    try:
        system = runtime.runtime().system
    except ReframeFatalError:
        return None
    return [set(env.features) for part in system.partitions for env in part.environs]


def offers_feature(feature: str) -> bool:
    """Whether an environment of the selected system has ``feature`` (True before a runtime)."""
    features = _environ_features()
    return features is None or any(feature in f for f in features)


def _packing_asked() -> bool:
    """Whether a ``-S`` of the session (its mode's or the command line's) packs transports.

    Only then are series jobs generated: ReFrame instantiates every variant
    of a check, about 2.5 ms each, and a series job that would only skip
    itself is a sixth of a site's listing. Before ReFrame has a runtime,
    they are (the configuration checking ``-S`` values sees every variant).
    """
    try:
        site = runtime.runtime().site_config
    except ReframeFatalError:
        return True
    modes = option_values(sys.argv, None, "--mode")
    options = site.get(f"modes/@{modes[-1]}/options") if modes else []
    values = setvar_values(sys.argv, list(options or []), "pack_transports")
    return any(v.strip().lower() in ("true", "yes", "y", "1") for v in values)


def _transport_label(key: str) -> str:
    """``ob1-tcp`` for a transport, ``openmpi-all`` for a series job."""
    family, name = key.split("/", 1)
    return f"{family}-{name}" if series.is_series_key(key) else name


class TransportMappingTest(RecordsSkip, rfm.RunOnlyRegressionTest):
    """Two ranks over one transport and one rank mapping."""

    #: The transport, ``family/name`` from :data:`sentinel.mpi.CATALOGUE`,
    #: among those the selected system's environments offer. Only
    #: environments whose features include the family and the transport name
    #: (e.g. ``+openmpi +ucx-sm``) run it.
    #:
    #: :type: :class:`str`
    #: :values: the catalogue entries the system offers
    transport = parameter(offered_transports(), fmt=_transport_label, loggable=True)

    #: Transports (``family/name``) to run; empty: every transport offered.
    #:
    #: :type: :class:`List[str]`
    #: :default: ``[]``
    transports = variable(typ.List[str], value=[])

    #: Run the transports of each environment one after another in one job
    #: (the series job, ``%transport=<family>-all``) instead of one job each;
    #: every transport keeps its own test case, verdict, references and
    #: failure message (:mod:`sentinel.rfm.series`). Set by the nightly and
    #: acceptance modes.
    #:
    #: :type: :class:`bool`
    #: :default: ``False``
    pack_transports = variable(bool, value=False, loggable=True)

    #: What each launch of a series job ended with (``ob1-tcp:0 ucx-tcp:124``).
    #:
    #: :type: :class:`str`
    #: :default: ``''`` (set by a series job's sanity)
    series_launches = variable(str, value="", loggable=True)

    #: Rank placement: ``core``, ``socket`` or ``node``.
    #:
    #: :type: :class:`str`
    mapping = parameter(list(MAPPINGS), loggable=True)

    #: The MPI library the binary ran with, as ``ldd`` in the job resolved it.
    #:
    #: :type: :class:`str`
    #: :default: ``''`` (set before sanity)
    mpi_linkage = variable(str, value="", loggable=True)

    #: What the result depends on, one short name each: ``mpi`` (the
    #: library's version string), ``mpi_library`` (the file ``ldd`` resolved
    #: it to in the job), ``ucx`` and ``libfabric`` (the versions the
    #: libraries logged they loaded, else those of ``ucx_info``/``fi_info`` on
    #: the node's ``PATH``), ``compiler`` (of the build), ``spack_spec`` (a
    #: Spack build: the spec and what Spack installed), ``transport_env`` (the
    #: variables that select the transport), ``kernel``, ``nodes``, ``cpu``. A
    #: value that could not be read is ``not found (<why>)``. Lands in the run
    #: report and the results database with the test case
    #: (:mod:`sentinel.results.provenance` compares two sessions').
    #:
    #: :type: :class:`Dict[str, str]`
    #: :default: ``{}`` (set before sanity; a series job has none of its own)
    provenance = variable(typ.Dict[str, str], value={}, loggable=True)

    #: What the library's log showed about its transport selection.
    #:
    #: :type: :class:`str`
    #: :default: ``''`` (set by sanity)
    transport_selected = variable(str, value="", loggable=True)

    #: Values the benchmark produced that cannot be measurements (a negative
    #: time, a bandwidth beyond any link), each with why: not reported as
    #: performance variables, never compared or calibrated.
    #:
    #: :type: :class:`Dict[str, str]`
    #: :default: ``{}`` (set by sanity)
    unresolved = variable(typ.Dict[str, str], value={}, loggable=True)

    #: Why the launches hold fewer nodes or ranks than the partition does,
    #: when they do (a transport that cannot cross nodes, a node's memory).
    #:
    #: :type: :class:`str`
    #: :default: ``''``
    span_note = variable(str, value="", loggable=True)

    #: The interval of each performance value that has one, ``[low, high]``
    #: in the value's unit (about 95 %: a fit's confidence interval, the
    #: order-statistics interval of a median over the samples): stored in
    #: the run report and the results database, shown by the report.
    #:
    #: :type: :class:`Dict[str, List[float]]`
    #: :default: ``{}`` (set by sanity)
    intervals = variable(typ.Dict[str, typ.List[float]], value={}, loggable=True)

    #: The coverage of each interval of :attr:`intervals` that is not 95 %
    #: (the range of a few repetitions: ``1 - 2^(1-n)``, 75 % for 3).
    #:
    #: :type: :class:`Dict[str, float]`
    #: :default: ``{}`` (set by sanity)
    interval_coverage = variable(typ.Dict[str, float], value={}, loggable=True)

    #: The variables the reference entry of this test holds (set by
    #: :class:`~sentinel.rfm.references.PartitionReferences`): each must be
    #: measured, or the test fails.
    #:
    #: :type: :class:`List[str]`
    referenced_variables = variable(typ.List[str], value=[])

    #: Nights over which a rotating check (:attr:`rotates`) shares out its
    #: variants: each variant runs on one night in ``rotation`` (the nightly
    #: mode sets 7, so every variant runs within a week); 1 runs them all.
    #:
    #: :type: :class:`int`
    #: :default: ``1``
    rotation = variable(int, value=1, loggable=True)

    #: Tonight's number, which picks the variants of the rotation (default:
    #: days since 1970-01-01, UTC).
    #:
    #: :type: :class:`int`
    night = variable(int, value=int(time.time() // 86400))

    #: Whether the nightly budget may leave this test case for a later night
    #: (``sentinel plan --mode nightly --defer FILE``); default: the rotating
    #: checks may (:attr:`rotates`), the others run every night.
    #:
    #: :type: :class:`bool` or ``None``
    #: :default: ``None`` (:attr:`rotates`)
    may_defer = variable(bool, type(None), value=None, loggable=True)

    #: The test cases deferred tonight, as ``sentinel plan --defer`` wrote
    #: them (:mod:`sentinel.rfm.deferral`); each skips, saying so.
    #:
    #: :type: :class:`str`
    #: :default: ``''`` (none deferred)
    deferred_file = variable(str, value="")

    #: Whether this check rotates in the nightly mode (the expensive sweeps:
    #: threads, Jacobi series, hybrid modes, OSU and IMB) or runs every night
    #: (point-to-point and matching on every transport and mapping).
    rotates: bool = False

    #: More environment features a subclass requires (``+spack``) or
    #: excludes (``-spack``), in ReFrame's feature syntax.
    environ_features: str = ""

    #: Whether the check runs two ranks (``core``: on two cores of one
    #: socket; ``socket``: one on each of two sockets; ``node``: one on each
    #: of two nodes), not a node's worth or a series.
    rank_pair: bool = True

    #: Whether the check's launches may span nodes with several ranks on
    #: each (the series and spanning checks): a transport that cannot cross
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

    num_tasks = 2
    valid_systems = ["+mpi"]
    # A provider that livelocks (seen: Open MPI ofi-udp with 90 outstanding
    # 8 KB messages) must end as a timeout, never hang the nightly run.
    time_limit = "30m"

    @property
    def transport_info(self) -> Transport:
        """The catalogue entry of :attr:`transport` (a series job: its family, no settings)."""
        if self.is_series:
            return Transport(self.transport.split("/", 1)[0], series.SERIES, {}, {},
                             series.SERIES, series.SERIES)
        return resolve(self.transport)

    @property
    def is_series(self) -> bool:
        """Whether this variant is a series job (``transport=<family>-all``)."""
        return series.is_series_key(self.transport)

    @property
    def in_series(self) -> bool:
        """Whether this transport's launch belongs to a series job.

        Not a transport that cannot cross nodes in a check whose launches
        span them: it is held to one node (:meth:`held_to_one_node`), so its
        launches are not the series job's; it runs a job of its own.
        """
        return self.pack_transports and not self.is_series and not self.held_to_one_node

    @property
    def held_to_one_node(self) -> bool:
        """Whether the transport cannot cross nodes where this check's launches would."""
        return self.spans_nodes and not self.is_series and self.transport_info.intra_node

    def mixes_levels(self) -> bool:
        """Whether the launches put ranks both on one node and on several (a pair's use)."""
        return self.spans_nodes and self.mapping != "node"

    @property
    def from_series(self) -> bool:
        """Whether this run takes its launch from the series job (a retry runs its own)."""
        return self.in_series and self.local

    @property
    def series_name(self) -> str:
        """The unique name of the series job of this variant's family and other parameters."""
        params = dict(type(self).get_variant_info(self.variant_num)["params"])
        params["transport"] = series.series_key(self.transport_info.family)
        return variant_name(type(self), type(self).__name__, **params)

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
    def take_turn(self) -> None:
        """In a rotation, run only on this variant's night (a stable hash of its name)."""
        if not self.rotates or self.rotation <= 1:
            return
        # A series job and its transports take the same night.
        name = self.series_name if self.pack_transports else self.unique_name
        turn = zlib.crc32(name.encode()) % self.rotation
        tonight = self.night % self.rotation
        self.skip_if(turn != tonight, f"rotation of {self.rotation} nights: runs on night "
                                      f"{turn}, tonight is night {tonight}")

    @run_after("init")
    def default_deferrable(self) -> None:
        """Unless set, a test case is deferrable when its check rotates."""
        if self.may_defer is None:
            self.may_defer = self.rotates

    @run_after("setup")
    def wait_if_deferred(self) -> None:
        """Skip a test case that tonight's budget left for a later night."""
        if not self.deferred_file:
            return
        where = self.current_partition.fullname
        self.skip_if(deferral.deferred(self.deferred_file, where, self.display_name,
                                       self.current_environ.name),
                     f"deferred to a later night by the nightly budget of {where} "
                     f"({self.deferred_file}; sentinel plan --defer)")

    @run_after("init")
    def generate_valid_pairs(self) -> None:
        """Drop impossible pairs; run only where the environment offers the transport.

        A series job runs in every environment of its family; a transport in
        a series depends on its series job (same partition and environment).
        """
        t = self.transport_info
        if self.is_series:
            self.skip_if(not self.pack_transports,
                         "a series job runs only with pack_transports")
            features: tuple[str, ...] = (f"+{t.family}",)
        else:
            self.skip_if(bool(self.transports) and self.transport not in self.transports,
                         f"{self.transport} is not in {type(self).__name__}.transports")
            self.skip_if(t.intra_node and self.mapping == "node",
                         f"{t.name} is shared memory: it cannot carry traffic between nodes")
            self.skip_if(t.is_pair and bool(t.halves) and not self.mixes_levels(),
                         f"{t.name} differs from its halves only where ranks share a node and "
                         f"span nodes at once; {type(self).__name__} with mapping "
                         f"{self.mapping} runs one level: {' and '.join(t.halves)} measure it")
            features = (f"+{t.family}", *(f"+{f}" for f in t.features))
        self.valid_prog_environs = [" ".join(filter(None, (*features, self.environ_features)))]
        self.num_tasks_per_node = tasks_per_node(self.mapping)
        if self.in_series:
            self.depends_on(self.series_name, udeps.by_case)

    @run_before("setup")
    def choose_job(self) -> None:
        """A transport of a series runs locally, on its launch in the series job.

        A retry (``--max-retries``) runs its own job.
        """
        self.local = self.in_series and runtime.runtime().current_run == 0

    @run_after("setup")
    def skip_empty_series(self) -> None:
        """Skip a series job with no transport to run (its transports' tests all skip)."""
        if self.is_series:
            selected = f" among {type(self).__name__}.transports" if self.transports else ""
            self.skip_if(not self.series_transports(),
                         f"environment {self.current_environ.name} offers no "
                         f"{self.transport_info.family} transport for mapping "
                         f"{self.mapping}{selected}")

    @run_after("setup")
    def skip_impossible_mapping(self) -> None:
        """Skip, with the reason, a mapping this partition cannot give."""
        part = self.current_partition
        cpus = part.processor.num_cpus
        if self.mapping in ("core", "socket") and cpus is not None:
            self.skip_if(cpus < 2, f"mapping {self.mapping} puts 2 ranks on one node; "
                                   f"partition {part.fullname} has {cpus} CPU per node")
        per_socket = part.processor.num_cores_per_socket
        if self.rank_pair and self.mapping == "core" and per_socket is not None:
            self.skip_if(per_socket < 2, f"mapping core puts 2 ranks on two cores of one "
                                         f"socket; partition {part.fullname} has "
                                         f"{per_socket} core per socket")
        if self.mapping == "socket":
            sockets = part.processor.num_sockets
            if sockets is None:
                raise SentinelError(
                    f"partition {part.fullname}: processor topology unknown; set "
                    "'processor' in its config (or run reframe --detect-host-topology)"
                )
            self.skip_if(sockets < 2, f"mapping socket needs 2 sockets; partition "
                                      f"{part.fullname} has {sockets}")
        elif self.mapping == "node":
            nodes = partition_nodes(part)
            self.skip_if(nodes < 2, f"mapping node needs 2 nodes; partition "
                                    f"{part.fullname} has {nodes}")

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
        if t.family == "openmpi" and launcher in ("mpirun", "mpiexec"):
            # mpirun forwards OMPI_* itself; other variables must be named.
            for var in sorted(self.transport_env(t)):
                if not var.startswith("OMPI_"):
                    opts += ["-x", var]
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
        """Run ``ldd`` on the benchmark in the job, with its run-time environment.

        The main launch is followed by :meth:`repeated_launches`. A series
        job runs the whole body once per transport; a transport in a series
        takes its launch's files from the series job instead.
        """
        if self.from_series:
            self.take_series_launch()
            return
        self.prerun_cmds[0:0] = [
            f"ldd {shlex.quote(self.executable)} > {LDD_FILE} 2>&1 || true",
            gather_command(PROVENANCE_FILE),
            *self.host_probe_command(),
        ]
        self.postrun_cmds += self.repeated_launches()
        if self.is_series:
            self.wrap_series()

    def repeated_launches(self) -> list[str]:
        """Launches after the main one, in the job body; none where the benchmark repeats."""
        return []

    def host_probe(self) -> str | None:
        """The host probe built with this test's benchmark (or placement probe), if any."""
        for name in ("build", "probe"):
            fixture = getattr(self, name, None)
            if isinstance(fixture, BenchBuild):
                return fixture.host_probe_path
        return None

    def host_probe_command(self) -> list[str]:
        """The node measured before the launch (:mod:`sentinel.analysis.host`); never fails it."""
        probe = self.host_probe()
        if probe is None:
            return [f"echo 'no host probe: {type(self).__name__} builds none' > {HOST_FILE}"]
        return [f"{shlex.quote(probe)} > {HOST_FILE} 2>&1 || true"]

    def transport_env(self, t: Transport) -> dict[str, str]:
        """What a launch over ``t`` exports: its selection and its probes."""
        return t.run_env()

    def series_transports(self) -> list[Transport]:
        """The transports a series job runs: its family's, offered by this environment."""
        return [t for t in declared(set(self.current_environ.features))
                if t.family == self.transport_info.family
                and not (t.intra_node and (self.mapping == "node" or self.spans_nodes))
                and not (t.is_pair and t.halves and not self.mixes_levels())
                and (not self.transports or t.key in self.transports)]

    def wrap_series(self) -> None:
        """The job body once per transport, each under this check's time limit."""
        launcher = self.job.launcher.registered_name
        launches = []
        for t in self.series_transports():
            env = self.transport_env(t)
            forward = sorted(v for v in env if not v.startswith("OMPI_"))
            if t.family == "openmpi" and launcher in ("mpirun", "mpiexec") and forward:
                # mpirun forwards OMPI_* itself; the others by name (its -x, as a variable).
                env["OMPI_MCA_mca_base_env_list"] = ";".join(forward)
            launches.append(series.Launch(t.name, env))
        per_launch = float(self.time_limit)
        self.prerun_cmds.insert(0, series.OPEN_BODY)
        self.postrun_cmds += series.run_lines(launches, per_launch)
        self.time_limit = per_launch * len(launches) + series.KILL_AFTER_S * len(launches)

    def take_series_launch(self) -> None:
        """Make this launch's output, errors, ``ldd`` and node facts in the series job its own."""
        self.prerun_cmds, self.postrun_cmds = [], []
        self.executable = "sh"
        self.executable_opts = ["-c", shlex.quote(
            f"cat {series.OUT} 2>/dev/null; cat {series.ERR} >&2 2>/dev/null; true")]
        if self.is_dry_run():
            return
        status = self.series_launch()
        for name in (series.OUT, series.ERR, LDD_FILE, PROVENANCE_FILE, HOST_FILE):
            path = os.path.join(status.where, name)
            if os.path.exists(path):
                shutil.copy(path, self.stagedir)

    def series_launch(self) -> series.LaunchStatus:
        """What the series job left of this transport's launch."""
        return series.launch_status(self.getdep(self.series_name).stagedir, self.transport_name)

    def series_causes(self) -> list[str]:
        """Why the series job has no complete launch of this transport ([] if it has)."""
        job = self.getdep(self.series_name)
        return series.series_causes(self.series_launch(), job.display_name,
                                    f"{float(self.time_limit):g} s",
                                    job_end_causes(job.job_output_text()))

    @run_before("sanity")
    def record_provenance(self) -> None:
        """:attr:`provenance`, before sanity: a failed test case has it too.

        Never fails the test: what cannot be read is ``not found (<why>)``.
        """
        if self.is_series or self.is_dry_run():
            return
        facts = self.stage_text(PROVENANCE_FILE)
        node = (parse_facts(facts) if facts is not None else
                {name: not_found(f"the job wrote no {PROVENANCE_FILE}") for name in FACTS})
        logged = logged_versions(self.job_output_text())
        env = {**self.current_environ.env_vars, **self.env_vars}
        self.provenance = {
            "mpi": library_version(self.stage_text(self.stdout.evaluate()) or ""),
            "mpi_library": self.mpi_library(),
            "ucx": logged.get("ucx", node["ucx"]),
            "libfabric": logged.get("libfabric", node["libfabric"]),
            **self.build_provenance(),
            "transport_env": self.transport_info.selection(env),
            "kernel": node["kernel"],
            "nodes": self.job_nodes() or node["node"],
            "cpu": node["cpu"],
        }

    def mpi_library(self) -> str:
        """The MPI library the binary resolved to in the job (``ldd``), or why not known."""
        ldd = self.stage_text(LDD_FILE)
        if ldd is None:
            return not_found(f"the job wrote no {LDD_FILE}")
        return resolved(ldd) or not_found(f"ldd lists no MPI library: {ldd.strip()[:120]}")

    def stage_text(self, name: str) -> str | None:
        """A file of the stage directory as text; None when it cannot be read."""
        try:
            with open(os.path.join(self.stagedir, name), errors="replace") as fp:
                return fp.read()
        except OSError:
            return None

    def program_build(self) -> BuildFixture | None:
        """The fixture that built the program this test runs; None for a prebuilt one."""
        for name in ("build", "suite_build"):
            fixture = getattr(self, name, None)
            if isinstance(fixture, BuildFixture):
                return fixture
        return None

    def build_provenance(self) -> dict[str, str]:
        """``compiler``, and for a Spack build ``spack_spec``, of the program's build."""
        build = self.program_build()
        if build is None:
            return {"compiler": not_found(f"a prebuilt program ({self.executable}): "
                                          "its build is not recorded")}
        out = {"compiler": build.compiler or not_found(f"{build.name} recorded none")}
        if build.by_spack:
            installed = getattr(build, "spack_installed", "")
            out["spack_spec"] = build.spack_spec + (f" ({installed})" if installed else "")
        return out

    def job_nodes(self) -> str:
        """The nodes of the job that ran the launch (a series member's: the series job's)."""
        try:
            job = self.getdep(self.series_name).job if self.from_series else self.job
            return ",".join(sorted(set(job.nodelist or [])))
        except (ReframeError, AttributeError):
            return ""

    @sanity_function
    def validate(self):
        """The one sanity path; its first failure is the test's failure, with its cause."""
        try:
            if self.is_series:
                self.verify_series()
                return True
            # A binary of another MPI is the cause of what its job then shows
            # (singleton ranks, a failed start): said first.
            self.verify_linkage(missing_ok=True)
            self.verify_one_node()
            hang = self.verify_job_end()
            self.verify_linkage()
            out = self.read_output()
            self.verify_world(out)
            self.verify_transport(out)
            self.verify_placement(out)
            values = self.analyse(out)
            values.merge(host_values(self.spec, self.stage_text(HOST_FILE), HOST_FILE))
            self.values = dict(values)  # plain: ReFrame encodes it to JSON
            self.unresolved = dict(getattr(values, "unresolved", {}))
            self.intervals = {name: list(lo_hi)
                              for name, lo_hi in getattr(values, "intervals", {}).items()}
            self.interval_coverage = dict(getattr(values, "coverage", {}))
            self.require_host_then_variables()
            if hang:
                raise SentinelError(hang)
        except (OSError, SentinelError) as err:
            raise SanityError(str(err)) from None
        return True

    def verify_series(self) -> None:
        """A series job passes when it launched its transports; each one's verdict is its own.

        Its transports' tests depend on it: failing it for one failed launch
        would skip the others. A job that launched nothing fails, with why.
        """
        self.values = {}
        statuses = {t.name: series.launch_status(self.stagedir, t.name)
                    for t in self.series_transports()}
        self.series_launches = " ".join(
            f"{name}:{'not launched' if not s.started else s.exit_status}"
            for name, s in statuses.items())
        if not any(s.started for s in statuses.values()):
            causes = job_end_causes(self.job_output_text())
            raise SentinelError("the series job launched none of its transports"
                                + (f": {job_end_message(causes, self.time_limit)}"
                                   if causes else ""))

    def read_output(self):
        """The benchmark's records, complete (a truncated output is an error naming it)."""
        stdout, text = self.stdout_text()
        out = parse(text, self.bench)
        require_complete(out, stdout)
        return out

    def analyse(self, out) -> Values:
        """The check's own performance values from what :meth:`read_output` returned."""
        raise NotImplementedError(f"{type(self).__name__} has no analysis")

    def expected_variables(self) -> list[str]:
        """Every variable a complete run with this check's parameters reports."""
        return []

    def require_host_then_variables(self) -> None:
        """:meth:`require_variables`; a failure on a node whose probe is out of band says so first.

        A value the slowed node left unresolved (a fit whose interval reaches
        zero) fails sanity before any reference is compared: the message then
        leads with the probe's figures, so that the node, not the MPI, is named.
        """
        try:
            self.require_variables()
        except SentinelError as err:
            host = slowed(self.values, self.reference_entry)
            if host:
                raise SentinelError(f"{SLOWED}: {'; '.join(host)}; and so: {err}") from None
            raise

    def require_variables(self) -> None:
        """Fail naming each expected or referenced variable the run did not measure."""
        referenced = set(self.referenced_variables)
        wanted = dict.fromkeys([*self.expected_variables(), *self.referenced_variables])
        missing = [n for n in wanted if n not in self.values and n not in self.unresolved]
        unresolved = [f"{n} ({self.unresolved[n]})" for n in wanted
                      if n in referenced and n in self.unresolved]
        problems = []
        if missing:
            shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more"
                                              if len(missing) > 10 else "")
            problems.append(f"{len(missing)} variable(s) its parameters or references call "
                            f"for are missing from the results: {shown}")
        if unresolved:
            problems.append("referenced variable(s) unresolved: " + "; ".join(unresolved))
        if problems:
            raise SentinelError("; ".join(problems) + f" (output: {self.stdout_text()[0]})")

    def launches(self) -> int:
        """Launches of :attr:`bench` in the job (a series has one per N)."""
        return 1

    def placement_records(self, out) -> BenchOutput:
        """The records with the world size and each rank's affinity (the output itself)."""
        return out

    def verify_job_end(self) -> str:
        """Fail naming the cause when the job was killed, crashed or could not start.

        Ranks that printed every result and then hung in MPI_Finalize are
        the one exception: the message is returned, and raised once the
        rest of the sanity path (transport, placement, values) has run, so
        that a finalize deadlock does not hide what else the run shows.
        """
        causes = job_end_causes(self.job_output_text(), self.bench, self.launches())
        if self.from_series:
            causes = self.series_causes() + causes
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
        path = os.path.join(self.stagedir, LDD_FILE)
        if not os.path.exists(path):
            if missing_ok:
                return
            raise SentinelError(f"{path} is missing: the job did not run ldd on "
                                f"{self.executable}")
        with open(path, errors="replace") as fp:
            text = fp.read()
        family = self.transport_info.family
        self.mpi_linkage, issues = linkage_problems(family, text, self.executable)
        if issues:
            raise SentinelError(f"MPI linkage of {self.executable}: " + "; ".join(issues))

    def stdout_text(self) -> tuple[str, str]:
        """The job's stdout: its path (for messages) and its text."""
        path = os.path.join(self.stagedir, self.stdout.evaluate())
        with open(path, errors="replace") as fp:
            return path, fp.read()

    @run_before("performance")
    def set_perf_variables(self) -> None:
        """Turn the values sanity derived (``self.values``) into performance variables."""
        if self.is_dry_run():
            return
        self.perf_variables = {
            name: sn.make_performance_function(sn.defer(value), unit)
            for name, (value, unit) in self.values.items()
        }

    def job_output_text(self) -> str:
        """The job's stdout and stderr (scheduler messages, a series job's own)."""
        text = ""
        for name in (self.stdout.evaluate(), self.stderr.evaluate()):
            path = os.path.join(self.stagedir, name)
            if os.path.exists(path):
                with open(path, errors="replace") as fp:
                    text += fp.read()
        return text

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

    def launch_placements(self, out) -> list[list[RankPlacement]]:
        """Where the ranks of each launch ran (the affinity lines of each)."""
        launches = out.values() if isinstance(out, dict) else [out]
        return [ranks_of(self.placement_records(o)) for o in launches]

    def verify_one_node(self) -> None:
        """Fail first, naming it, when a transport that cannot cross nodes was made to.

        A launcher wrapper or option that spreads its ranks makes the library
        abort (unreachable peers); the job's end would only say that a task
        died. Proven by the hosts the ranks reported, or where none could
        report, by the nodes of a job whose launch failed.
        """
        t = self.transport_info
        if not t.intra_node or self.is_series:
            return
        try:
            _, text = self.stdout_text()
        except OSError:
            return
        hosts = sorted(set(AFFINITY_HOST.findall(text)))
        # a launch that died before its ranks could report: the launcher's lines name them
        launched = sorted({a or b for a, b in LAUNCHED_ON.findall(self.job_output_text())})
        nodes = self.job_nodes().split(",") if self.job_nodes() else []
        failed = bool(job_end_causes(self.job_output_text(), self.bench, self.launches()))
        where = (f"its ranks ran on {', '.join(hosts)}" if len(hosts) > 1 else
                 f"its launch failed with ranks on {', '.join(launched)}" if len(launched) > 1
                 else f"the job ran on nodes {', '.join(nodes)} and its launch failed"
                 if len(nodes) > 1 and failed else "")
        if where:
            raise SentinelError(f"{t.name} carries traffic within a node only (shared "
                                f"memory), but {where}: a launcher option or wrapper spread "
                                "the ranks over nodes")

    def verify_world(self, out) -> None:
        """Fail unless the benchmark saw the number of ranks that was launched.

        An MPI started with the wrong PMI runs independent singletons that
        each exit 0; only the world size shows it.
        """
        configs = self.placement_records(out).of("CONFIG")
        ranks = configs[0].integer("ranks") if configs else 0
        if ranks != self.num_tasks:
            raise SentinelError(f"the benchmark ran in a world of {ranks} rank(s), "
                                f"{self.num_tasks} were launched (MPI/PMI mismatch?)")

    def verify_placement(self, out) -> None:
        """Fail unless ranks 0 and 1 ran where :attr:`mapping` puts them."""
        ranks = ranks_of(self.placement_records(out))
        proc = self.current_partition.processor
        topo = None
        if proc.topology and proc.topology.get("cores") and proc.topology.get("sockets"):
            topo = Topology.from_masks(proc.topology["cores"], proc.topology["sockets"])
        issues = placement_problems(self.mapping, ranks, topo)
        if issues:
            raise SentinelError(f"placement {self.mapping} not honoured: " + "; ".join(issues))


#: A rank's host in its affinity line, read from a job's stdout as it is.
AFFINITY_HOST = re.compile(r"^SENTINEL_AFFINITY rank=\d+ host=(\S+)", re.MULTILINE)

#: The host of a rank as the launcher reports its end (srun) or the MPI its
#: peers (Open MPI's unreachable-peer message).
LAUNCHED_ON = re.compile(r"^srun: error: (\S+): tasks? \d|is on host: (\S+)", re.MULTILINE)


class ProtocolSwitches(rfm.RegressionTestPlugin):
    """Where a latency curve steps (eager -> rendezvous), recorded beside the values."""

    #: Sizes (bytes) where the latency curve steps, comma-separated.
    #:
    #: :type: :class:`str`
    protocol_switches = variable(str, value="", loggable=True)

    def record_switches(self, sizes: list[int]) -> None:
        """Record the switch sizes the analysis found."""
        self.protocol_switches = ",".join(map(str, sizes))
