"""What a result depends on, recorded with its test case (:attr:`Provenance.provenance`)."""

from __future__ import annotations

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import run_before, variable
from reframe.core.exceptions import ReframeError

from sentinel.mpi.linkage import resolved
from sentinel.parsers.provenance import (
    FACTS,
    library_version,
    logged_versions,
    not_found,
    parse_facts,
)
from sentinel.rfm.build import BuildFixture

#: Where the job writes ``ldd`` of the benchmark (in the stage directory).
LDD_FILE = "rfm_ldd.txt"

#: Where the job writes the facts of its node a result depends on (kernel,
#: CPU model, UCX and libfabric versions: :mod:`sentinel.parsers.provenance`).
PROVENANCE_FILE = "rfm_provenance.txt"


class Provenance(rfm.RegressionTestPlugin):
    """Records, before sanity, what the test case's result depends on."""

    #: What it reads of the test besides ReFrame's attributes and its own
    #: (``tests/unit/test_plugin_needs.py`` holds it to the code).
    plugin_needs = ("job_output_text", "launch_plan", "measures", "stage_text", "transport_info")

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
    #: :default: ``{}`` (set before sanity; a packed job has none of its own)
    provenance = variable(typ.Dict[str, str], value={}, loggable=True)

    @run_before("sanity")
    def record_provenance(self) -> None:
        """:attr:`provenance`, before sanity: a failed test case has it too.

        Never fails the test: what cannot be read is ``not found (<why>)``.
        """
        if not self.measures() or self.is_dry_run():
            return
        with self.launch_plan.first_launch(self):
            self._record_provenance()

    def _record_provenance(self) -> None:
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
        """The nodes of the job that ran the launch (a packed member's: the packed job's)."""
        try:
            job = self.launch_plan.launch_job(self)
            return ",".join(sorted(set(job.nodelist or [])))
        except (ReframeError, AttributeError):
            return ""
