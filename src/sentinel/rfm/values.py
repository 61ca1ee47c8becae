"""What a run measured, held for the references and the report (:class:`MeasuredValues`)."""

from __future__ import annotations

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import run_before, variable

from sentinel.analysis.host import SLOWED, slowed
from sentinel.analysis.variables import Values
from sentinel.errors import SentinelError


class MeasuredValues(rfm.RegressionTestPlugin):
    """The values sanity derived, the ones it could not resolve, and their intervals."""

    #: What it reads of the test besides ReFrame's attributes and its own
    #: (``tests/unit/test_plugin_needs.py`` holds it to the code).
    plugin_needs = ("reference_entry", "stdout_text")

    #: Values the benchmark produced that cannot be measurements (a negative
    #: time, a bandwidth beyond any link), each with why: not reported as
    #: performance variables, never compared or calibrated.
    #:
    #: :type: :class:`Dict[str, str]`
    #: :default: ``{}`` (set by sanity)
    unresolved = variable(typ.Dict[str, str], value={}, loggable=True)

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

    #: The run measures a subset of the sizes its references were calibrated
    #: at (the vet and health modes: seconds a launch): the bands of what it
    #: measures apply, and a referenced variable it does not measure is not
    #: missing. The nightly and acceptance require every one.
    #:
    #: :type: :class:`bool`
    #: :default: ``False``
    subset_of_references = variable(bool, value=False, loggable=True)

    def keep_values(self, values: Values) -> None:
        """Hold ``values`` as plain data (ReFrame encodes them to JSON)."""
        self.values = dict(values)
        self.unresolved = dict(getattr(values, "unresolved", {}))
        self.intervals = {name: list(lo_hi)
                          for name, lo_hi in getattr(values, "intervals", {}).items()}
        self.interval_coverage = dict(getattr(values, "coverage", {}))

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

    def required_references(self) -> list[str]:
        """The referenced variables the run must measure: every one of its entry.

        With :attr:`subset_of_references`, only those it measured (or could
        not resolve): their bands apply, the others are not missing.
        """
        if self.subset_of_references:
            return [n for n in self.referenced_variables
                    if n in self.values or n in self.unresolved]
        return list(self.referenced_variables)

    def require_variables(self) -> None:
        """Fail naming each expected or referenced variable the run did not measure."""
        referenced = set(self.required_references())
        wanted = dict.fromkeys([*self.expected_variables(), *self.required_references()])
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

    @run_before("performance")
    def set_perf_variables(self) -> None:
        """Turn the values sanity derived (``self.values``) into performance variables."""
        if self.is_dry_run():
            return
        self.perf_variables = {
            name: sn.make_performance_function(sn.defer(value), unit)
            for name, (value, unit) in self.values.items()
        }
