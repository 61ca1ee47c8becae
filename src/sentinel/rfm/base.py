"""Small ReFrame building blocks, one concern each, shared by the checks.

* :class:`TransportMappingTest`: two ranks over one transport and one rank
  mapping; generates only valid (transport, mapping) pairs, applies the
  transport's environment and the mapping's launcher options, proves the
  transport from the library log, the placement from the affinity report
  and the MPI library the binary ran with from ``ldd`` in the job.
* :class:`PartitionReferences`: references per partition from
  ``config/references/<system>.yaml`` through ReFrame's ``$ref``.
"""

from __future__ import annotations

import os
import shlex

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import fixture, parameter, run_after, run_before, variable
from reframe.core.exceptions import SanityError

from sentinel.errors import SentinelError
from sentinel.mpi.linkage import linkage_problems
from sentinel.mpi.placement import (
    MAPPINGS,
    RankPlacement,
    Topology,
    launcher_settings,
    parse_cpu_list,
    placement_problems,
    tasks_per_node,
)
from sentinel.mpi.transports import CATALOGUE, Transport
from sentinel.mpi.verify import observe, problems
from sentinel.parsers.jobend import FINALIZE_HANG, job_end_causes
from sentinel.parsers.sentinel_output import BenchOutput, parse, require_complete
from sentinel.paths import references_dir
from sentinel.rfm.build import BenchBuild

#: Where the job writes ``ldd`` of the benchmark (in the stage directory).
LDD_FILE = "rfm_ldd.txt"

#: MPICH before 4.2 (ch4:ucx) can deadlock in MPI_Finalize: one rank waits in
#: a PMI barrier while the other still needs it to complete a UCX disconnect
#: (fixed by pmodels/mpich#6596). Measured here: 5 of 40 runs over ucx-tcp
#: with both cores busy, under srun and mpiexec alike.
MPICH_FINALIZE_NOTE = ("MPICH before 4.2 with ch4:ucx is known to deadlock there "
                       "(pmodels/mpich#6596; see the README's known issues)")


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


class TransportMappingTest(rfm.RunOnlyRegressionTest):
    """Two ranks over one transport and one rank mapping."""

    #: The transport, ``family/name`` from :data:`sentinel.mpi.CATALOGUE`.
    #: Only environments whose features include the family and the transport
    #: name (e.g. ``+openmpi +ucx-sm``) run it.
    #:
    #: :type: :class:`str`
    #: :values: every catalogue entry
    transport = parameter(sorted(CATALOGUE), fmt=lambda key: key.split("/", 1)[1],
                          loggable=True)

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

    #: More environment features a subclass requires (``+spack``) or
    #: excludes (``-spack``), in ReFrame's feature syntax.
    environ_features: str = ""

    num_tasks = 2
    valid_systems = ["+mpi"]
    # A provider that livelocks (seen: Open MPI ofi-udp with 90 outstanding
    # 8 KB messages) must end as a timeout, never hang the nightly run.
    time_limit = "30m"

    @property
    def transport_info(self) -> Transport:
        """The catalogue entry of :attr:`transport`."""
        return CATALOGUE[self.transport]

    @property
    def transport_name(self) -> str:
        """The transport name without its family (a reference index key)."""
        return self.transport_info.name

    @run_after("init")
    def generate_valid_pairs(self) -> None:
        """Drop impossible pairs; run only where the environment offers the transport."""
        t = self.transport_info
        self.skip_if(t.intra_node and self.mapping == "node",
                     f"{t.name} is shared memory: it cannot carry traffic between nodes")
        self.valid_prog_environs = [
            " ".join(filter(None, (f"+{t.family}", f"+{t.name}", self.environ_features)))]
        self.num_tasks_per_node = tasks_per_node(self.mapping)

    @run_after("setup")
    def skip_impossible_mapping(self) -> None:
        """Skip, with the reason, a mapping this partition cannot give."""
        part = self.current_partition
        cpus = part.processor.num_cpus
        if self.mapping in ("core", "socket") and cpus is not None:
            self.skip_if(cpus < 2, f"mapping {self.mapping} puts 2 ranks on one node; "
                                   f"partition {part.fullname} has {cpus} CPU per node")
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
                                      self.num_cpus_per_task or 1)
        self.env_vars.update(t.run_env())
        self.env_vars.update(env)
        if t.family == "openmpi" and launcher in ("mpirun", "mpiexec"):
            # mpirun forwards OMPI_* itself; other variables must be named.
            for var in sorted(t.run_env()):
                if not var.startswith("OMPI_"):
                    opts += ["-x", var]
        opts += list(self.current_environ.extras.get("launcher_options", []))
        self.job.launcher.options += opts

    @run_before("run", always_last=True)
    def record_linkage(self) -> None:
        """Run ``ldd`` on the benchmark in the job, with its run-time environment."""
        self.prerun_cmds.insert(
            0, f"ldd {shlex.quote(self.executable)} > {LDD_FILE} 2>&1 || true")

    @run_before("sanity")
    def verify_job_end(self) -> None:
        """Fail naming the cause when the job was killed, crashed or could not start."""
        if self.is_dry_run():
            return
        causes = job_end_causes(self._output_text())
        if causes:
            limit = f" (time limit {self.time_limit:g} s)" if self.time_limit else ""
            if self.transport_info.family == "mpich" and FINALIZE_HANG in causes[-1]:
                causes.append(MPICH_FINALIZE_NOTE)
            raise SanityError(f"the job ended abnormally{limit}: " + "; ".join(causes))

    @run_before("sanity")
    def verify_linkage(self) -> None:
        """Fail unless the binary ran with the environment's MPI library."""
        if self.is_dry_run():
            return
        path = os.path.join(self.stagedir, LDD_FILE)
        if not os.path.exists(path):
            raise SanityError(f"{path} is missing: the job did not run ldd on "
                              f"{self.executable}")
        with open(path, errors="replace") as fp:
            text = fp.read()
        family = self.transport_info.family
        self.mpi_linkage, issues = linkage_problems(family, text, self.executable)
        if issues:
            raise SanityError(f"MPI linkage of {self.executable}: " + "; ".join(issues))

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

    def _output_text(self) -> str:
        text = ""
        for name in (self.stdout.evaluate(), self.stderr.evaluate()):
            path = os.path.join(self.stagedir, name)
            if os.path.exists(path):
                with open(path, errors="replace") as fp:
                    text += fp.read()
        return text

    def verify_transport(self) -> None:
        """Fail unless the library's log proves the requested transport."""
        sel = observe(self._output_text())
        self.transport_selected = sel.describe()
        issues = problems(self.transport_info, sel)
        if issues:
            raise SanityError(
                f"transport {self.transport} not verified: " + "; ".join(issues)
            )

    def verify_world(self, out: BenchOutput) -> None:
        """Fail unless the benchmark saw the number of ranks that was launched.

        An MPI started with the wrong PMI runs independent singletons that
        each exit 0; only the world size shows it.
        """
        configs = out.of("CONFIG")
        ranks = configs[0].integer("ranks") if configs else 0
        if ranks != self.num_tasks:
            raise SanityError(f"the benchmark ran in a world of {ranks} rank(s), "
                              f"{self.num_tasks} were launched (MPI/PMI mismatch?)")

    def verify_placement(self, out: BenchOutput) -> None:
        """Fail unless ranks 0 and 1 ran where :attr:`mapping` puts them."""
        ranks = [RankPlacement(r.integer("rank"), r.text("host"),
                               parse_cpu_list(r.text("cpus")))
                 for r in out.of("AFFINITY")]
        proc = self.current_partition.processor
        topo = None
        if proc.topology and proc.topology.get("cores") and proc.topology.get("sockets"):
            topo = Topology.from_masks(proc.topology["cores"], proc.topology["sockets"])
        issues = placement_problems(self.mapping, ranks, topo)
        if issues:
            raise SanityError(f"placement {self.mapping} not honoured: " + "; ".join(issues))


class AffinityProbe(rfm.RegressionTestPlugin):
    """Placement proof for benchmarks that do not report it (OSU, IMB).

    Runs the suite's affinity probe with the same launcher, options and
    environment immediately before the benchmark; its SENTINEL_AFFINITY lines
    validate the mapping the options produce.
    """

    probe = fixture(BenchBuild, scope="environment", variables={"bench": "affinity"})

    @run_before("run", always_last=True)
    def launch_probe_first(self) -> None:
        """Prepend the probe launch, built from the final launcher command."""
        # ReFrame copies these into the job only inside run(), after this
        # hook; the launcher command (mpirun -np N) needs them now.
        self.job.num_tasks = self.num_tasks
        self.job.num_tasks_per_node = self.num_tasks_per_node
        launch = self.job.launcher.run_command(self.job)
        self.prerun_cmds.append(f"{launch} {self.probe.executable_path}")

    def probe_output(self) -> BenchOutput:
        """The probe's records from the job's stdout; truncated is an error."""
        path = os.path.join(self.stagedir, self.stdout.evaluate())
        with open(path, errors="replace") as fp:
            out = parse(fp.read(), "affinity")
        require_complete(out, path)
        return out


class PartitionReferences(rfm.RegressionTestPlugin):
    """References per partition from ``config/references/<system>.yaml``.

    The file is indexed by ``$partition``, ``$environ``, ``transport_name``
    and ``mapping``. A combination without an entry gets no reference: that
    is said in :attr:`reference_status` (in perflogs and run reports) and,
    with :attr:`require_partition_reference` set (the acceptance mode),
    fails the test.
    """

    #: Fail a combination that has no entry in the reference file. Unlike
    #: ReFrame's ``require_reference`` it does not demand a reference for
    #: every performance variable, only that the combination is covered.
    #:
    #: :type: :class:`bool`
    #: :default: ``False``
    require_partition_reference = variable(bool, value=False, loggable=True)

    #: The ``$index`` of this check's entries in the reference file.
    reference_index: tuple[str, ...] = ("$partition", "$environ", "transport_name", "mapping")

    #: Where this test's references came from, or why it has none.
    #:
    #: :type: :class:`str`
    reference_status = variable(str, value="", loggable=True)

    #: This test's place in the reference file: the ``$index`` names and this
    #: test's values for them, each ``/``-separated (``sentinel calibrate``
    #: writes references there).
    #:
    #: :type: :class:`str`
    reference_index_names = variable(str, value="", loggable=True)
    reference_index_values = variable(str, value="", loggable=True)

    @run_before("run")
    def load_references(self) -> None:
        """Point ReFrame at this system's reference file and record what was found."""
        self.reference_index_names = "/".join(self.reference_index)
        self.reference_index_values = "/".join(self._index_value(k)
                                               for k in self.reference_index)
        name = f"{self.current_system.name}.yaml"
        path = references_dir() / name
        if not path.exists():
            self._no_reference(f"{path} does not exist")
            return
        self.reference = {"$ref": str(path)}
        key = self.reference_index_values
        try:
            self.reference[self]
        except KeyError:
            self._no_reference(f"{path} has no entry for {key}")
        else:
            self.reference_status = f"{path}: {key}"

    def _index_value(self, key: str) -> str:
        if key == "$partition":
            return self.current_partition.fullname
        if key == "$environ":
            return self.current_environ.name
        return str(getattr(self, key))

    def _no_reference(self, why: str) -> None:
        self.reference_status = f"no reference: {why}"
        if self.require_partition_reference:
            raise SentinelError(f"a reference is required (acceptance): {why}")
