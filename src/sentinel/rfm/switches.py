"""Where a latency curve steps (eager -> rendezvous), recorded with the test case."""

from __future__ import annotations

import reframe as rfm
from reframe.core.builtins import variable


class ProtocolSwitches(rfm.RegressionTestPlugin):
    """Where a latency curve steps (eager -> rendezvous), recorded beside the values."""

    #: Sizes (bytes) where the latency curve steps, comma-separated.
    #:
    #: :type: :class:`str`
    protocol_switches = variable(str, value="", loggable=True)

    def record_switches(self, sizes: list[int]) -> None:
        """Record the switch sizes the analysis found."""
        self.protocol_switches = ",".join(map(str, sizes))
