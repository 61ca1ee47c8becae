"""A check of one-sided communication: its transport's one-sided path selected and proven."""

from __future__ import annotations

import reframe as rfm
from reframe.core.builtins import variable

from sentinel.errors import SentinelError
from sentinel.mpi import onesided
from sentinel.mpi.placement import Levels
from sentinel.mpi.transports import Transport


class OneSidedPaths(rfm.RegressionTestPlugin):
    """Each launch exports its transport's one-sided selection and probes, and is held to it.

    After the two-sided transport is proven, the library's log must show
    the one-sided path written down for the transport
    (:func:`sentinel.mpi.onesided.expected`): a run that used another
    component, or an emulation where the native path is expected, fails
    naming what it used. The check lists this plugin before
    :class:`~sentinel.rfm.base.TransportMappingTest` among its bases.
    """

    #: What it reads of the test besides ReFrame's attributes and its own
    #: (``tests/unit/test_plugin_needs.py`` holds it to the code).
    plugin_needs = ("transport", "transport_info", "job_output_text", "launch_placements")

    #: What the library's log showed of the one-sided path.
    #:
    #: :type: :class:`str`
    #: :default: ``''`` (set by sanity)
    one_sided_selected = variable(str, value="", loggable=True)

    def transport_env(self, t: Transport) -> dict[str, str]:
        """The transport's selection and probes, then its one-sided path's."""
        return {**super().transport_env(t), **onesided.expected(t).run_env()}

    def verify_transport(self, out) -> None:
        """The two-sided transport, then the one-sided path from the same log."""
        super().verify_transport(out)
        sel = onesided.observe(self.job_output_text())
        self.one_sided_selected = sel.describe()
        path = onesided.expected(self.transport_info)
        issues = onesided.problems(path, sel, Levels.of(self.launch_placements(out)))
        if issues:
            raise SentinelError(f"one-sided path of {self.transport} not verified: "
                                + "; ".join(issues))
