"""The node measured around the launches (:class:`HostProbe`): its commands and its figures.

Every job of the suite's own benchmarks runs the host probe
(``src/bench/host``) on its node before its launches, and again after them:
the figures before are the test case's ``host_roundtrip`` and
``host_copy_bw``; those after (:attr:`HostProbe.host_after`) say whether the
node was slowed by the end, since a node can change its state during a
launch (this VM's cache-line round trip flips between about 55 and 320 ns
for seconds at a time). A retry (ReFrame's
``--max-retries``: a failure measured again before it is called) asks the
probe to wait, up to :data:`QUIET_WAIT_S`, until the node is within the
bands of its own nights: a failure that a passing disturbance of the node
made (another process, a virtual machine's slow spell) is measured again
on a quiet node, and one that the MPI made fails again.
"""

from __future__ import annotations

import shlex

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core import runtime
from reframe.core.builtins import variable

from sentinel.analysis.baseline import worse_edge
from sentinel.analysis.host import HOST_AFTER_FILE, HOST_FILE, host_values, waited
from sentinel.analysis.variables import HIGHER, LOWER, CheckSpec, Values
from sentinel.rfm.build import BenchBuild

#: The longest a retry's probe waits for the node to be quiet (seconds), and
#: the part of the test's time limit it may take at most.
QUIET_WAIT_S = 60
QUIET_SHARE = 0.25
#: The job body's variable that keeps the launches' exit status across the probe after them.
LAUNCH_STATUS = "sentinel_launch_status"


class HostProbe(rfm.RegressionTestPlugin):
    """The host probe's command in the job, and its figures after it."""

    #: How long the probe waited for the node to be quiet before a retry's
    #: launches, and whether it was at the end ('' when it did not wait).
    #:
    #: :type: :class:`str`
    #: :default: ``''``
    host_waited = variable(str, value="", loggable=True)

    #: The probe's figures after the launches, name -> value (in the unit of
    #: the variable of that name): the node's state at their end.
    #:
    #: :type: :class:`Dict[str, float]`
    #: :default: ``{}``
    host_after = variable(typ.Dict[str, float], value={}, loggable=True)

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
        return [shlex.join([probe, *self.quiet_options()]) + f" > {HOST_FILE} 2>&1 || true"]

    def host_probe_after_command(self) -> list[str]:
        """The node measured again after the launches (never a wait, never a failure)."""
        probe = self.host_probe()
        if probe is None:
            return []
        return [f"{shlex.quote(probe)} > {HOST_AFTER_FILE} 2>&1 || true"]

    def quiet_options(self) -> list[str]:
        """A retry's probe waits for the node to be within its bands; a first run does not."""
        if runtime.runtime().current_run == 0:
            return []
        entry = getattr(self, "reference_entry", {}) or {}
        options = []
        trip = _edge(entry.get("host_roundtrip"), upper=True)
        copy = _edge(entry.get("host_copy_bw"), upper=False)
        if trip is not None:
            options += ["--quiet-roundtrip-ns", str(max(1, round(trip)))]
        if copy is not None:
            options += ["--quiet-copy-mbs", str(max(1, round(copy * 1000)))]
        if not options:
            return []
        wait = min(QUIET_WAIT_S, int(QUIET_SHARE * float(self.time_limit or QUIET_WAIT_S)))
        return [*options, "--quiet-wait-s", str(max(1, wait))] if wait >= 1 else []

    def host_figures(self, spec: CheckSpec, text: str | None, after: str | None) -> Values:
        """The probe's figures before a launch (``text``), and how long it waited.

        Those of the probe after the launches (``after``) are kept apart
        (:attr:`host_after`): they attribute, they are not the test case's.
        """
        self.host_waited = waited(text or "")
        self.host_after = {name: value for name, (value, _) in
                           host_values(spec, after, HOST_AFTER_FILE).items()}
        return host_values(spec, text, HOST_FILE)


def _edge(band: list[str] | None, upper: bool) -> float | None:
    """The worse edge of a host band (``[reference, lower, upper, unit]`` as text)."""
    found = worse_edge(band, LOWER if upper else HIGHER) if band else None
    return found[1] if found else None
