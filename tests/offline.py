"""Run the real check classes offline, as ReFrame's own unit tests do.

A test case is instantiated from its check file (only the variants asked
for, with their fixtures), set up on the fixed ``offline`` system of
``tests/config/offline.py``, its job script generated (ReFrame's dry-run
``run``: nothing is submitted), then the job's captured outputs from
``tests/data/checks/<case>`` are put in its stage directory and sanity and
performance are checked on them. No MPI, no scheduler, no compiler runs.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from reframe.core import runtime as rt
from reframe.core.decorators import TestRegistry
from reframe.core.exceptions import SkipTestError
from reframe.core.pipeline import CompileOnlyRegressionTest, RunOnlyRegressionTest
from reframe.frontend import dependencies
from reframe.frontend.executors import generate_testcases
from reframe.utility import import_module_from_file

from tests.conftest import DATA, ROOT

CONFIG = ROOT / "tests" / "config" / "offline.py"
CAPTURED = DATA / "checks"


def check_class(name: str) -> type:
    """The check class ``name`` from its file in ``checks/`` (no instance is made)."""
    for path in sorted((ROOT / "checks").glob("*.py")):
        module = import_module_from_file(str(path))
        if hasattr(module, name):
            return getattr(module, name)
    raise LookupError(f"no check class {name} in {ROOT / 'checks'}")


def check_classes() -> dict[str, type]:
    """Every check class of ``checks/`` by name, the Spack variants included.

    (Those register with ReFrame only where a ``+spack`` environment exists.)
    """
    from sentinel.rfm.base import TransportMappingTest

    modules = [import_module_from_file(str(path))
               for path in sorted((ROOT / "checks").glob("*.py"))]
    return {cls.__name__: cls for module in modules for cls in vars(module).values()
            if isinstance(cls, type) and cls.__module__ == module.__name__
            and issubclass(cls, TransportMappingTest)}


@dataclass
class Case:
    """One set-up test case and where its job would have written its outputs."""

    case: object

    @property
    def skipped(self) -> str | None:
        """Why setup skipped it, or None."""
        return getattr(self.check, "_sentinel_skipped", None)

    @property
    def check(self):
        """The test instance."""
        return self.case.check

    @property
    def stagedir(self) -> Path:
        """The test's stage directory."""
        return Path(self.check.stagedir)

    def script(self) -> str:
        """The job script ReFrame generated for it."""
        return (self.stagedir / self.check.job.script_filename).read_text()

    def fixture(self, name: str):
        """The set-up fixture the check holds as ``name``."""
        return getattr(self.check, name)

    def give_outputs(self, captured: str, edit=None) -> None:
        """Put the captured job outputs in the stage directory (``edit`` may change stdout)."""
        for path in (CAPTURED / captured).iterdir():
            shutil.copy(path, self.stagedir / path.name)
        if edit:
            out = self.stagedir / "rfm_job.out"
            out.write_text(edit(out.read_text()))

    def sanity(self) -> None:
        """ReFrame's sanity phase (with its hooks) on what is in the stage directory."""
        self.check._rfm_dry_run = False
        self.check.sanity()

    def performance(self) -> dict[str, list]:
        """ReFrame's performance phase (with its hooks).

        Returns what it assessed by variable name: ``[value, reference,
        lower, upper, unit, result]``.
        """
        self.check.performance()
        return {key.rsplit(":", 1)[1]: entry for key, entry in self.check.perfvalues.items()}


class Offline:
    """The offline runtime: instantiate, set up and dry-run chosen variants."""

    def __init__(self, prefix: Path) -> None:
        self.prefix = prefix

    def cases(self, wanted: list[tuple[str, dict]], variables: dict | None = None,
              environ: str | None = None, partition: str = "cpu") -> list[Case]:
        """Set up the variants ``(check, params)`` and their fixtures; return the checks'.

        ``variables`` are set on the instances after ``init`` (what ``-S``
        does before it, for decisions taken at ``init``, is not offline's).

        Every case is taken through ReFrame's setup and dry-run ``run`` in
        dependency order, so fixtures and dependencies resolve as in a run.
        """
        registry = TestRegistry()
        for name, params in wanted:
            cls = check_class(name)
            for num in cls.get_variant_nums(**params):
                registry.add(cls, variant_num=num)
        tests = registry.instantiate_all()
        for test in tests:  # on the instances: -S would change the classes for good
            for name, value in (variables or {}).items():
                if hasattr(test, name):
                    setattr(test, name, value)
        graph, _ = dependencies.build_deps(generate_testcases(tests, prepare=True))
        ordered = dependencies.toposort(graph)
        wanted_cases = [c for c in ordered if not c.check.is_fixture()
                        and c.partition.name == partition
                        and (environ is None or c.environ.name == environ)]
        needed = _with_dependencies(wanted_cases)
        out = []
        for c in (c for c in ordered if c in needed):
            c.check._rfm_dry_run = True
            try:
                c.check.setup(c.partition, c.environ)
                if not isinstance(c.check, RunOnlyRegressionTest):
                    c.check.compile()  # dry run: the build script, no build
                if not isinstance(c.check, CompileOnlyRegressionTest) and \
                        not c.check.is_fixture():
                    c.check.run()
            except SkipTestError as skip:
                c.check._sentinel_skipped = str(skip)
            if c in wanted_cases:
                out.append(Case(c))
        return out


def _with_dependencies(cases: list) -> set:
    """The cases and everything they depend on, transitively."""
    out, todo = set(), list(cases)
    while todo:
        case = todo.pop()
        if case not in out:
            out.add(case)
            todo.extend(case.deps)
    return out


def offline_runtime(prefix: Path):
    """A context manager: ReFrame's runtime on the offline system, stage dirs under ``prefix``."""
    os.environ["SENTINEL_OFFLINE_PREFIX"] = str(prefix)
    return rt.temp_runtime(str(CONFIG), "offline")
